"""The `arena world` command group: compile a world pack from a seed over a base index, show a pack."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from arena.errors import ArenaError
from arena.index import open_index
from arena.world.compile import compile_world
from arena.world.pack import load_pack, pack_summary, save_pack
from neurons.cli.console import fail

app = typer.Typer(
    help="World packs: compile a seeded world over a base index, show a pack's summary.",
    no_args_is_help=True,
    add_completion=False,
)


def _lines(summary: dict[str, Any]) -> list[str]:
    delta, vouchers, tasks = summary["delta"], summary["vouchers"], summary["tasks"]
    return [
        f"world {summary['world_id']} (pack {summary['pack_hash']})",
        f"seed {summary['seed_hex']}  base {summary['base_hash']}  as of {summary['as_of']}",
        (
            f"delta: {delta['price_moves']} price moves, {delta['stock_levels']} stock levels "
            f"({delta['stockouts']} out of stock), {delta['new_listings']} new listings, "
            f"{delta['delisted']} delisted; {delta['changes']} changes during an episode"
        ),
        f"vouchers: {vouchers['total']} ({vouchers['valid']} valid)",
        (
            f"tasks: {tasks['total']} ({tasks['cheapest_in_stock']} cheapest in stock, "
            f"{tasks['world_voucher']} world voucher; "
            f"{tasks['held_back_constraints']} held-back constraints; {tasks['revised']} revised by a change)"
        ),
    ]


def _emit(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        for line in _lines(summary):
            typer.echo(line)


@app.command("compile")
def compile_command(
    seed: Annotated[str, typer.Option("--seed", help="The world seed (text; its UTF-8 bytes are hashed).")],
    base: Annotated[Path, typer.Option("--base", help="Base search index directory (arena catalog build).")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write the pack into.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Compile the world of a seed over a base index into a pack directory (same seed and base, same bytes).

    Example: arena world compile --seed round-42 --base var/index --out var/worlds/round-42
    """
    started = time.perf_counter()
    try:
        with open_index(base) as index:
            pack = compile_world(seed, index)
        save_pack(pack, out)
    except ArenaError as exc:
        fail(str(exc))
    summary = {**pack_summary(pack), "out": str(out), "seconds": round(time.perf_counter() - started, 3)}
    _emit(summary, as_json)


@app.command("show")
def show_command(
    pack_dir: Annotated[Path, typer.Argument(help="A world pack directory (arena world compile).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Show a world pack's summary: seed, base and pack hashes, delta counts, vouchers, tasks.

    The pack is verified first: a part whose hash disagrees with the manifest is refused.

    Example: arena world show var/worlds/round-42 --json
    """
    try:
        pack = load_pack(pack_dir)
    except ArenaError as exc:
        fail(str(exc))
    _emit(pack_summary(pack), as_json)
