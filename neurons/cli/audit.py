"""The `arena audit` command: recompile a validator's revealed world round and re-judge its episodes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from arena.errors import ArenaError
from arena.index import open_index
from neurons.audit.check import AuditReport, audit_round
from neurons.chain.client import open_reader
from neurons.chain.signing import verify_document
from neurons.cli.console import fail
from neurons.errors import NeuronError
from neurons.settings import NETWORKS
from neurons.validator.settings import WorldConfig

_WORLD = WorldConfig()


def _lines(report: AuditReport) -> list[str]:
    head = "ok" if report.ok else f"{len(report.differences)} difference(s)"
    lines = [
        f"audit of {report.validator} round {report.round} (seed block {report.seed_block}): {head}",
        f"secret revealed: {'yes' if report.revealed else 'no'}; world {report.world_id or '-'}",
        f"episodes: {report.episodes} published, {report.rejudged} re-judged, {report.tasks} tasks",
    ]
    lines += [
        f"  {d.kind}: {d.detail}" + (f" (episode {d.episode_id})" if d.episode_id else "")
        for d in report.differences
    ]
    return lines


def audit_command(
    validator: Annotated[str, typer.Option("--validator", help="The validator's hotkey (ss58).")],
    round_index: Annotated[int, typer.Option("--round", min=0, help="The world round (block // period).")],
    published: Annotated[Path, typer.Option("--published", help="Publication root: <hotkey>/r<round>/.")],
    index: Annotated[
        Path, typer.Option("--index", help="The base search index the subnet's worlds are over.")
    ],
    netuid: Annotated[int, typer.Option("--netuid", min=0, help="The subnet.")],
    network: Annotated[
        str, typer.Option("--network", help=f"One of {', '.join(NETWORKS)} or a ws:// URL.")
    ] = ("finney"),
    local_chain: Annotated[
        Path | None, typer.Option("--local-chain", help="The local chain file (--network local).")
    ] = None,
    period_blocks: Annotated[
        int, typer.Option("--period-blocks", min=2, help="Blocks per world (ARENA_WORLD__PERIOD_BLOCKS).")
    ] = _WORLD.period_blocks,
    delay_blocks: Annotated[
        int,
        typer.Option(
            "--delay-blocks", min=1, help="Seed block after a world's start (ARENA_WORLD__DELAY_BLOCKS)."
        ),
    ] = _WORLD.delay_blocks,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Recompile a validator's revealed world round from the chain and re-judge what it published.

    Reads the validator's commitment as it stood before the round's seed block and its reveal now,
    compiles its world over the base index, and checks its publication: the signed round document,
    each signed artifact, each task (one of the world's, in the public draw order), and each
    judgment re-derived from its tool log. A validator that did not reveal is flagged. Exits 0 when
    nothing differs, 1 when something does, 2 on bad input.

    Example: arena audit --network local --local-chain var/demo/chain.db --netuid 1
        --validator 5F... --round 12 --published var/demo/validator/published --index var/demo/index
        --period-blocks 10 --delay-blocks 2 --json
    """
    if delay_blocks >= period_blocks:
        fail("--delay-blocks must be below --period-blocks")
    try:
        chain = open_reader(network, netuid, local_chain_path=local_chain)
    except (ValueError, NeuronError) as exc:
        fail(str(exc))

    async def run() -> AuditReport:
        try:
            with open_index(index) as base:
                return await audit_round(
                    chain,
                    base,
                    validator=validator,
                    netuid=netuid,
                    round_index=round_index,
                    period_blocks=period_blocks,
                    delay_blocks=delay_blocks,
                    published=published,
                    verify=verify_document,
                )
        finally:
            await chain.close()

    try:
        report = asyncio.run(run())
    except ArenaError as exc:
        fail(str(exc))
    except NeuronError as exc:
        fail(str(exc), code=1)
    if as_json:
        typer.echo(json.dumps(report.to_json(), sort_keys=True))
    else:
        for line in _lines(report):
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(1)
