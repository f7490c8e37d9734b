"""``python -m openprogram.cli ...`` runs the ``openprogram`` command."""

import sys

from openprogram.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
