"""Training examples from SFT rows, rendered exactly as the local server renders a conversation.

An SFT export row (``messages`` + ``tools``, TRL's conversational format) becomes token ids and
an assistant mask through :func:`neurons.demo.chatml.render_segments`, the renderer the local
server's chat handler uses at inference, so the tuned model is taught on the very text it will
later read. Two choices are the benchmark's, stated in its JSON:

- ``tools``: the schemas the evaluation agent sends (tightened copies, see
  :func:`neurons.miner.agents.schemas.constrain_tool_schemas`), not the row's own, so the system
  turn is byte-identical to the one the model sees when it is evaluated;
- ``observations`` and ``listing``: compact tool results and tool listing, as the
  ``arena-tools-compact`` handler renders them;
- ``thoughts``: with False, an assistant turn is taught as its tool calls alone, as the server
  decodes them under ``tool_choice="required"``; with True, its reasoning and content come first
  (for the ``arena-tools-thinking`` handler, which lets the model write a thought before each call).

Loss is on the model's own turns only (TRL's ``assistant_masks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neurons.demo.chatml import Observations, ToolListing, render_segments


@dataclass(frozen=True)
class TrainingExample:
    """One conversation as token ids, with 1 on the tokens the model is taught to write."""

    input_ids: tuple[int, ...]
    assistant_masks: tuple[int, ...]

    @property
    def trained_tokens(self) -> int:
        """How many tokens carry the loss."""
        return sum(self.assistant_masks)


@dataclass(frozen=True)
class RenderedRows:
    """The examples that fit, and what was left out and why (counted, never silently)."""

    examples: tuple[TrainingExample, ...]
    too_long: int = 0
    no_assistant_turn: int = 0

    @property
    def tokens(self) -> int:
        """Every token of every example (what one epoch costs)."""
        return sum(len(e.input_ids) for e in self.examples)


def strip_thoughts(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the messages with assistant reasoning and content removed (their calls kept)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item = dict(message)
        if item.get("role") == "assistant" and item.get("tool_calls"):
            item["content"] = None
            item["reasoning_content"] = None
        out.append(item)
    return out


def render_example(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    tokenizer: Any,
    *,
    observations: Observations = "compact",
    listing: ToolListing = "compact",
    thoughts: bool = False,
) -> TrainingExample:
    """Tokenise one conversation piece by piece, marking the model's own turns."""
    shown = messages if thoughts else strip_thoughts(messages)
    ids: list[int] = []
    mask: list[int] = []
    for segment in render_segments(shown, tools, observations=observations, listing=listing):
        piece = tokenizer(segment.text, add_special_tokens=False)["input_ids"]
        ids += piece
        mask += [1 if segment.own else 0] * len(piece)
    return TrainingExample(tuple(ids), tuple(mask))


def render_rows(
    rows: Iterable[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    tokenizer: Any,
    *,
    max_tokens: int,
    observations: Observations = "compact",
    listing: ToolListing = "compact",
    thoughts: bool = False,
) -> RenderedRows:
    """Render SFT rows; a row longer than ``max_tokens`` is left out (truncating would cut its answer)."""
    examples: list[TrainingExample] = []
    too_long = empty = 0
    for row in rows:
        example = render_example(
            row["messages"], tools, tokenizer, observations=observations, thoughts=thoughts
        )
        if not example.trained_tokens:
            empty += 1
        elif len(example.input_ids) > max_tokens:
            too_long += 1
        else:
            examples.append(example)
    return RenderedRows(tuple(examples), too_long=too_long, no_assistant_turn=empty)
