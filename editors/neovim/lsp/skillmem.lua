-- skillmem as a language server for SKILL.md files (Neovim 0.11+: vim.lsp.config / vim.lsp.enable).
--
-- Neovim finds it as lsp/skillmem.lua on the runtimepath; ../plugin/skillmem.lua gives SKILL.md
-- files the `skillmd` filetype and calls vim.lsp.enable('skillmem'). See README.md.
---@type vim.lsp.Config
return {
  cmd = { 'skillmem', 'serve', '--stdio' },
  filetypes = { 'skillmd' },
  -- One server per skill tree: the nearest folder with a skills checkout, else the file's folder.
  root_markers = { '.git', 'skillmem.toml' },
  -- Extra environment, e.g. a separate data directory:
  -- cmd_env = { SKILLMEM_HOME = vim.fn.expand('~/.local/share/skillmem') },
}
