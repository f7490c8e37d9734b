"""The ``openprogram`` command line (SPEC §2.12). Entry point: :func:`openprogram.cli.main.main`."""
