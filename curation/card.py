"""The export's dataset card (``README.md`` in the export directory): counts, sources, versions, licence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from curation.formats import Format

FORMAT_HEADER = "| file | columns | TRL dataset type | trainer |\n| --- | --- | --- | --- |"

LICENCE = """\
Tasks imported from ShoppingBench (yjwjy/ShoppingBench, source `shoppingbench`) are under the
Apache License 2.0; keep its NOTICE with any redistribution. Generated tasks are minted from
the operator's catalog. The trajectories were produced by the subnet's miners' agents against
the validator's tool server; the operator publishing this export is responsible for checking
that the miners' terms and the catalog's licence allow it. Nothing here is legal advice."""

LOADING = """\
```python
from datasets import load_dataset

# Parquet keeps the feature schema (tool-call arguments and tool schemas are JSON columns):
sft = load_dataset("parquet", data_files={"train": "DIR/sft.parquet", "test": "DIR/eval/sft.parquet"})
# JSONL with the same schema: curation.formats.sft.FORMAT.features (or let datasets infer it)
```"""


def dataset_card(
    *,
    funnel: dict[str, Any],
    files: dict[str, dict[str, Any]],
    versions: dict[str, Counter[str]],
    sources: Counter[str],
    created_at: str,
    formats: Sequence[Format],
) -> str:
    """Render the dataset card.

    Args:
        funnel: ``funnel.json``'s content.
        files: per exported file, its format, split and row count.
        versions: per kind (scorer, judge_model, prompt_hash, catalog, toolset, generator, world),
            how many exported traces carry each value.
        sources: how many exported tasks come from each task source.
        created_at: ISO time of the export.
        formats: the formats the card's format table describes (each its ``card_line``).
    """
    lines = [
        "---",
        "license: apache-2.0",
        "task_categories:",
        "- text-generation",
        "tags:",
        "- trl",
        "- tool-calling",
        "- shopping-arena",
        "configs:",
        *_configs(files),
        "---",
        "",
        "# Shopping Arena curated trajectories",
        "",
        f"Exported {created_at} by `arena curate` from judged shopping-agent episodes: every trace was",
        "judged by the validator (outcome checked by code against the task's constraints, tool results",
        "reconciled with the validator's own tool log) before the funnel below selected it.",
        "",
        "## Files and counts",
        "",
        "| file | format | split | rows | native | converted |",
        "| --- | --- | --- | --- | --- | --- |",
        *(
            f"| `{name}` | {f['format']} | {f['split']} | {f['rows']} | {_origin(f, 'native')} "
            f"| {_origin(f, 'converted')} |"
            for name, f in sorted(files.items())
        ),
        "",
        "Rows of `sft`, `kto` and `dpo` say where they come from in the `origin` column: `native` (the",
        "miner's own trajectory) or `converted` (an axis-B harness trace rewritten as an agentic",
        "trajectory from the validator's tool log and re-judged; `source_hash`, `converter_version`",
        "and `writer` name its source and how it was written). Totals per format: "
        + (
            "; ".join(
                f"{fmt} {counts.get('native', 0)} native, {counts.get('converted', 0)} converted"
                for fmt, counts in funnel.get("origins", {}).items()
            )
            or "none"
        )
        + ".",
        "",
        "Every row of the four formats names the world it ran on in `world_id` and `pack_hash`: the",
        "world pack a validator compiled from a chain-seeded seed (`arena world show` prints one), or",
        "null for static `sb-1` tasks. The `world` row of the versions table below counts them.",
        "",
        "Each JSONL file has a Parquet twin with the same rows. `eval/` holds the evaluation split:",
        "whole leak clusters, never sharing a cluster, gold product, query or constraint spec with",
        "train (checked by the task audit, which must pass for the export to be written).",
        "`manifest.json` lists the tasks, clusters and episodes of each split and the files' hashes.",
        "",
        "## Formats",
        "",
        FORMAT_HEADER,
        *(fmt.card_line for fmt in formats),
        "",
        "Messages carry six keys (`role`, `content`, `reasoning_content`, `tool_calls`, `tool_call_id`,",
        "`name`); tool-call `arguments` are JSON objects, as transformers' chat templates expect.",
        "",
        "## Loading",
        "",
        LOADING,
        "",
        "## Funnel",
        "",
        "| stage | in | out | dropped | aside |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {name} | {s['in']} | {s['out']} | {_reasons(s['dropped'])} | {_reasons(s['aside'])} |"
            for name, s in funnel["stages"].items()
        ),
        "",
        f"Audit: {'passed' if funnel['audit'].get('ok') else 'FAILED'} "
        f"({funnel['audit'].get('tasks', 0)} tasks, {funnel['audit'].get('violations', 0)} violations, "
        f"{funnel['audit'].get('near_misses', 0)} near misses).",
        "",
        "## Sources and versions",
        "",
        "Task sources: " + (_reasons(dict(sources)) or "none") + ".",
        "",
        "| kind | values (traces) |",
        "| --- | --- |",
        *(f"| {kind} | {_reasons(dict(counts)) or '-'} |" for kind, counts in sorted(versions.items())),
        "",
        "## Licence",
        "",
        LICENCE,
        "",
    ]
    return "\n".join(lines)


def _origin(file: dict[str, Any], origin: str) -> str:
    """A file's row count of one origin ("-" for files without the column: grpo, the aside files)."""
    origins = file.get("origins")
    return str(origins.get(origin, 0)) if isinstance(origins, dict) else "-"


def _configs(files: dict[str, dict[str, Any]]) -> list[str]:
    by_format: dict[str, dict[str, str]] = {}
    for name, info in files.items():
        if name.endswith(".parquet") and info["rows"]:
            by_format.setdefault(info["format"], {})["test" if info["split"] == "eval" else "train"] = name
    lines: list[str] = []
    for fmt, splits in sorted(by_format.items()):
        lines += [f"- config_name: {fmt}", "  data_files:"]
        lines += [
            f"  - split: {split}\n    path: {path}" for split, path in sorted(splits.items(), reverse=True)
        ]
    return lines


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(counts.items()))
