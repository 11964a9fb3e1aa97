"""Loading an agent by name: ``llm``, ``scripted``, or ``package.module:function`` with options bound."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from neurons.miner.agents.contract import Agent, AgentError


def load_agent(spec: str, **options: Any) -> Agent:
    """Return the agent named by ``spec``, with ``options`` bound.

    Args:
        spec: ``"llm"`` (options go to :func:`neurons.miner.agents.llm.make_llm_agent`; ``base_url`` and
            ``model`` are required), ``"scripted"`` (options are keyword arguments of
            :func:`neurons.miner.agents.scripted.scripted_agent`), or ``"package.module:function"`` naming
            an agent function (options are bound to it as keyword arguments).
        **options: keyword options for the agent.

    Returns:
        An agent.

    Raises:
        AgentError: the spec names nothing importable or callable, or an option is missing.

    Example:
        >>> agent = load_agent("scripted")
    """
    if spec == "llm":
        from neurons.miner.agents.llm import make_llm_agent

        missing = [name for name in ("base_url", "model") if not options.get(name)]
        if missing:
            raise AgentError(f"the llm agent needs {', '.join(missing)}")
        return make_llm_agent(**options)
    if spec == "scripted":
        from neurons.miner.agents.scripted import scripted_agent

        return _bind(scripted_agent, options, spec)
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise AgentError(f"agent spec {spec!r} is not 'llm', 'scripted' or 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentError(f"cannot import agent module {module_name!r}: {exc}") from exc
    target = getattr(module, attribute, None)
    if target is None or not callable(target):
        raise AgentError(f"{module_name!r} has no callable {attribute!r}")
    return _bind(target, options, spec)


def _bind(function: Callable[..., Any], options: dict[str, Any], spec: str) -> Agent:
    if not options:
        return function
    try:
        inspect.signature(function).bind_partial(None, None, **options)
    except TypeError as exc:
        raise AgentError(f"agent {spec!r} does not take these options: {exc}") from exc
    return functools.partial(function, **options)
