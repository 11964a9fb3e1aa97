"""Four hand-made product tasks on the fixture catalog, and policies that solve each a known number of times.

Each gold item asks for the gold title and a price bound that the scripted wrong answer also
meets, so a wrong answer has rule score 0.5 (title missed, price met) and a right one 1.0:

| task | gold | wrong | right samples (of 4) | hallucinates |
| --- | --- | --- | --- | --- |
| pegasus | 1001 | 1002 | 0, 1, 2 | no |
| chili | 4001 | 4003 | 3 | no |
| calculator | 5003 | 5005 | none | yes (never viewed) |
| cymbal | 2002 | 2001 | all | no |
"""

from __future__ import annotations

from pathlib import Path

from arena.tasks import save_tasks
from arena.types import GoldItem, PriceConstraint, Task
from neurons.evaluation.settings import sample_seed
from tests.neurons.policy_stub import Script

K = 4
SEED = 0
# name -> (query, search words, gold id, gold title, price bound, wrong id, right samples, hallucinates)
WORLD = {
    "pegasus": (
        "I want Nike Air Zoom Pegasus running shoes for men under 5000",
        "nike pegasus running shoes",
        "1001",
        "Nike Air Zoom Pegasus Running Shoes Men",
        5000.0,
        "1002",
        (0, 1, 2),
        False,
    ),
    "chili": (
        "Looking for a Hyco chili powder 1 kilo bag below 500 pesos",
        "chili powder",
        "4001",
        "Hyco Chili Powder 1 kilo Bag",
        500.0,
        "4003",
        (3,),
        False,
    ),
    "calculator": (
        "Need a basic calculator, orange, 12 digit, under 200",
        "basic calculator",
        "5003",
        "Basic Calculator Orange 12 Digit Battery Powered",
        200.0,
        "5005",
        (),
        True,
    ),
    "cymbal": (
        "A Zildjian crash cymbal 16 inch in bronze, less than 7000",
        "crash cymbal",
        "2002",
        "Zildjian Crash Cymbal 16 inch Bronze",
        7000.0,
        "2001",
        (0, 1, 2, 3),
        False,
    ),
}
# Hand-computed from the table above (k = 4).
EXPECTED_SUCCESSES = {"pegasus": 3, "chili": 1, "calculator": 0, "cymbal": 4}
EXPECTED_ASR = (3 + 1 + 0 + 4) / 16  # 0.5
# pass@2 per task: 1 - C(n-c, 2) / C(4, 2): pegasus 1 - 0/6, chili 1 - 3/6, calculator 0, cymbal 1.
EXPECTED_PASS_AT_2 = (1.0 + 0.5 + 0.0 + 1.0) / 4  # 0.625
EXPECTED_PASS_AT_4 = (1.0 + 1.0 + 0.0 + 1.0) / 4  # 0.75
# CAR: per task (c * 1.0 + (4 - c) * 0.5) / 4.
EXPECTED_CAR = ((3 + 0.5) / 4 + (1 + 1.5) / 4 + 0.5 + 1.0) / 4  # 0.75


def eval_tasks(pool: str = "never_touch") -> dict[str, Task]:
    """The four tasks, by name, each in its own leak cluster ``lc-<name>``."""
    tasks = {}
    for name, (query, _, gold, title, bound, *_rest) in WORLD.items():
        item = GoldItem(
            product_id=gold, titles=(title,), price=(PriceConstraint(mode="less than", high=bound),)
        )
        tasks[name] = Task(
            intent="product",
            query=query,
            gold=(item,),
            pool=pool,
            leak_cluster=f"lc-{name}",  # type: ignore[arg-type]
        )
    return tasks


def scripts(tasks: dict[str, Task], *, seed: int = SEED, all_right: bool = False) -> dict[str, Script]:
    """The policy scripts, keyed by query; right samples are named by their sampling seeds."""
    out = {}
    for name, (query, q, gold, _, _, wrong, right, hallucinates) in WORLD.items():
        task = tasks[name]
        samples = range(K) if all_right else right
        seeds = frozenset(sample_seed(seed, task.task_id, j) for j in samples)
        out[query] = Script(q=q, gold=gold, wrong=wrong, success_seeds=seeds, hallucinate_wrong=hallucinates)
    return out


def write_tasks(path: Path, tasks: dict[str, Task]) -> Path:
    """Save the tasks as our task JSONL."""
    save_tasks(tasks.values(), path)
    return path
