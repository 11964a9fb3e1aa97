"""Command-line options several eval commands share: the reasoning judge of a run.

The neurons' flags (``arena validator``, ``arena miner``) are made from their settings fields
instead: ``neurons/cli/flags.py``.
"""

from __future__ import annotations

from typing import Annotated

import typer

# `arena eval` and `arena eval rejudge`: the reasoning judge of an evaluation run.
EvalJudgeUrl = Annotated[str | None, typer.Option("--judge-url", help="OpenAI-compatible reasoning judge.")]
EvalJudgeModel = Annotated[str | None, typer.Option("--judge-model", help="Pinned judge model name.")]
EvalJudgeFormat = Annotated[
    str, typer.Option("--judge-format", help="Judge's constrained decoding: none, json_object, json_schema.")
]
