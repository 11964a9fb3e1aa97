"""The reference LLM agent: native tool calls over any OpenAI-compatible endpoint; the model picks each call.

Works against vLLM, SGLang, hosted APIs and llama-cpp-python's server. The quirks of small local
models are options, never hard-coded: ``tool_choice`` (e.g. ``"required"`` on servers that
constrain decoding for it), ``tool_results_as_user`` (for chat templates that drop ``tool``
messages, as llama-cpp-python's ``chatml-function-calling`` does) and ``nudges`` (how often a
model that answers in text is reminded to call a tool). See ``docs/local-llm.md``.

Where the validator offers its inference gateway (``AgentRequest.gateway``) the agent calls its
model through it (``via_gateway``, on by default): the same request goes to the gateway, which
forwards it to the endpoint named here (the model's base URL and key, in the gateway's headers)
and logs the exchange; the tool calls the model emitted are then attested (axis ``A-attested``,
``docs/protocol.md``). Where the validator has no gateway (404) or refuses the endpoint (a
loopback or private address: ``upstream_refused``) the agent calls its model directly for the
rest of the episode, and is judged as any other miner.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from arena.gateway import ERROR_TYPE, HEADER_UPSTREAM, HEADER_UPSTREAM_KEY
from arena.types import Message, ToolResult, Usage
from neurons.miner.agents.contract import (
    AgentOutput,
    AgentRequest,
    AgentStop,
    GatewayAccess,
    ToolCaller,
    prompt_text,
    system_prompt,
)
from neurons.miner.agents.schemas import constrain_tool_schemas
from neurons.miner.agents.wire import assistant_message, forced_choice, run_call, wire_messages

logger = logging.getLogger(__name__)

TERMINATE = "terminate"
RECOMMEND = "recommend_product"


@dataclass(frozen=True)
class LLMOptions:
    """How the LLM agent talks to its model; every field has a safe default for real servers."""

    model: str
    temperature: float = 0.0
    max_tokens: int | None = None
    # "auto" lets the model choose; "required" or {"type": "function", ...} constrain it.
    tool_choice: str | dict[str, Any] = "auto"
    # Used for the first model turn only (e.g. "find_product": the harness picks the first tool,
    # the model still writes its arguments); None uses tool_choice throughout.
    first_tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    seed: int | None = None
    nudges: int = 1
    stop_after_recommend: bool = False
    tool_results_as_user: bool = False
    schema_max_string: int | None = None
    request_timeout_s: float = 60.0
    via_gateway: bool = True
    system_prompt: str = field(default_factory=lambda: prompt_text("shopping_agent.md"))
    nudge_prompt: str = field(default_factory=lambda: prompt_text("nudge.md"))
    extra_body: dict[str, Any] | None = None


@dataclass
class _Episode:
    """The mutable state of one run: the conversation so far and the usage summed over model calls."""

    messages: list[Message]
    client: AsyncOpenAI
    via_gateway: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_reported: bool = False
    call_ids: set[str] = field(default_factory=set)

    def add_usage(self, usage: Any) -> None:
        if usage is None:
            return
        self.usage_reported = True
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    def output(self, stop: AgentStop) -> AgentOutput:
        usage = Usage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
        return AgentOutput(messages=self.messages, usage=usage if self.usage_reported else None, stop=stop)


class LLMAgent:
    """An agent bound to one OpenAI-compatible endpoint; holds the HTTP client, so close it when done."""

    def __init__(self, client: AsyncOpenAI, options: LLMOptions) -> None:
        self.client = client
        self.options = options

    async def __call__(self, request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        """Run one episode: model turn, tool calls, results back, until terminate or a budget runs out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.deadline_s
        gateway = request.gateway if self.options.via_gateway else None
        episode = _Episode(
            messages=[
                Message(
                    role="system", content=system_prompt(self.options.system_prompt, request.tool_names())
                ),
                Message(role="user", content=request.query),
            ],
            client=self._through(gateway) if gateway is not None else self.client,
            via_gateway=gateway is not None,
        )
        stop = await self._loop(request, call_tool, episode, deadline)
        logger.debug(
            "agent=llm episode=%s task=%s stop=%s messages=%d prompt_tokens=%d completion_tokens=%d",
            request.episode_id,
            request.task_id,
            stop,
            len(episode.messages),
            episode.prompt_tokens,
            episode.completion_tokens,
        )
        return episode.output(stop)

    async def _loop(
        self, request: AgentRequest, call_tool: ToolCaller, episode: _Episode, deadline: float
    ) -> AgentStop:
        loop = asyncio.get_running_loop()
        nudges_left = self.options.nudges
        for step in range(request.max_steps):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return "deadline"
            try:
                async with asyncio.timeout(remaining):
                    completion = await self._complete_routed(request, episode, remaining, first=step == 0)
            except TimeoutError:
                return "deadline"
            except openai.APITimeoutError:
                # The client's own timeout is capped at the time left, so it may be the deadline.
                return "deadline" if loop.time() >= deadline - 0.1 else "model_error"
            except openai.OpenAIError as exc:
                logger.warning(
                    "agent=llm episode=%s model_error=%s detail=%.300s",
                    request.episode_id,
                    type(exc).__name__,
                    exc,
                )
                return "model_error"
            episode.add_usage(completion.usage)
            if not completion.choices:
                logger.warning("agent=llm episode=%s model_error=no_choices", request.episode_id)
                return "model_error"
            assistant = assistant_message(completion.choices[0].message, episode.call_ids)
            episode.messages.append(assistant)
            if not assistant.tool_calls:
                if nudges_left <= 0:
                    return "no_tool_call"
                nudges_left -= 1
                episode.messages.append(Message(role="user", content=self.options.nudge_prompt))
                continue
            finished = False
            for call in assistant.tool_calls:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return "deadline"
                try:
                    async with asyncio.timeout(remaining):
                        result = await run_call(call, call_tool)
                except TimeoutError:
                    return "deadline"
                logger.debug(
                    "agent=llm episode=%s tool=%s call=%s error=%s",
                    request.episode_id,
                    call.function.name,
                    call.id,
                    result.error,
                )
                episode.messages.append(Message(role="tool", tool_call_id=call.id, content=result.content))
                finished = finished or self._ends_episode(call.function.name, result)
            if finished:
                return "terminated"
        return "max_steps"

    def _ends_episode(self, tool: str, result: ToolResult) -> bool:
        if tool == TERMINATE:
            return True
        return self.options.stop_after_recommend and tool == RECOMMEND and not result.error

    def _through(self, gateway: GatewayAccess) -> AsyncOpenAI:
        """A client of the validator's gateway for one episode, naming this agent's model endpoint."""
        headers = {
            HEADER_UPSTREAM: str(self.client.base_url).rstrip("/"),
            HEADER_UPSTREAM_KEY: self.client.api_key,
        }
        return self.client.with_options(
            base_url=gateway.base_url, api_key=gateway.token, default_headers=headers
        )

    async def _complete_routed(
        self, request: AgentRequest, episode: _Episode, remaining: float, *, first: bool
    ) -> Any:
        """One model turn: through the gateway while it serves this endpoint, else directly."""
        try:
            return await self._complete(episode.client, request, episode.messages, remaining, first=first)
        except openai.APIStatusError as exc:
            if not (episode.via_gateway and _gateway_declined(exc)):
                raise
        logger.info("agent=llm episode=%s gateway=declined calling_model=directly", request.episode_id)
        episode.client, episode.via_gateway = self.client, False
        return await self._complete(episode.client, request, episode.messages, remaining, first=first)

    async def _complete(
        self,
        client: AsyncOpenAI,
        request: AgentRequest,
        messages: list[Message],
        remaining: float,
        *,
        first: bool = False,
    ) -> Any:
        options = self.options
        kwargs: dict[str, Any] = {
            "model": options.model,
            "messages": wire_messages(messages, tool_results_as_user=options.tool_results_as_user),
            "temperature": options.temperature,
            "timeout": min(options.request_timeout_s, remaining),
        }
        if request.tools:
            tools = [dict(tool) for tool in request.tools]
            if options.schema_max_string is not None:
                tools = constrain_tool_schemas(tools, options.schema_max_string)
            kwargs["tools"] = tools
            choice = options.first_tool_choice if first and options.first_tool_choice else options.tool_choice
            kwargs["tool_choice"] = forced_choice(choice)
            if options.parallel_tool_calls is not None:
                kwargs["parallel_tool_calls"] = options.parallel_tool_calls
        if options.max_tokens is not None:
            kwargs["max_tokens"] = options.max_tokens
        if options.seed is not None:
            kwargs["seed"] = options.seed
        if options.extra_body:
            kwargs["extra_body"] = options.extra_body
        return await client.chat.completions.create(**kwargs)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.close()

    async def __aenter__(self) -> LLMAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _gateway_declined(exc: openai.APIStatusError) -> bool:
    """Whether the gateway is not there (a bare 404) or will not forward to this endpoint (its address)."""
    ours = exc.type == ERROR_TYPE
    return (exc.status_code == 404 and not ours) or (ours and exc.code == "upstream_refused")


def make_llm_agent(
    base_url: str,
    model: str,
    api_key: str = "none",
    temperature: float = 0.0,
    *,
    max_tokens: int | None = None,
    tool_choice: str | dict[str, Any] = "auto",
    first_tool_choice: str | dict[str, Any] | None = None,
    parallel_tool_calls: bool | None = None,
    seed: int | None = None,
    nudges: int = 1,
    stop_after_recommend: bool = False,
    tool_results_as_user: bool = False,
    schema_max_string: int | None = None,
    system_prompt: str | Path | None = None,
    request_timeout_s: float = 60.0,
    max_retries: int = 2,
    extra_body: dict[str, Any] | None = None,
    http_client: Any = None,
    via_gateway: bool = True,
) -> LLMAgent:
    """Build the LLM agent for one OpenAI-compatible endpoint.

    Args:
        base_url: the endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server expects.
        api_key: the API key ("none" for local servers).
        temperature: sampling temperature.
        max_tokens: cap on tokens per model turn (None: the server's default).
        tool_choice: ``"auto"`` (the model decides), ``"required"``, ``"none"``, or a forced
            function (a tool name or ``{"type": "function", "function": {"name": ...}}``).
        first_tool_choice: a tool choice for the first model turn only (e.g. ``"find_product"``
            for a model too small to start with a search); the model still writes the arguments.
        parallel_tool_calls: sent only when not None (some servers reject the field).
        seed: sampling seed, sent only when not None.
        nudges: how many times a text-only answer is followed by a reminder to call a tool.
        stop_after_recommend: end the episode after a successful ``recommend_product`` call.
        tool_results_as_user: send tool results to the server as user messages (for chat
            templates that drop tool messages); the returned messages are unaffected.
        schema_max_string: send the model tightened tool schemas (strings capped at this many
            characters, no control characters; small integer ranges as enums), for servers that
            decode arguments under a grammar built from the schema (see
            :mod:`neurons.miner.agents.schemas`). None sends the schemas unchanged.
        system_prompt: the system prompt text, a path to a prompt file, or None for the bundled one.
        request_timeout_s: timeout of one model call (the episode deadline bounds it too).
        max_retries: the openai client's retries on connection errors and 5xx/429.
        extra_body: extra JSON fields for the server (e.g. vLLM's ``chat_template_kwargs``).
        http_client: an HTTP client for the openai client (its own httpx flavour), or None.
        via_gateway: call the model through the validator's inference gateway where a task
            offers one (its tool calls are then attested); False always calls it directly.

    Returns:
        An :class:`LLMAgent`; ``await agent(request, call_tool)`` runs one episode.

    Example:
        >>> agent = make_llm_agent("http://127.0.0.1:8000/v1", "Qwen/Qwen3-4B")
    """
    if isinstance(system_prompt, Path):
        system_prompt = system_prompt.read_text(encoding="utf-8").strip()
    options = LLMOptions(
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
        tool_choice=tool_choice,
        first_tool_choice=first_tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        seed=seed,
        nudges=max(0, nudges),
        stop_after_recommend=stop_after_recommend,
        tool_results_as_user=tool_results_as_user,
        schema_max_string=schema_max_string,
        request_timeout_s=request_timeout_s,
        extra_body=extra_body,
        via_gateway=via_gateway,
        **({"system_prompt": system_prompt} if system_prompt is not None else {}),
    )
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, http_client=http_client)
    return LLMAgent(client, options)
