"""The shared door rules: header count 431, JSON Content-Type, printable call ids."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from arena.httpguard import bad_call_id, bounded_headers, wrong_content_type


async def test_a_request_with_too_many_headers_is_431_before_routing() -> None:
    app = FastAPI()
    seen: list[int] = []

    @app.get("/x")
    async def route() -> dict[str, int]:
        seen.append(1)
        return {"ok": 1}

    app.add_middleware(bounded_headers, max_headers=8)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        few = await client.get("/x", headers={"X-A": "1"})
        many = await client.get("/x", headers={f"X-H{i}": "1" for i in range(20)})
    assert few.status_code == 200
    assert many.status_code == 431 and "more than 8 request headers" in many.json()["detail"]
    assert seen == [1]


@pytest.mark.parametrize("value", [None, "", "application/json", "Application/JSON; charset=utf-8"])
def test_json_or_no_content_type_passes(value: str | None) -> None:
    assert wrong_content_type(value) is None


@pytest.mark.parametrize(
    "value", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=1"]
)
def test_another_content_type_is_named(value: str) -> None:
    assert "is not application/json" in (wrong_content_type(value) or "")


@pytest.mark.parametrize("value", ["call\x1b[31m", "a\tb", "caf\xe9", "x\x7f", "\x9b2J"])
def test_a_call_id_with_a_control_or_non_ascii_character_is_refused(value: str) -> None:
    assert bad_call_id(value) is not None


def test_an_ordinary_call_id_passes() -> None:
    assert bad_call_id("call_abc-123 x") is None
