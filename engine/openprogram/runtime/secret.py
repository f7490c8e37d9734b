"""A wrapper that keeps an API key out of reprs, logs and error messages."""

from __future__ import annotations


class Secret:
    """An API key. ``repr``/``str`` never show it; call :meth:`reveal` to use it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The raw key, for building request headers only."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Secret:
        return self  # immutable; copying must not go through pickling

    def __reduce__(self) -> str:  # never pickled with the key inside
        raise TypeError("Secret values cannot be pickled")


def redact(text: str, *secrets: Secret | None) -> str:
    """``text`` with every occurrence of the given secrets replaced by ``***``."""
    for secret in secrets:
        if secret:
            raw = secret.reveal()
            if len(raw) >= 4 and raw in text:
                text = text.replace(raw, "***")
    return text
