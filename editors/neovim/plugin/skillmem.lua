-- SKILL.md files (any case of the extension) get the `skillmd` filetype, which renders as
-- Markdown, and skillmem is enabled for them (lsp/skillmem.lua holds the config): by
-- vim.lsp.enable on Neovim 0.11+, by hand on 0.7-0.10 (below). tests/neovim.rs runs it on 0.7.
vim.filetype.add({
  pattern = {
    -- Lua patterns are case-sensitive: the extension is matched in any case.
    ['.*/SKILL%.[mM][dD]'] = 'skillmd',
  },
  filename = { ['SKILL.md'] = 'skillmd' },
})

if vim.fn.has('nvim-0.8') == 0 then
  -- Neovim 0.7 detects filetypes with filetype.vim unless g:do_filetype_lua is set, so the
  -- vim.filetype.add above is not consulted there; `set` (not `setf`) overrides its markdown.
  vim.api.nvim_create_autocmd({ 'BufNewFile', 'BufRead' }, {
    pattern = { 'SKILL.[mM][dD]' },
    command = 'set filetype=skillmd',
  })
end

if vim.treesitter.language and vim.treesitter.language.register then
  vim.treesitter.language.register('markdown', 'skillmd')
end
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'skillmd',
  callback = function(args)
    vim.bo[args.buf].syntax = 'markdown'
  end,
})

if vim.lsp.enable then
  vim.lsp.enable('skillmem')
else
  -- Neovim 0.7-0.10 have no vim.lsp.config / vim.lsp.enable: start the same config
  -- (lsp/skillmem.lua: cmd, filetypes, root_markers, cmd_env...) by hand, one client per root.
  local path = vim.api.nvim_get_runtime_file('lsp/skillmem.lua', false)[1]
  local config = path and dofile(path)
  -- The folder of the first of `markers` found upward from `dir` (earlier markers win, as in
  -- Neovim 0.11), else `dir` itself.
  local function root_of(dir, markers)
    for _, marker in ipairs(markers or {}) do
      local d = dir
      while true do
        if vim.loop.fs_stat(d .. '/' .. marker) then
          return d
        end
        local parent = vim.fn.fnamemodify(d, ':h')
        if parent == d then
          break
        end
        d = parent
      end
    end
    return dir
  end
  local by_root = {}
  if config then
    vim.api.nvim_create_autocmd('FileType', {
      pattern = config.filetypes,
      callback = function(args)
        local file = vim.api.nvim_buf_get_name(args.buf)
        if file == '' then
          return
        end
        local root = root_of(vim.fn.fnamemodify(file, ':p:h'), config.root_markers)
        local id = by_root[root]
        local client = id and vim.lsp.get_client_by_id(id)
        if not client or client.is_stopped() then
          local start = vim.tbl_extend('force', {}, config, { name = 'skillmem', root_dir = root })
          start.filetypes, start.root_markers = nil, nil
          id = vim.lsp.start_client(start)
          by_root[root] = id
        end
        if id then
          vim.lsp.buf_attach_client(args.buf, id)
        end
      end,
    })
  end
end

-- :SkillmemRecall [skill] [intent...] shows what agents learned about a skill (the skill
-- defaults to the folder of the current SKILL.md).
vim.api.nvim_create_user_command('SkillmemRecall', function(opts)
  local client
  -- vim.lsp.get_clients is 0.10+; 0.7's get_active_clients takes no filter.
  for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)({ name = 'skillmem', bufnr = 0 })) do
    if c.name == 'skillmem' and vim.lsp.buf_is_attached(0, c.id) then
      client = c
      break
    end
  end
  if not client then
    vim.notify('skillmem is not running for this buffer', vim.log.levels.WARN)
    return
  end
  local skill = opts.fargs[1] or vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':h:t')
  local intent = #opts.fargs > 1 and table.concat(opts.fargs, ' ', 2) or nil
  local function on_result(err, result)
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
  end
  local params = { skill = skill, intent = intent }
  if vim.fn.has('nvim-0.11') == 1 then
    client:request('skillmem/recall', params, on_result)
  else
    client.request('skillmem/recall', params, on_result) -- before 0.11 a plain function field
  end
end, { nargs = '*' })
