"""Program sources used by the durable-execution tests (written into tmp dirs)."""

from __future__ import annotations

import os
from pathlib import Path

# Steps append "<name> <value>" to calls.log next to the Program, and fail while a file
# fail_<name> exists there.
HEADER = """
import os

from openprogram import parallel, step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> dict:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + str(value) + "\\n")
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return {"name": name, "value": value}
"""

# A resumable Agent method whose step asks the model to call a tool that needs approval
# (the CLI's and the editor's approval tests).
JANITOR = '''
import os

from openprogram import Agent, agent, step
from openprogram.programs import function

HERE = os.path.dirname(os.path.abspath(__file__))


@function(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file of the workspace."""
    os.remove(os.path.join(HERE, path))
    return "deleted " + path


def tidy(target: str) -> str:
    return agent("Remove the file " + target + " if it is junk.", tools=[delete_file])


class Janitor(Agent):
    method_options = {"clean": {"resumable": True}}

    def clean(self, target: str) -> dict:
        report = step("tidy", tidy, target)
        return {"report": report}


janitor = Janitor()
clean = janitor.clean
PROGRAM_ENTRIES = ["clean"]
'''

FOOTER = """
main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

LINEAR = """
def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    b = step("b", act, "b", a["value"] + 1)
    c = step("c", act, "c", b["value"] + 1)
    return {"total": c["value"]}
"""


def write_program(folder: Path, body: str, name: str = "prog.py") -> Path:
    """Write HEADER + body + FOOTER as ``folder/name`` (bumping mtime so reloads see it)."""
    path = folder / name
    existed = path.exists()
    path.write_text(HEADER + body + FOOTER, encoding="utf-8")
    if existed:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    return path


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []
