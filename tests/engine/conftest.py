"""Fixtures of the engine tests (defined in ``loopback.py`` so test modules can import
its helpers by a name no other test folder uses)."""

from loopback import *  # noqa: F403 - re-exports the fixtures to pytest
