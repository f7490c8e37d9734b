"""The shipped pre-commit hook, as a user runs it: ``pre-commit try-repo`` of this
repository on a project whose configuration excludes a directory. Offline: pip installs
the hook's environment from a wheelhouse repacked from this interpreter's packages: the
ones this repository's build and install need (``pyproject.toml``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from wheelhouse import build

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own TOML parser
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: what ``pip install`` of this repository takes: its build backend and its dependencies
INSTALL_REQUIRES = [*PYPROJECT["build-system"]["requires"], *PYPROJECT["project"]["dependencies"]]

BAD = (
    "from openprogram import Agent\n\n\nclass A(Agent):\n"
    '    method_options = {"f": {"expsoe": "io"}}\n\n'
    "    def f(self) -> str:\n        return 'x'\n"
)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is a dev dependency")
def test_pre_commit_try_repo_honours_exclude(tmp_path: Path) -> None:
    assert PRE_COMMIT is not None
    wheels = tmp_path / "wheels"
    assert len(build(wheels, INSTALL_REQUIRES)) > 10
    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.openprogram.lint]\nexclude = ['generated/**']\n"
    )
    (project / "app.py").write_text(BAD)
    (project / "generated" / "client.py").write_text(BAD)
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUALENV_"))}
    env |= {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    r = subprocess.run(
        [PRE_COMMIT, "try-repo", str(ROOT), "openprogram-lint", "--all-files", "--verbose"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # the hook ran and found app.py's typo
    assert "app.py:5:29: OP102" in out
    assert "generated/client.py" not in out  # pre-commit named it; --force-exclude held
