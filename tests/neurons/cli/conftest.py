"""The command-line tests render help and usage panels at one fixed width, whatever the terminal running them.

Rich draws help (and typer's usage errors) in panels as wide as ``COLUMNS``; a developer's narrow
terminal must not change what the tests see. Messages of our own never depend on the width at all
(``test_console.py`` runs them at several).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
