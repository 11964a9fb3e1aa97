"""How every neuron process opens and ends: settings, logging, and the exit code of a failure.

``neurons.validator.process.main`` and ``neurons.miner.process.main`` both go through
``run_neuron``: settings from ``ARENA_*`` variables, ``.env`` and the command's flags (exit 2
with pydantic's list of what is wrong), logging, then the process itself, whose set-up faults
exit 2 with one line and whose lost dependencies (chain, database) exit 1 after an ERROR log.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from neurons.logs import setup_logging
from neurons.settings import NeuronSettings

logger = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=NeuronSettings)
Result = TypeVar("Result")


def run_neuron(
    role: str,
    settings_class: type[Settings],
    overrides: Mapping[str, Any] | None,
    run: Callable[[Settings], Result],
    *,
    refused: tuple[type[BaseException], ...],
    stopped: tuple[type[BaseException], ...],
) -> Result:
    """Build the settings, set up logging, and ``run`` the neuron with them (the body of its ``main``).

    Args:
        role: ``validator`` or ``miner``, for messages and the ``<role>_stopped`` event.
        settings_class: the role's settings.
        overrides: settings keywords (the flags given), which win over the environment.
        run: the process, given the settings.
        refused: set-up faults (a missing wallet, index, schema or agent): ``error: ...``, exit 2.
        stopped: a dependency lost (chain, database): logged at ERROR, exit 1.

    Raises:
        SystemExit: 2 on invalid settings or a ``refused`` fault, 1 on a ``stopped`` one.
    """
    try:
        settings = settings_class(**(overrides or {}))
    except ValidationError as exc:
        print(f"error: invalid {role} settings:\n{exc}", file=sys.stderr)
        raise SystemExit(2) from None
    setup_logging(settings.log_level)
    try:
        return run(settings)
    except refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except stopped as exc:
        logger.error("%s_stopped error=%s", role, exc)
        raise SystemExit(1) from None
