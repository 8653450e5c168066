-- SKILL.md files (any case of the extension) get the `skillmd` filetype, which renders as
-- Markdown, and skillmem is enabled for them (Neovim 0.11+; lsp/skillmem.lua holds the config).
vim.filetype.add({
  pattern = {
    -- Lua patterns are case-sensitive: the extension is matched in any case.
    ['.*/SKILL%.[mM][dD]'] = 'skillmd',
  },
  filename = { ['SKILL.md'] = 'skillmd' },
})

vim.treesitter.language.register('markdown', 'skillmd')
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'skillmd',
  callback = function(args)
    vim.bo[args.buf].syntax = 'markdown'
  end,
})

if vim.lsp.enable then
  vim.lsp.enable('skillmem')
end

-- :SkillmemRecall [skill] [intent...] shows what agents learned about a skill (the skill
-- defaults to the folder of the current SKILL.md).
vim.api.nvim_create_user_command('SkillmemRecall', function(opts)
  local client = vim.lsp.get_clients({ name = 'skillmem', bufnr = 0 })[1]
  if not client then
    vim.notify('skillmem is not running for this buffer', vim.log.levels.WARN)
    return
  end
  local skill = opts.fargs[1] or vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':h:t')
  local intent = #opts.fargs > 1 and table.concat(opts.fargs, ' ', 2) or nil
  client:request('skillmem/recall', { skill = skill, intent = intent }, function(err, result)
    if err then
      vim.notify('skillmem/recall: ' .. err.message, vim.log.levels.ERROR)
      return
    end
    local lines = { ('# Notes of `%s` (%d, mode %s)'):format(skill, #result.notes, result.mode) }
    for _, n in ipairs(result.notes) do
      table.insert(lines, '')
      table.insert(lines, ('## #%d (%s, %s%s, %d hits)'):format(n.id, n.kind, n.scope, n.pinned and ', pinned' or '', n.hits))
      vim.list_extend(lines, vim.split(n.delta, '\n'))
    end
    vim.cmd('botright new')
    vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
    vim.bo.buftype, vim.bo.bufhidden, vim.bo.filetype = 'nofile', 'wipe', 'markdown'
  end)
end, { nargs = '*' })
