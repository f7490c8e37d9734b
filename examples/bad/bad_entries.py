"""PROGRAM_ENTRIES mistakes: OP401-OP405."""


def main() -> str:
    return "ok"


def _hidden() -> str:
    return "secret"


def numbers():  # a generator cannot be an entry
    yield 1


main.__agent_options__ = ["label"]  # OP405: must be a dict

PROGRAM_ENTRIES = ["main", "mian", "_hidden", "numbers", main]  # OP402, OP403 x2, OP404
OTHER_ENTRIES = PROGRAM_ENTRIES
