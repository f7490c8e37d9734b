"""The inlay hints' glyphs render in the editor's fallback fonts (issue 14, item 5): each has a
glyph in DejaVu Sans Mono, the monospace font of Debian/Ubuntu desktops and of the CI's
headless Chromium (``⏸`` has none and showed as an empty box)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from openprogram_lsp.inlay_hints import GLYPHS


def test_every_hint_glyph_is_in_the_default_monospace_font() -> None:
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        pytest.skip("fontconfig (fc-list) is not installed")
    fonts = subprocess.run(
        [fc_list, ":family=DejaVu Sans Mono", "family"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    if not fonts.stdout.strip():
        pytest.skip("DejaVu Sans Mono is not installed (fonts-dejavu-core)")
    missing = []
    for name, glyph in GLYPHS.items():
        covered = subprocess.run(
            [fc_list, f":family=DejaVu Sans Mono:charset={ord(glyph):x}", "family"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        if not covered.stdout.strip():
            missing.append(f"{name}: {glyph!r} U+{ord(glyph):04X}")
    assert missing == []
    assert GLYPHS["paused"] != "⏸"
