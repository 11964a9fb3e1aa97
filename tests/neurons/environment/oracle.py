"""An honest agent that knows the answer: the good episode the environment's tests and benchmarks play.

It asks one question per held-back need (naming its topic, as ``arena.world.shopper`` reads
questions), searches each gold item's title cheapest first until the listing that is the answer
at the version the answer will see shows up, states the price that result showed, views the
listing, recommends it and terminates: the episode a validator scores 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from arena.world.changes import truth_at
from arena.world.types import HeldConstraint, HeldService, WorldTask
from judging.facts import result_facts
from neurons.environment.session import Environment
from neurons.environment.types import Action, Final, StepOutcome

QUESTION_WORDS = {
    "freeShipping": "Do you need free shipping?",
    "COD": "Do you want to pay cash on delivery?",
    "official": "Does it have to be from an official store?",
    "flashsale": "Does it have to be on a flash sale?",
}
MAX_PAGES = 5


def question(held: HeldConstraint) -> str:
    """A question that asks for one held-back need by its topic."""
    if isinstance(held, HeldService):
        return QUESTION_WORDS[held.service]
    return f"Which {held.key.replace('_', ' ')} do you need?"


@dataclass
class Play:
    """What an episode played: every step's outcome, in order."""

    outcomes: list[StepOutcome]

    @property
    def final(self) -> Final:
        """The episode's end: the validator's score and the return."""
        final = self.outcomes[-1].final
        if final is None:
            raise AssertionError("the episode did not end")
        return final

    @property
    def total(self) -> float:
        """The episode's return (its final total reward)."""
        return self.final.total_reward

    @property
    def score(self) -> float:
        """The validator's score of the episode."""
        return self.final.score


def step(
    env: Environment, session: str, tool: str, arguments: dict[str, object], say: str = ""
) -> StepOutcome:
    """One step with JSON arguments and the assistant's text."""
    return env.step(session, Action(tool=tool, arguments=json.dumps(arguments), content=say or None))


def answer_ids(env: Environment, task: WorldTask, seq: int) -> list[str]:
    """The task's answer as it is judged at the world version the call with ``seq`` sees."""
    world = env.tasks.world
    version = world.overlay.delta.version_at(seq) if world is not None else 0
    truth = truth_at(task, version) or task.task
    return [item.product_id for item in truth.gold]


def solve(
    env: Environment,
    task: WorldTask,
    *,
    prelude: Sequence[tuple[str, dict[str, object]]] = (),
    ask: bool = True,
    say: str | None = None,
    extra: int = 0,
) -> Play:
    """Play the honest episode on ``task``; the arguments bend it for the reward-hacking cases.

    Searches until every id of the answer at the version the recommendation will see has shown
    up (a change mid-episode may move it), each item's title cheapest first, page by page.

    Args:
        env: the environment.
        task: the world task.
        prelude: calls played first (tool, arguments).
        ask: ask the held-back needs (off: the request as stated is all the agent knows).
        say: the text that comes with the views (None: the prices the searches showed).
        extra: how many more views of the answer, each with the same text.
    """
    session = env.reset(task_id=task.task.task_id).session_id
    outcomes = [step(env, session, tool, arguments) for tool, arguments in prelude]
    if ask:
        outcomes += [
            step(env, session, "ask_user", {"question": question(h)}) for h in task.profile.held_back
        ]
    shown: dict[str, float] = {}
    pages = [0] * len(task.task.gold)
    while True:
        chosen = answer_ids(env, task, len(outcomes) + extra + 1)  # after the views, the recommendation
        missing = [i for i, pid in enumerate(chosen) if pid not in shown]
        if not missing:
            break
        item = missing[0]
        pages[item] += 1
        if pages[item] > MAX_PAGES:
            raise AssertionError(f"{chosen[item]} not found by its title in {MAX_PAGES} pages")
        title = task.task.gold[item].titles[0]
        found = step(env, session, "find_product", {"q": title, "page": pages[item], "sort": "priceasc"})
        outcomes.append(found)
        shown |= result_facts(found.result).prices
    claim = "; ".join(f"{pid} costs {shown[pid]:.2f}" for pid in chosen) if say is None else say
    for _ in range(extra + 1):
        view = {"product_ids": ",".join(chosen)}
        outcomes.append(step(env, session, "view_product_information", view, claim))
    outcomes.append(step(env, session, "recommend_product", {"product_ids": ",".join(chosen)}))
    outcomes.append(step(env, session, "terminate", {"status": "success"}))
    return Play(outcomes)


def answer(env: Environment, session: str, ids: Sequence[str]) -> float:
    """Recommend ``ids``, terminate, and return the episode's return."""
    step(env, session, "recommend_product", {"product_ids": ",".join(ids)})
    return Play([step(env, session, "terminate", {"status": "success"})]).total
