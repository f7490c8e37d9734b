"""The parameters of the model-judged control-flow primitives, shared by the engine's
functions and the analyzer.

``openprogram.repeat_until``, ``validate_and_retry``, ``conditional`` and ``judge``
(:mod:`openprogram.agentic_programming.control_flow`) call their callables at once, in
their caller, and judge one condition: a string is a model call, a callable is called in
Python. The analyzer reads a call's arguments by these parameter names (OP206, OP207)
without importing the engine; ``tests/engine/test_primitive_params.py`` compares this
table with the signatures of the public functions, so renaming or reordering a
parameter there fails until it is changed here too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Primitive:
    """One primitive's parameters as a call site passes them."""

    #: The leading positional parameters, in order, through the last one the analyzer
    #: reads (later ones, such as ``max_rounds``, are plain numbers).
    params: tuple[str, ...]
    #: The condition: a string is judged by the model, a callable in Python.
    judged: str
    #: Parameters that take a value the primitive passes on, not a callable it runs.
    values: frozenset[str] = frozenset()

    @property
    def called(self) -> tuple[str, ...]:
        """The parameters whose callables the primitive runs at once (a callable
        condition included)."""
        return tuple(p for p in self.params if p not in self.values)


PRIMITIVES: dict[str, Primitive] = {
    "repeat_until": Primitive(("action", "condition"), judged="condition"),
    "validate_and_retry": Primitive(("action", "check", "retry"), judged="check"),
    "conditional": Primitive(
        ("condition", "context", "if_true", "if_false"),
        judged="condition",
        values=frozenset({"context"}),
    ),
    # public in openprogram.agentic_programming.control_flow (not re-exported at the top)
    "judge": Primitive(("condition", "subject"), judged="condition", values=frozenset({"subject"})),
}
