"""``openprogram show RUN --format html``: one self-contained page of the run graph."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def test_show_html_is_one_offline_file_with_the_run_graph(tmp_path: Path) -> None:
    (tmp_path / "report_pipeline.py").write_text(
        (ROOT / "examples" / "report_pipeline.py").read_text()
    )
    run = subprocess.run(
        [OPENPROGRAM, "run", "report_pipeline.py:build_report", "--args", '{"topic": "tides"}', "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    run_id = json.loads(run.stdout)["run_id"]
    out = tmp_path / "graph.html"
    proc = subprocess.run(
        [OPENPROGRAM, "show", run_id, "--format", "html", "--output", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    data = re.search(
        r'<script id="openprogram-graph-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert data is not None
    payload = json.loads(data.group(1))
    assert payload["run"]["status"] == "completed" and payload["totals"]["nodes"] == 14
    assert {n["step"] for n in payload["nodes"]} >= {"outline #0", "review #2", "publish #0"}
    # Self-contained: the drawing library is inlined, nothing is fetched.
    assert "cytoscape" in page and not re.search(r"<script[^>]+src=|<link[^>]+href=", page)
    assert len(re.findall(r"</script>", page)) == 2
    # stdout works too, and an unknown id is a one-line error.
    printed = subprocess.run(
        [OPENPROGRAM, "show", run_id, "--format", "html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert printed.stdout.strip() == page.strip()
    bad = subprocess.run(
        [OPENPROGRAM, "show", "nope", "--format", "html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and "no session 'nope'" in bad.stderr
