"""The OpenProgram language server (pygls)."""
