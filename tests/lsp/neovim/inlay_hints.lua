-- Headless Neovim (0.7+) as an LSP client of openprogram-lsp: open a Program, ask for its
-- inlay hints with a plain textDocument/inlayHint request, write the answer as JSON.
-- Environment: OP_PYTHON (interpreter with openprogram_lsp), OP_WS (workspace folder),
-- OP_FILE (the Program), OP_OUT (where the JSON goes).
local ws, file, out = vim.env.OP_WS, vim.env.OP_FILE, vim.env.OP_OUT

local function finish(result)
  local fh = assert(io.open(out, 'w'))
  fh:write(vim.fn.json_encode(result))
  fh:close()
  vim.cmd('qa!')
end

vim.cmd('edit ' .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = 'openprogram',
  cmd = { vim.env.OP_PYTHON, '-m', 'openprogram_lsp' },
  root_dir = ws,
  workspace_folders = { { uri = vim.uri_from_fname(ws), name = 'ws' } },
})
if client_id == nil then
  finish({ error = 'the language server did not start' })
  return
end
vim.lsp.buf_attach_client(bufnr, client_id)
local client = vim.lsp.get_client_by_id(client_id)
local ready = vim.wait(30000, function()
  return client.initialized == true or client.server_capabilities ~= nil
end, 50)
if not ready then
  finish({ error = 'no initialize answer' })
  return
end
local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = {
    start = { line = 0, character = 0 },
    ['end'] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 },
  },
}
local answer, err = client.request_sync('textDocument/inlayHint', params, 30000, bufnr)
local provider = client.server_capabilities and client.server_capabilities.inlayHintProvider
client.stop()
finish({
  hints = answer and answer.result or vim.NIL,
  error = err or (answer and answer.err) or vim.NIL,
  provider = provider and true or false,
})
