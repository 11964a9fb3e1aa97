import json

import httpx
import openai

from arena.paraphrase import Paraphraser, clean_reply, paraphrase_prompt


def chat_reply(content: str) -> dict[str, object]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "stand-in",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        ],
    }


def stand_in(handler: httpx.MockTransport) -> openai.OpenAI:
    return openai.OpenAI(
        base_url="http://stand-in/v1",
        api_key="none",
        max_retries=0,
        http_client=httpx.Client(transport=handler),
    )


def test_paraphraser_sends_the_prompt_and_cleans_the_reply() -> None:
    seen: list[dict[str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=chat_reply('```\n"Got any black running shoes, size 42?"\n```'))

    paraphrase = Paraphraser(stand_in(httpx.MockTransport(handle)), "stand-in-model", seed=3)
    assert paraphrase("Show me black running shoes in size 42.") == "Got any black running shoes, size 42?"
    body = seen[0]
    assert body["model"] == "stand-in-model" and body["seed"] == 3
    messages = body["messages"]
    assert isinstance(messages, list)
    assert "Show me black running shoes in size 42." in messages[0]["content"]


def test_an_endpoint_failure_gives_none() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"error": {"message": "down"}})

    assert Paraphraser(stand_in(httpx.MockTransport(handle)), "m")("anything") is None


def test_an_empty_reply_gives_none() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply("   "))

    assert Paraphraser(stand_in(httpx.MockTransport(handle)), "m")("anything") is None


def test_prompt_and_cleaning() -> None:
    assert "{request}" not in paraphrase_prompt("red hat") and "red hat" in paraphrase_prompt("red hat")
    assert clean_reply("```text\nhello there\n```") == "hello there"
    assert clean_reply("'quoted'") == "quoted"
