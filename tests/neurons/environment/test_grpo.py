"""TRL's environment_factory: the methods mirror the tool schemas, and a rollout is an episode."""

from __future__ import annotations

import inspect

import pytest

from arena.tools import TOOLSETS, tool_schemas
from neurons.environment.grpo import TOOL_CLASSES, factory, prompt_rows
from neurons.environment.session import Environment
from neurons.environment.tasks import EnvTasks
from tests.neurons.environment.conftest import world_task
from tests.neurons.environment.oracle import answer_ids, question


def _methods(cls: type) -> list[str]:
    # What TRL exposes as tools: public functions of the class but reset and get_reward.
    names = [name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)]
    return sorted(n for n in names if not n.startswith("_") and n not in ("reset", "get_reward"))


@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
def test_each_tool_set_is_offered_exactly(toolset: str) -> None:
    transformers = pytest.importorskip("transformers")
    cls = TOOL_CLASSES[toolset]
    ours = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas(toolset)}
    assert _methods(cls) == sorted(ours)
    for name, parameters in ours.items():
        theirs = transformers.utils.get_json_schema(getattr(cls, name))["function"]["parameters"]
        assert sorted(theirs["properties"]) == sorted(parameters["properties"]), name
        assert sorted(theirs.get("required", [])) == sorted(parameters["required"]), name
        for arg, spec in parameters["properties"].items():
            if "enum" in spec:
                assert theirs["properties"][arg]["enum"] == spec["enum"], (name, arg)


def test_a_rollout_as_trl_plays_it_is_an_episode(env: Environment, env_tasks: EnvTasks) -> None:
    tools = factory(env)()
    task = world_task(env_tasks)
    row = next(r for r in prompt_rows(env_tasks, system="Shop.") if r["task_id"] == task.task.task_id)
    assert row["prompt"][-1]["content"] == task.task.query and row["prompt"][0]["role"] == "system"
    assert tools.reset(**row) is None
    calls = [("ask_user", {"question": question(h)}) for h in task.profile.held_back]
    calls.append(("find_product", {"q": task.task.gold[0].titles[0], "page": 1, "sort": "priceasc"}))
    results = [getattr(tools, name)(**arguments) for name, arguments in calls]
    assert all(isinstance(r, str) for r in results)
    chosen = answer_ids(env, task, len(calls))[0]
    tools.recommend_product(product_ids=chosen)  # type: ignore[attr-defined]
    reward = tools.get_reward()
    assert reward == tools.get_reward()  # once finished, the same
    assert env.open_sessions == 0
    tools.reset(**row)  # the pool reuses instances: a new episode
    assert "error" not in tools.find_product(q="x", page=1) and env.open_sessions == 1
