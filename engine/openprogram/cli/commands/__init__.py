"""One module per ``openprogram`` subcommand (see :mod:`openprogram.cli.main`)."""
