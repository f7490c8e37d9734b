"""OP401: PROGRAM_ENTRIES computed at import time."""


def main() -> str:
    return "ok"


PROGRAM_ENTRIES = [name for name in ("main",)]  # OP401
