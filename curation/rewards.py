"""The observed turn rewards of a judged episode (the GRPO rows' ``observed_turn_rewards``)."""

from __future__ import annotations

from judging.facts import result_facts
from storage.records import JudgedTrace


def turn_rewards(trace: JudgedTrace) -> list[float]:
    """Per logged tool call, the share of the task's gold products first shown to the agent by that call.

    Read from the validator's tool log (never from the miner's transcript), so it is verified:
    the list sums to the share of gold products the agent ever saw, and the call that surfaced
    each one gets its credit.
    """
    gold = {item.product_id for item in trace.task.gold}
    seen: set[str] = set()
    rewards: list[float] = []
    for entry in trace.tool_log:
        found = result_facts(entry.result).product_ids & gold - seen if entry.status == "ok" else set()
        seen |= found
        rewards.append(round(len(found) / len(gold), 6))
    return rewards
