"""Static analysis of OpenProgram Programs (libcst)."""
