"""The workspace row of a trace that survived the per-trace stages: dedup keys, rank, record, provenance."""

from __future__ import annotations

import json

from curation.chat import ChatRecord
from curation.config import CurationConfig
from curation.conversion.results import NATIVE, Provenance
from curation.labels import grounded, positive
from curation.signature import Strategy, strategy
from curation.stages.ranking import structural_score
from curation.stages.split import cluster_of
from curation.stages.stage import Stream
from curation.workspace import Row
from storage.records import JudgedTrace


def workspace_row(
    trace: JudgedTrace,
    record: ChatRecord,
    stream: Stream,
    config: CurationConfig,
    provenance: Provenance = NATIVE,
    *,
    pending: Strategy | None = None,
) -> Row:
    """The row a surviving trace leaves in the workspace: dedup keys, rank, record, provenance.

    ``pending``: the trace is to convert, and these are its keys once converted
    (``curation.stages.convert.prospective_keys``); its row ranks as a converted one (natives of
    its task first) and holds the source until dedup converts it (``curation.stages.dedup``).
    """
    judgment, task = trace.judgment, trace.task
    keys = pending or strategy(record)
    versions = {
        "scorer": judgment.versions.scorer,
        "judge_model": judgment.versions.judge_model,
        "prompt_hash": judgment.versions.prompt_hash,
        "catalog": judgment.versions.catalog_version or task.catalog_version,
        "toolset": record.toolset,
        "generator": task.generator_version,
    }
    document = {"messages": record.messages, "prompt_length": record.prompt_length, "toolset": record.toolset}
    return Row(
        seq=trace.seq,
        episode_id=trace.episode.episode_id,
        task_id=task.task_id,
        cluster=cluster_of(task),
        miner=trace.episode.miner_hotkey,
        stream=stream,
        success=judgment.success,
        label=positive(judgment, config),
        grounded=grounded(judgment),
        score=judgment.score,
        structural=structural_score(judgment),
        exact=keys.exact,
        steps=keys.steps,
        answer=keys.answer,
        judgment_hash=judgment.content_hash,
        versions=versions,
        record=json.dumps(document, ensure_ascii=False),
        origin="converted" if pending is not None else provenance.origin,
        source_hash=provenance.source_hash,
        converter_version=provenance.converter_version,
        writer=provenance.writer,
        world_id=trace.episode.world_id,
        pack_hash=trace.episode.pack_hash,
        pending=pending is not None,
    )
