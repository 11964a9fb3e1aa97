"""Two validators on the local chain, each on a world of its own: secrets committed before, revealed after.

Each runs through ``serve --once`` (its tool server, the real SDK client, SQLite) against the same
two miners. Then ``arena audit`` of each recompiles its world from the chain and re-judges every
episode it published, exactly; a tampered judgment, a forged artifact and a withheld reveal are
flagged.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from arena.types import canonical_json, content_hash
from arena.world.commitment import parse_commitment
from arena.world.seed import world_round_at
from judging.types import Judgment
from neurons.audit.publication import ROUND_FILE, read_publication, round_directory
from neurons.chain.local.state import LocalChain, read_extrinsics
from neurons.chain.signing import sign_document
from neurons.chain.wallets import register_wallet
from neurons.cli import app
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.process import serve
from neurons.validator.settings import ValidatorSettings
from storage.artifacts import signed_payload
from storage.db import make_engine, make_sessionmaker
from storage.repository import iter_judged
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.rig import (
    WORLD_DELAY,
    WORLD_PERIOD,
    failing_agent,
    next_world,
    serve_miners,
    world_validator,
)

PERIOD, DELAY, BLOCK = WORLD_PERIOD, WORLD_DELAY, 0.25
runner = CliRunner()


async def _round(settings: ValidatorSettings) -> dict[str, Any]:
    report = await serve(settings, once=True)
    assert report is not None and not report["failed"], report
    return dict(report["round"])


async def _audit(
    net: LocalNet, settings: ValidatorSettings, hotkey: str, round_index: int, root: Path
) -> Any:
    """``arena audit ... --json`` (in a thread: the command runs its own event loop)."""
    args = ["audit", "--network", "local", "--local-chain", str(net.path), "--netuid", str(NETUID)]
    args += ["--validator", hotkey, "--round", str(round_index), "--published", str(root)]
    args += ["--index", str(settings.index), "--period-blocks", str(PERIOD), "--delay-blocks", str(DELAY)]
    return await asyncio.to_thread(runner.invoke, app, [*args, "--json"])


def _finished(settings: ValidatorSettings) -> dict[str, float]:
    """Each stored episode's end (unix seconds), by pack hash: the last deadline of each world."""
    engine = make_engine(settings.database_url())
    ends: dict[str, float] = {}
    try:
        with make_sessionmaker(engine)() as session:
            for trace in iter_judged(session):
                pack = trace.episode.pack_hash or ""
                ends[pack] = max(ends.get(pack, 0.0), trace.episode.finished_at.timestamp())
    finally:
        engine.dispose()
    return ends


def _text(params: dict[str, Any]) -> str:
    """The text of a logged set_commitment call (one Raw field)."""
    (field,) = params["info"]["fields"][0]
    (data,) = field.values()
    return bytes.fromhex(data.removeprefix("0x")).decode()


def _resign(
    directory: Path, episode_id: str, settings: ValidatorSettings, net: LocalNet, wallet: str
) -> None:
    """Raise one published score as a dishonest validator would: artifact and round document re-signed."""
    path = directory / f"{episode_id}.json"
    document = json.loads(path.read_bytes())
    raised = Judgment.model_validate({**document["judgment"], "score": 1.0, "content_hash": ""})
    document["judgment"] = raised.model_dump(mode="json")  # a whole judgment, its hash made anew
    body = {k: v for k, v in document.items() if k not in ("artifact_id", "validator_hotkey", "signature")}
    document["artifact_id"] = content_hash(body, prefix="a-")
    document["signature"] = sign_document(net.wallets[wallet], signed_payload(document))
    path.write_text(canonical_json(document))
    publication = read_publication(directory)
    artifacts = {**publication.artifacts, episode_id: document["artifact_id"]}
    changed = publication.model_copy(update={"artifacts": artifacts, "signature": ""})
    signed = changed.model_copy(update={"signature": sign_document(net.wallets[wallet], changed.payload())})
    (directory / ROUND_FILE).write_text(canonical_json(signed.document()))


async def test_two_validators_run_worlds_of_their_own_and_each_round_audits_exactly(
    make_net: Callable[..., LocalNet], world_base_dir: Path, tmp_path: Path
) -> None:
    net = make_net(block_seconds=BLOCK)
    register_wallet(net.path, net.wallets["stranger"], stake=1000.0, validator_permit=True)
    validators = {
        name: world_validator(net, tmp_path, world_base_dir, name) for name in ("validator", "stranger")
    }
    served: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        await serve_miners(stack, net, {"miner1": scripted_agent, "miner2": failing_agent})
        await next_world(net)
        # A first start: no secret of theirs was on chain before this world's seed block.
        for settings in validators.values():
            assert (await _round(settings))["result"] == "no_commitment"
        await next_world(net)
        for name, settings in validators.items():
            summary = await _round(settings)
            assert summary["result"] == "ok" and summary["stored"] == 6, summary
            served[name] = summary["world"]["round"]
        await next_world(net)  # the next round reveals the last world's secret and publishes it
        for settings in validators.values():
            assert (await _round(settings))["result"] == "ok"
    worlds = {}
    for name, settings in validators.items():
        hotkey, k = net.hotkey(name), served[name]
        root = settings.publish_path()
        assert (round_directory(root, hotkey, k) / ROUND_FILE).is_file()
        result = await _audit(net, settings, hotkey, k, root)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["ok"] and report["revealed"] and report["differences"] == [], report
        assert (report["episodes"], report["rejudged"], report["tasks"]) == (6, 6, 3)
        worlds[name] = report["pack_hash"]
        # Committed before the world's seed block, revealed after its last episode ended.
        posts = [
            r for r in read_extrinsics(net.path, call="Commitments.set_commitment") if r.signer == hotkey
        ]
        records = [parse_commitment(_text(post.params)) for post in posts]
        assert posts and all(record is not None for record in records) and posts[0].error is None
        assert posts[0].block < k * PERIOD + DELAY
        reveal = next(
            p for p, r in zip(posts, records, strict=True) if r is not None and (r.revealed_round or -1) >= k
        )
        last_episode = _finished(settings)[report["pack_hash"]]
        assert LocalChain(net.path).config.block_time(reveal.block) >= last_episode - BLOCK
    assert worlds["validator"] != worlds["stranger"]  # different secrets: different worlds
    # A dishonest validator raises one score and signs it: the re-judge catches it.
    name = "validator"
    settings, hotkey, k = validators[name], net.hotkey(name), served[name]
    tampered = tmp_path / "tampered"
    shutil.copytree(settings.publish_path(), tampered)
    directory = round_directory(tampered, hotkey, k)
    episodes = sorted(read_publication(directory).artifacts)
    victim = next(
        e for e in episodes if json.loads((directory / f"{e}.json").read_bytes())["judgment"]["score"] < 1
    )
    _resign(directory, victim, settings, net, name)
    report = json.loads((await _audit(net, settings, hotkey, k, tampered)).stdout)
    assert not report["ok"] and [(d["kind"], d["episode_id"]) for d in report["differences"]] == [
        ("judgment", victim)
    ]
    # An artifact edited by anyone else no longer carries the validator's signature.
    path = directory / f"{victim}.json"
    document = json.loads(path.read_bytes())
    document["judgment"]["success"] = not document["judgment"]["success"]
    path.write_text(json.dumps(document))
    report = json.loads((await _audit(net, settings, hotkey, k, tampered)).stdout)
    assert [d["kind"] for d in report["differences"]] == ["artifact"]
    # The world it runs now is not revealed yet: audited now, it is flagged, and the command fails.
    current = world_round_at(LocalChain(net.path).block(), period=PERIOD, delay=DELAY)
    assert current is not None
    result = await _audit(net, settings, hotkey, current.index, settings.publish_path())
    assert result.exit_code == 1
    kinds = {d["kind"] for d in json.loads(result.stdout)["differences"]}
    assert "not_revealed" in kinds
