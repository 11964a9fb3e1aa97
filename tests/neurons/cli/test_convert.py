"""`arena convert`: judged traces from a file or a database become converted lines or typed drops."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.index import SearchIndex
from curation.conversion.convert import Converter
from neurons.cli import app
from neurons.cli.convert import _convert_all
from storage import repository
from storage.db import make_engine, make_sessionmaker, upgrade
from storage.paths import record_paths
from storage.tasks import save_tasks
from tests.curation.conversion.world import scripted_traces

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["convert", *args])
    return result.exit_code, result.output


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_convert_a_file_of_traces_with_a_bad_line(
    tmp_path: Path, synth_index: SearchIndex, synth_index_dir: Path
) -> None:
    traces = scripted_traces(synth_index, 4, seed=5)
    source = tmp_path / "traces.jsonl"
    source.write_text(
        "".join(t.model_dump_json() + "\n" for t in traces) + "{not a trace}\n", encoding="utf-8"
    )
    out = tmp_path / "converted.jsonl"
    code, output = run("--traces", str(source), "--index", str(synth_index_dir), "--out", str(out), "--json")
    assert code == 0, output
    summary = json.loads(output)
    written = lines(out)
    assert len(written) == 5 and summary["counts"]["dropped:unreadable"] == 1
    converted = [line for line in written if line["status"] == "converted"]
    assert summary["counts"]["converted"] == len(converted) > 0
    for line in converted:
        assert line["origin"] == "converted" and line["writer"] == "template/1"
        assert line["trajectory"]["schema"] == "arena.trajectory/1"
        assert line["judgment"]["success"] == next(
            t.judgment.success for t in traces if t.episode.episode_id == line["episode_id"]
        )


def test_convert_reads_a_database_and_filters_by_axis(
    tmp_path: Path, synth_index: SearchIndex, synth_index_dir: Path
) -> None:
    traces = scripted_traces(synth_index, 3, seed=6)
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        save_tasks(session, tasks=[t.task for t in traces])
        for t in traces:
            repository.save_judged(
                session, episode=t.episode, trajectory=t.trajectory, tool_log=t.tool_log, judgment=t.judgment
            )
    engine.dispose()
    out = tmp_path / "converted.jsonl"
    code, output = run("--db", url, "--index", str(synth_index_dir), "--out", str(out), "--axes", "none-such")
    assert code != 0  # an unknown label is refused
    code, output = run("--db", url, "--index", str(synth_index_dir), "--out", str(out), "--json")
    assert code == 0, output
    assert sum(json.loads(output)["counts"].values()) == len(lines(out)) == 3
    first = out.read_bytes()
    with make_sessionmaker(engine)() as session:  # as a validator does at start-up
        record_paths(session, index=synth_index_dir, worlds=tmp_path / "worlds", at=datetime.now(UTC))
    engine.dispose()
    code, output = run("--db", url, "--out", str(out))  # the index found through the database
    assert code == 0, output
    assert out.read_bytes() == first


def test_convert_without_an_index_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.arena/validator here
    source = tmp_path / "traces.jsonl"
    source.write_text("", encoding="utf-8")
    code, output = run("--traces", str(source), "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "no search index: no validator recorded one" in output and "--index DIR" in output


def test_convert_needs_exactly_one_source(tmp_path: Path, synth_index_dir: Path) -> None:
    code, output = run("--index", str(synth_index_dir), "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "exactly one of --db and --traces" in output


def test_convert_on_worker_processes_writes_the_same_lines(
    tmp_path: Path, synth_index: SearchIndex, synth_index_dir: Path
) -> None:
    traces = scripted_traces(synth_index, 12, seed=7)
    source = tmp_path / "traces.jsonl"
    body = [t.model_dump_json() + "\n" for t in traces]
    source.write_text("".join([*body[:5], "{not a trace}\n", *body[5:]]), encoding="utf-8")
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"converted-{workers}.jsonl"
        code, output = run(
            "--traces", str(source), "--index", str(synth_index_dir), "--out", str(out), "--workers", workers
        )
        assert code == 0, output
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert [line["status"] for line in lines(tmp_path / "converted-2.jsonl")][5] == "dropped"


def test_convert_in_process_keeps_the_order_of_its_sources(synth_index: SearchIndex) -> None:
    """The in-process path (a teacher's) converts in batches; an unreadable line's drop stays in its place."""
    traces = scripted_traces(synth_index, 7, seed=7)
    sources = iter([*traces[:5], "line 6: not a trace", *traces[5:]])
    counts: Counter[str] = Counter()
    written = list(_convert_all(sources, Converter(index=synth_index, spec=None), set(), 4, counts))
    assert written[5] == {"status": "dropped", "reason": "unreadable", "detail": "line 6: not a trace"}
    converted = written[:5] + written[6:]
    assert [line["episode_id"] for line in converted] == [t.episode.episode_id for t in traces]
    assert counts["dropped:unreadable"] == 1 and sum(counts.values()) == 8
