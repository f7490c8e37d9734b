"""OP203: module global that is rebound or mutated in place, used by a resumable function or its helpers."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP203(FamilyRule):
    """Why: State kept in a module global is lost when a run resumes in a new process. Pass it
    through step inputs and results instead. A module the Program imports is changed only
    by rebinding its name (``global os``) or assigning one of its attributes (``json.dumps
    = f``): calling its functions (``os.remove(p)``) or changing what it holds
    (``sys.path.insert(0, d)``, ``os.environ.pop("X")``) changes process state, as writing
    a file does, not a global of the Program. So does changing what a name imported from a
    module holds (``from os import environ``, then ``environ.pop("X")``; ``from sys import
    path``, then ``path.append(d)``): only rebinding that name (``global environ``) is
    reported. The data a first-party module of the project binds (``CACHE = []`` in
    ``store_mod.py`` next to the Program) is a global like the Program's own: changing it
    in place (``store_mod.CACHE.append(x)``, or ``CACHE.append(x)`` after ``from store_mod
    import CACHE``) is reported where a reached function uses it, naming the module.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP203`` suppresses it.
    """

    code = "OP203"
    name = "mutable-global"
    summary = "module global that is rebound or mutated in place, used by a resumable function or its helpers"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            import os
            import sys

            from openprogram import step
            from openprogram.durable import resumable

            sys.path.insert(0, os.path.dirname(__file__))  # calls, not a change of `sys`


            def cleanup(path: str) -> bool:
                if os.path.exists(path):
                    os.remove(path)  # a function of the module `os`, not a list's remove
                    return True
                return False


            @resumable
            def tidy(path: str) -> bool:
                return step("cleanup", cleanup, path)
            """
        ),
        Valid(
            """
            LIMIT = 3

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("write", write, topic, LIMIT)


            def write(topic: str, n: int) -> str:
                return topic * n
            """
        ),
        Valid(
            """
            from os import environ
            from sys import path

            from openprogram import step


            def prepare(folder: str) -> str:
                environ.pop("PROXY", None)  # as os.environ.pop: process state
                path.append(folder)  # as sys.path.append
                return folder


            def main(folder: str) -> str:
                return step("prepare", prepare, folder)


            main.__agent_options__ = {"resumable": True}
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step

            SEEN: list[str] = []


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    SEEN.append(topic)
                    return step("write", str.upper, topic)
            """,
            range=(10, 9, 10, 13),
            message="uses module global 'SEEN'",
        ),
        Invalid(
            """
            from os import environ

            from openprogram import step


            def prepare(folder: str) -> str:
                global environ
                environ = {"HOME": folder}
                return folder


            def main(folder: str) -> str:
                return step("prepare", prepare, folder)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(8, 5, 8, 12),
            message="step dependency 'prepare' uses module global 'environ'",
        ),
    ]
