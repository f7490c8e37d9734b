"""The package imports and exposes its version and public names lazily."""

import subprocess
import sys

import openprogram


def test_version_is_exposed() -> None:
    assert openprogram.__version__.count(".") == 2


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        openprogram.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_light() -> None:
    code = "import sys, openprogram; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
