"""Start-up cost: a command imports only what it uses (no datasets, pyarrow, pandas, torch or nltk to start).

Each case runs in a fresh interpreter, which prints ``sorted(sys.modules)`` once the command has
stopped; ``arena judge`` and ``arena miner`` are stopped by their own input checks, after their
command module (and, for the miner, its process module) is imported and the command body started.
Times are not asserted here: ``bench/startup.py`` measures them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.index import build_index, open_index
from arena.tools import ToolContext
from judging.replay import replay_log
from tests.judging.factory import SHOP_QUERY, shop_task
from tests.neurons.cli.test_judge import SHOP_STEPS, play

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("datasets", "pyarrow", "pandas", "torch", "nltk")
COMMANDS = ("catalog", "curate", "demo", "evaluate", "judge", "miner", "tasks", "tools", "validator")
COMMAND_MODULES = {f"neurons.cli.{name}" for name in COMMANDS}
_SCRIPT = """
import json, sys
args = json.loads(sys.argv[1])
code = None
if args is not None:
    sys.argv = ["arena", *args]
    from neurons.cli import main
    try:
        main()
    except SystemExit as exc:
        code = exc.code
else:
    import neurons.cli
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_modules(args: list[str] | None, tmp_path: Path) -> tuple[object, set[str]]:
    """Run ``arena <args>`` (None: only ``import neurons.cli``) in a fresh interpreter."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("ARENA_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], set(result["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


def test_importing_the_cli_loads_no_command_and_nothing_heavy(tmp_path: Path) -> None:
    _, modules = loaded_modules(None, tmp_path)
    assert heavy(modules) == []
    assert modules & COMMAND_MODULES == set()


@pytest.mark.parametrize("args", [["--help"], ["version"]])
def test_help_and_version_import_no_command_module(args: list[str], tmp_path: Path) -> None:
    code, modules = loaded_modules(args, tmp_path)
    assert code in (0, None)
    assert heavy(modules) == []
    assert modules & COMMAND_MODULES == set()


def test_judge_starts_without_the_heavy_libraries(tmp_path: Path) -> None:
    # The body's first check refuses the intent: the command module and all it imports are loaded.
    args = ["judge", "--index", "idx", "--task", "t.json", "--trajectory", "x.json", "--intent", "nonsense"]
    code, modules = loaded_modules(args, tmp_path)
    assert code == 2
    assert "neurons.cli.judge" in modules and "judging.judge" in modules
    assert heavy(modules) == []
    assert modules & COMMAND_MODULES == {"neurons.cli.judge"}


def test_judging_with_a_tool_log_never_loads_the_stemmer(tmp_path: Path) -> None:
    # A whole run: with the episode's log given nothing is searched, so nltk (and scipy) stay out.
    index_dir = tmp_path / "index"
    build_index([ROOT / "tests" / "fixtures" / "catalog.jsonl"], index_dir)
    trajectory = play(index_dir, SHOP_QUERY, SHOP_STEPS)
    index = open_index(index_dir)
    log = replay_log(trajectory, ToolContext(index=index))
    index.close()
    files = {"task": shop_task().model_dump_json(), "trajectory": json.dumps(trajectory.to_wire())}
    files["tool-log"] = json.dumps([entry.model_dump(mode="json") for entry in log])
    args = ["judge", "--index", str(index_dir)]
    for flag, body in files.items():
        (tmp_path / f"{flag}.json").write_text(body, encoding="utf-8")
        args += [f"--{flag}", str(tmp_path / f"{flag}.json")]
    code, modules = loaded_modules(args, tmp_path)
    assert code in (0, None)
    assert heavy(modules) == [] and "scipy" not in modules


def test_the_miner_starts_without_the_heavy_libraries(tmp_path: Path) -> None:
    # The miner's process module is imported and refuses the settings (a local chain without its file).
    code, modules = loaded_modules(["miner", "--network", "local", "--netuid", "1"], tmp_path)
    assert code == 2
    assert "neurons.miner.process" in modules and "neurons.miner.app" in modules
    assert heavy(modules) == []
    assert modules & COMMAND_MODULES == {"neurons.cli.miner"}
