"""OP307: Python types (or other non-JSON values) in a ``response_format`` dict."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP307(FamilyRule):
    """Why: ``response_format`` is a JSON schema (or an OpenAI ``response_format`` dict, or
    a pydantic model class). The decision schema shorthand ``{"age": int}`` belongs to
    ``choices=`` menus; in ``response_format`` the call refuses it before any request, with
    this code and message.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP307`` suppresses it.
    """

    code = "OP307"
    name = "response-format-not-json-schema"
    summary = "Python types or other non-JSON values in a response_format dict"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import llm


            def extract() -> object:
                return llm("Extract", response_format={"type": "object", "properties": {"age": {"type": "integer"}}})
            """
        ),
        Valid(
            """
            def extract(client: object) -> object:
                return client.create(response_format={"age": int})
            """
        ),
        Valid(
            """
            from openprogram import llm

            AGE = {"type": "object", "properties": {"age": {"type": "integer"}}}


            def extract(q: str) -> object:
                return llm(q, response_format=AGE)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import llm


            def extract() -> object:
                return llm("Extract", response_format={"name": str})
            """,
            range=(5, 52, 5, 55),
            message='found str; write {"type": "string"}',
        ),
        Invalid(
            """
            from openprogram import create_runtime


            def extract() -> object:
                return create_runtime().exec("Extract", response_format={"age": int})
            """,
            range=(5, 69, 5, 72),
            message='found int; write {"type": "integer"}',
        ),
        Invalid(
            """
            from openprogram import Runtime


            def extract(rt: Runtime) -> object:
                return rt.exec_full("Extract", response_format={"age": int})
            """,
            range=(5, 60, 5, 63),
            message='found int; write {"type": "integer"}',
        ),
        Invalid(
            """
            from openprogram import llm

            AGE = {"age": int}


            def extract(q: str) -> object:
                return llm(q, response_format=AGE)
            """,
            range=(3, 15, 3, 18),
            message="response_format takes a JSON schema, not Python types",
        ),
    ]
