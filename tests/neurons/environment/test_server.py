"""The environment's HTTP API: reset, step, finish, state, log over the app; refusals are status codes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from neurons.environment.server import create_env_app
from neurons.environment.session import EnvConfig, Environment
from neurons.environment.tasks import EnvTasks
from tests.neurons.environment.conftest import world_task


@pytest.fixture
async def client(env_tasks: EnvTasks) -> AsyncIterator[httpx.AsyncClient]:
    app = create_env_app(Environment(env_tasks, EnvConfig(max_sessions=2)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://env") as c:
        yield c


async def test_an_episode_over_http(client: httpx.AsyncClient, env_tasks: EnvTasks) -> None:
    task = world_task(env_tasks)
    reset = (await client.post("/v1/env/reset", json={"task_id": task.task.task_id})).json()
    assert reset["request"] == task.task.query and len(reset["tools"]) == 7
    url = f"/v1/env/sessions/{reset['session_id']}"
    title = task.task.gold[0].titles[0]
    found = await client.post(
        f"{url}/step", json={"tool": "find_product", "arguments": {"q": title, "page": 1}}
    )
    assert found.status_code == 200 and not found.json()["error"] and not found.json()["done"]
    bad = (await client.post(f"{url}/step", json={"tool": "find_product", "arguments": "{oops"})).json()
    assert bad["error"] and "invalid arguments" in bad["result"]
    state = (await client.get(url)).json()
    assert state["steps"] == 2 and not state["done"]
    log = (await client.get(f"{url}/log")).json()["entries"]
    assert [e["result"] for e in log] == [found.json()["result"], bad["result"]]
    final = (await client.post(f"{url}/finish")).json()
    assert final["end"] == "finished" and final["score"] == 0.0
    after = (
        await client.post(f"{url}/step", json={"tool": "terminate", "arguments": {"status": "success"}})
    ).json()
    assert after["done"] and after["error"]
    assert (await client.delete(url)).status_code == 204
    assert (await client.get(url)).status_code == 404


async def test_refusals_are_status_codes(client: httpx.AsyncClient) -> None:
    assert (await client.post("/v1/env/reset", json={"task_id": "t-nope"})).status_code == 404
    assert (await client.post("/v1/env/reset", json={"seed": -1})).status_code == 422
    assert (
        await client.post("/v1/env/reset", content=b"x", headers={"content-type": "text/plain"})
    ).status_code == 415
    assert (await client.post("/v1/env/sessions/ep-nope/step", json={"tool": "terminate"})).status_code == 404
    await client.post("/v1/env/reset", json={"seed": 0})
    await client.post("/v1/env/reset", json={"seed": 1})
    full = await client.post("/v1/env/reset", json={"seed": 2})
    assert full.status_code == 503 and full.headers["retry-after"] == "1"
    big = await client.post("/v1/env/reset", content=b"{" + b" " * 70_000 + b"}")
    assert big.status_code == 413


async def test_health_tasks_and_metrics(client: httpx.AsyncClient, env_tasks: EnvTasks) -> None:
    health = (await client.get("/health")).json()
    assert health["tasks"] == len(env_tasks.tasks) and health["toolset"] == "arena-3"
    ids = (await client.get("/v1/env/tasks")).json()["task_ids"]
    assert ids == [t.task_id for t in env_tasks.tasks]
    assert "arena_env_steps_total" in (await client.get("/metrics")).text
