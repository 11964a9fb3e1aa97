"""Optional LLM paraphrase of template queries through any OpenAI-compatible chat endpoint.

The paraphraser never decides whether a task is kept: the generator runs the mention check
on every paraphrase and falls back to the template text when it fails. An endpoint error is
logged and returns ``None`` (the template text is used), so an outage never stops generation.
"""

from __future__ import annotations

import logging
from importlib import resources

import openai

logger = logging.getLogger(__name__)

PROMPT_FILE = "paraphrase.md"


def paraphrase_prompt(request: str) -> str:
    """Return the paraphrase prompt (``arena/prompts/paraphrase.md``) filled in with ``request``."""
    template = resources.files("arena").joinpath("prompts", PROMPT_FILE).read_text(encoding="utf-8")
    return template.replace("{request}", request)


def clean_reply(text: str) -> str:
    """Strip what models wrap around a one-line answer: code fences, surrounding quotes, blank lines."""
    cleaned = text.strip()
    if cleaned.startswith("```"):
        lines = cleaned.split("\n")[1:]  # drop the opening fence and its language tag
        if lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        cleaned = "\n".join(lines).strip()
    if len(cleaned) >= 2 and cleaned[0] == cleaned[-1] and cleaned[0] in "\"'":
        cleaned = cleaned[1:-1].strip()
    return cleaned


class Paraphraser:
    """Calls a chat model to reword a request (stateful: holds the client); callable as ``(text) -> text``."""

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        temperature: float = 0.7,
        seed: int | None = None,
        max_tokens: int = 600,
    ) -> None:
        self.client, self.model = client, model
        self.temperature, self.seed, self.max_tokens = temperature, seed, max_tokens

    def __call__(self, request: str) -> str | None:
        """Return the reworded request, or ``None`` when the endpoint fails or answers nothing."""
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "user", "content": paraphrase_prompt(request)}],
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=self.seed,
            )
        except openai.OpenAIError as exc:
            logger.warning("paraphrase_failed model=%s error=%s", self.model, type(exc).__name__)
            return None
        content = response.choices[0].message.content if response.choices else None
        cleaned = clean_reply(content or "")
        return cleaned or None


def make_paraphraser(
    base_url: str, model: str, *, api_key: str = "none", timeout: float = 60.0, seed: int | None = None
) -> Paraphraser:
    """Build a paraphraser for an OpenAI-compatible endpoint (vLLM, llama.cpp server, OpenAI...)."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=1)
    return Paraphraser(client, model, seed=seed)
