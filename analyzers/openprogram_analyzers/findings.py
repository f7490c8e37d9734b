"""Finding data types shared by the analyzer, the CLI and the language server.

All lines and columns are 1-based; end columns are exclusive.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class TextEdit:
    """Replace the text between (line, column) and (end_line, end_column) by ``new_text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    """A set of edits that fixes a finding; ``safe`` fixes are applied by ``--fix``."""

    description: str
    edits: tuple[TextEdit, ...]
    safe: bool = True


@dataclass(frozen=True)
class Related:
    """Related location of a finding (e.g. one link of a call chain)."""

    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Finding:
    """One diagnostic."""

    code: str
    message: str
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: Fix | None = None
    related: tuple[Related, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of SPEC §4 (``fix``/``related`` only when present)."""
        data = asdict(self)
        if self.fix is None:
            del data["fix"]
        else:
            data["fix"]["edits"] = [asdict(e) for e in self.fix.edits]
        if not self.related:
            del data["related"]
        else:
            data["related"] = [asdict(r) for r in self.related]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """Inverse of :meth:`to_json` (used by the result cache)."""
        fix = data.get("fix")
        return cls(
            code=data["code"],
            message=data["message"],
            severity=data["severity"],
            path=data["path"],
            line=data["line"],
            column=data["column"],
            end_line=data["end_line"],
            end_column=data["end_column"],
            fix=None
            if fix is None
            else Fix(
                description=fix["description"],
                edits=tuple(TextEdit(**e) for e in fix["edits"]),
                safe=fix["safe"],
            ),
            related=tuple(Related(**r) for r in data.get("related", ())),
        )

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)
