"""The wire models, the response binding and the JSON depth guard."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from bittensor import http_auth
from pydantic import ValidationError

from arena.types import Message, Trajectory
from neurons import protocol
from neurons.protocol import (
    PROTOCOL_VERSION,
    WEIGHTS_VERSION_KEY,
    TaskRequest,
    TaskResponse,
    response_binding,
)
from tests.neurons.standins import task_request


def test_header_names_are_the_sdk_btauth_headers() -> None:
    assert protocol.HEADER_HOTKEY == http_auth.HEADER_HOTKEY
    assert protocol.HEADER_NONCE == http_auth.HEADER_NONCE
    assert protocol.HEADER_CRYPTO == http_auth.HEADER_CRYPTO
    assert protocol.HEADER_RECEIVER == http_auth.HEADER_RECEIVER
    assert protocol.HEADER_SIGNATURE == http_auth.HEADER_SIGNATURE
    assert protocol.HEADER_VERSION == http_auth.HEADER_VERSION


def test_weights_version_key_is_ours() -> None:
    assert WEIGHTS_VERSION_KEY > 0


def test_task_request_round_trips_through_its_wire_bytes() -> None:
    request = task_request()
    parsed = TaskRequest.model_validate_json(request.to_bytes())
    assert parsed == request
    assert parsed.deadline.tzinfo is not None


def test_task_request_hides_its_token_from_repr() -> None:
    request = task_request()
    assert request.episode_token not in repr(request)
    assert request.episode_token in request.to_bytes().decode()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("extra_field", 1),
        ("deadline", "2030-01-01T00:00:00"),  # naive: no timezone
        ("protocol_version", "1"),  # strict: no coercion from strings
        ("tool_server_url", "ftp://tools.example"),
        ("tool_server_url", "http://tools.example/?x=1"),
        ("query", ""),
    ],
)
def test_task_request_refuses_bad_fields(field: str, value: object) -> None:
    wire = json.loads(task_request().to_bytes())
    wire[field] = value
    with pytest.raises(ValidationError):
        TaskRequest.model_validate_json(json.dumps(wire))


def test_task_request_refuses_string_budgets() -> None:
    wire = json.loads(task_request().to_bytes())
    wire["budgets"]["max_tool_calls"] = "5"
    with pytest.raises(ValidationError):
        TaskRequest.model_validate_json(json.dumps(wire))


def test_tool_server_url_loses_its_trailing_slash() -> None:
    assert task_request(tool_server_url="http://127.0.0.1:9000/").tool_server_url == "http://127.0.0.1:9000"


def test_seconds_left_counts_down_to_the_deadline() -> None:
    request = task_request(seconds=30)
    assert 25 < request.seconds_left() <= 30
    assert request.seconds_left(request.deadline) == 0


def test_task_response_carries_the_trajectory_schema() -> None:
    trajectory = Trajectory(
        task_id="t-1",
        episode_id="ep-1",
        miner_hotkey="5Miner",
        messages=(Message(role="user", content="hi"),),
    )
    response = TaskResponse(protocol_version=PROTOCOL_VERSION, episode_id="ep-1", trajectory=trajectory)
    wire = json.loads(response.to_bytes())
    assert wire["trajectory"]["schema"] == "arena.trajectory/1"
    assert "stop" not in wire
    assert TaskResponse.model_validate_json(response.to_bytes()) == response


def test_task_response_refuses_another_trajectory_schema() -> None:
    wire = {
        "protocol_version": 1,
        "episode_id": "ep-1",
        "trajectory": {
            "schema": "arena.trajectory/2",
            "task_id": "t",
            "episode_id": "ep-1",
            "miner_hotkey": "m",
            "messages": [{"role": "user", "content": "x"}],
        },
    }
    with pytest.raises(ValidationError):
        TaskResponse.model_validate_json(json.dumps(wire))


def test_response_binding_ties_the_signature_to_one_request_nonce() -> None:
    method, path = response_binding("1700000000000000000")
    assert method == "RESPONSE"
    assert path == "/v1/tasks#nonce=1700000000000000000"
    assert response_binding(1700000000000000001)[1] != path
    with pytest.raises(ValueError):
        response_binding("12\nPOST")  # a nonce is a number; nothing else reaches the signed payload


def test_deadline_must_be_timezone_aware_in_python_too() -> None:
    with pytest.raises(ValidationError):
        task_request(deadline=datetime(2030, 1, 1))
