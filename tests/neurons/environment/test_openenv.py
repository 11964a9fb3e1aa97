"""OpenEnv's own client drives `arena env serve --openenv` on loopback (skipped without the openenv extra)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.neurons.cli.servers import env_serve, free_port, serving

pytestmark = pytest.mark.openenv
openenv_core = pytest.importorskip(
    "openenv.core", reason="the openenv extra is not installed (make test-openenv)"
)


def test_openenvs_client_plays_an_episode(world_pack_dir: Path, world_base_dir: Path) -> None:
    port = free_port()
    args = env_serve(world_base_dir, world_pack_dir, port, "--openenv")
    with serving(args, port=port) as url:
        client = openenv_core.GenericEnvClient(base_url=f"{url}/openenv").sync()
        with client:
            reset = client.reset(seed=2)
            observation = reset.observation
            assert observation["request"] and len(observation["tools"]) == 7 and not reset.done
            found = client.step({"tool": "find_product", "arguments": {"q": "bag", "page": 1}})
            assert not found.done and not found.observation["error"] and found.reward is not None
            bad = client.step({"tool": "view_product_information", "arguments": "{oops"})
            assert (
                bad.observation["error"]
                and "invalid arguments" in json.loads(bad.observation["result"])["error"]
            )
            state = client.state()
            assert state["step_count"] == 2 and state["episode_id"] == observation["session_id"]
            ended = client.step({"tool": "terminate", "arguments": {"status": "failure"}})
            assert ended.done and ended.observation["final"]["score"] == 0.0
            assert ended.observation["final"]["total_reward"] == pytest.approx(
                state["total_reward"] + ended.reward
            )
            again = client.reset(seed=3)  # a new episode on the same connection
            assert again.observation["session_id"] != observation["session_id"]
