-- The headless Neovim side of tests/neovim.rs: `nvim --headless -u this-file`. It loads the
-- config in editors/neovim/ the way a user does (runtimepath; Neovim sources its plugin/ file),
-- opens a SKILL.md, waits for the diagnostics, asks for a hover on the `name` line, runs
-- :SkillmemRecall, writes what it saw as JSON and quits. The Rust driver asserts on the JSON.
--
-- Inputs (environment): SKILLMEM_NVIM_CONFIG (editors/neovim), SKILLMEM_NVIM_FILE (the SKILL.md),
-- SKILLMEM_NVIM_OUT (the JSON to write), SKILLMEM_NVIM_TIMEOUT_MS (bound of every wait).
vim.opt.runtimepath:append(os.getenv('SKILLMEM_NVIM_CONFIG'))
vim.lsp.set_log_level('debug')

local timeout = tonumber(os.getenv('SKILLMEM_NVIM_TIMEOUT_MS') or '20000')
local out = { nvim = tostring(vim.version().major .. '.' .. vim.version().minor .. '.' .. vim.version().patch) }

local function finish()
  out.log_path = vim.lsp.get_log_path()
  local f = assert(io.open(os.getenv('SKILLMEM_NVIM_OUT'), 'w'))
  f:write(vim.fn.json_encode(out))
  f:close()
  -- Stop the clients and wait (bounded) for them to exit, so the server's shutdown is part of the run.
  vim.lsp.stop_client(vim.lsp.get_active_clients())
  vim.wait(timeout, function()
    return #vim.lsp.get_active_clients() == 0
  end, 20)
  vim.cmd('qall!')
end

local function run()
  vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('SKILLMEM_NVIM_FILE')))
  local buf = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[buf].filetype

  -- The diagnostics of a broken file arrive after didOpen.
  out.diagnostics_arrived = vim.wait(timeout, function()
    return #vim.diagnostic.get(buf) > 0
  end, 20)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out.diagnostics, {
      code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
      lnum = d.lnum,
      col = d.col,
      end_col = d.end_col,
      severity = d.severity,
      source = d.source,
      message = d.message,
    })
  end
  table.sort(out.diagnostics, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and tostring(a.code) < tostring(b.code))
  end)

  local clients = {}
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
    table.insert(clients, { name = c.name, root_dir = c.config.root_dir })
  end
  out.clients = clients

  -- Hover on the `name` line.
  local name_line
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:match('^name:') then
      name_line = i - 1
      break
    end
  end
  local params = { textDocument = vim.lsp.util.make_text_document_params(buf), position = { line = name_line, character = 2 } }
  local responses, err = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, timeout)
  out.hover_error = err
  for _, r in pairs(responses or {}) do
    if r.err then
      out.hover_error = r.err.message
    elseif r.result then
      local c = r.result.contents
      out.hover_kind = c.kind
      out.hover = c.value or c
    end
  end

  -- :SkillmemRecall opens a scratch window with the skill's notes.
  local before = vim.api.nvim_get_current_win()
  vim.cmd('SkillmemRecall')
  out.recall_opened = vim.wait(timeout, function()
    return vim.api.nvim_get_current_win() ~= before
  end, 20)
  out.recall = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  nested = true, -- so that :edit fires BufRead and FileType
  callback = function()
    local ok, e = pcall(run)
    if not ok then
      out.error = tostring(e)
    end
    finish()
  end,
})
