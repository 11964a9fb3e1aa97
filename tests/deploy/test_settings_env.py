"""Every ``ARENA_*`` variable deploy/ sets is one its neuron reads, under its current (sectioned) name.

A misspelt or renamed variable is not an error to pydantic-settings (one ``.env`` may serve
both roles, so unknown names are ignored): without this check a stack could set
``ARENA_TASKS_PER_ROUND`` forever after it became ``ARENA_ROUND__TASKS_PER_ROUND``.
"""

from __future__ import annotations

import re

import pytest

from neurons.cli.flags import settings_variables
from neurons.miner.settings import MinerSettings
from neurons.settings import NeuronSettings
from neurons.validator.settings import ValidatorSettings
from tests.deploy.conftest import DEPLOY

STACK_VARIABLES = {"ARENA_UID", "ARENA_GID", "ARENA_IMAGE"}  # read by docker compose, not by a neuron
ROLES: dict[str, type[NeuronSettings]] = {"validator": ValidatorSettings, "miner": MinerSettings}
FILES = {
    "validator": ["validator/.env.example", "validator/compose.yml", "systemd/arena-validator.service"],
    "miner": ["miner/.env.example", "miner/compose.yml", "systemd/arena-miner.service"],
}


@pytest.mark.parametrize("role", list(ROLES))
def test_every_variable_deploy_sets_is_read_under_its_current_name(role: str) -> None:
    known = set(settings_variables(ROLES[role]))
    renamed = {f"ARENA_{old.upper()}" for old in ROLES[role].renamed}
    for file in FILES[role]:
        text = (DEPLOY / file).read_text(encoding="utf-8")
        # An assignment: `NAME=` (.env, systemd Environment=) or `NAME:` (compose environment).
        used = set(re.findall(r"\b(ARENA_[A-Z0-9_]+)\s*[=:]", text)) - STACK_VARIABLES
        assert used, file
        assert used & renamed == set(), f"{file} sets deprecated names: {sorted(used & renamed)}"
        assert used - known == set(), f"{file} sets variables no setting reads: {sorted(used - known)}"


def test_the_stacks_set_the_sections_by_their_nested_names() -> None:
    validator = (DEPLOY / "validator" / ".env.example").read_text(encoding="utf-8")
    miner = (DEPLOY / "miner" / ".env.example").read_text(encoding="utf-8")
    for name in ("ARENA_ROUND__TASKS_PER_ROUND", "ARENA_CLIENT__MAX_CONCURRENCY", "ARENA_POOL__MIN_HELD_OUT"):
        assert f"\n{name}=" in validator, name
    assert "\nARENA_APP__MIN_STAKE=" in miner
