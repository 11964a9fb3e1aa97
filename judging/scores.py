"""Per-miner scores over a window of judged episodes, and the weight vector they imply (pure functions).

The policy, in one place:

1. Each hotkey's most recent ``window`` scored episodes count (older ones fall out), so a miner
   that stops performing loses weight within one window.
2. A miner's standing is the Wilson lower confidence bound of its mean score (scores are in
   [0, 1]; the bound treats the mean as a proportion over ``n`` episodes). One lucky task gives
   n=1 and a low bound, so it cannot take the emission from a miner that is steadily good.
3. Episodes whose judgment is unscored (an outage on our side) never enter the window; miner
   faults (timeouts, malformed replies) enter as 0.
4. An episode enters with its credit: its score, divided among the hotkeys that copy one
   another where they brought the same work (``judging.duplicates.shared_by``, over the windows
   read; ``copy_share``). Copies of one agent earn one hotkey's credit between them; independent
   miners that converge on a task keep theirs. With ``unattested_factor`` below 1 an episode
   whose tool calls were not all attested by the inference gateway (axis other than
   ``A-attested``) counts that share of its score.
5. Weights are proportional to ``bound ** power`` over registered hotkeys, mapped to their
   *current* uid at submission time (a uid re-registered by a new hotkey inherits nothing).
   ``burn_share`` of the emission goes to the owner uid; with no positive score, all of it does.
6. Every value is finite and non-negative, the order is by uid, and the same inputs always give
   the same vector.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import model_validator

from arena.types import Frozen
from judging.duplicates import shared_by


@dataclass(frozen=True)
class ScoreSample:
    """One judged episode's contribution: who, how well, and when (for windowing)."""

    hotkey: str
    score: float | None  # None: unscored on our side; excluded from the window
    order: int  # monotonic position (e.g. block number, or a sequence); later means newer
    task_id: str | None = None  # the task, and the work done on it (``judging.duplicates``);
    work: str | None = None  # None: no work recorded, credited as its own
    attested: bool = False  # every tool call attested by the inference gateway (axis A-attested)


class ScorePolicy(Frozen):
    """The tunables of the weights policy (validated, frozen)."""

    window: int = 64
    min_samples: int = 1
    z: float = 1.96
    power: float = 1.0
    burn_share: float = 0.0
    # Two hotkeys whose work was the same on more than this share of the tasks both scored on
    # share the credit of that work (``judging.duplicates``): 1.0 never shares, 0.0 always does.
    copy_share: float = 0.5
    # What an episode whose calls are not all attested (axis other than A-attested) counts of its
    # score. 1.0, the default: attestation is not rewarded, only recorded (docs/judging.md says why).
    unattested_factor: float = 1.0

    @model_validator(mode="after")
    def _meaningful(self) -> ScorePolicy:
        if self.window < 1 or self.min_samples < 1:
            raise ValueError("window and min_samples must be >= 1")
        if not (self.z >= 0 and math.isfinite(self.z)):
            raise ValueError("z must be finite and >= 0")
        if not (self.power > 0 and math.isfinite(self.power)):
            raise ValueError("power must be finite and > 0")
        if not 0.0 <= self.burn_share <= 1.0:
            raise ValueError("burn_share must be within [0, 1]")
        if not 0.0 <= self.copy_share <= 1.0:
            raise ValueError("copy_share must be within [0, 1]")
        if not 0.0 <= self.unattested_factor <= 1.0:
            raise ValueError("unattested_factor must be within [0, 1]")
        return self


@dataclass(frozen=True)
class MinerStanding:
    """A hotkey's windowed score: sample count, mean, and the Wilson lower bound used for weights."""

    hotkey: str
    n: int
    mean: float
    lower: float


def wilson_lower_bound(mean: float, n: int, z: float) -> float:
    """Return the Wilson score interval's lower bound for a mean in [0, 1] over ``n`` samples."""
    if n <= 0:
        return 0.0
    p = min(max(mean, 0.0), 1.0)
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z2 / n))


def standings(samples: Iterable[ScoreSample], policy: ScorePolicy) -> dict[str, MinerStanding]:
    """Compute each hotkey's standing over the credits of its most recent ``policy.window`` scored samples.

    A sample's credit is its score divided by how many copies share its work (module docstring,
    4). Non-finite scores are treated as 0 (a defensive floor; judgments are validated upstream).
    """
    per_hotkey: dict[str, list[ScoreSample]] = {}
    for sample in samples:
        if sample.score is None:
            continue
        per_hotkey.setdefault(sample.hotkey, []).append(sample)
    windows = {h: sorted(kept, key=lambda s: s.order)[-policy.window :] for h, kept in per_hotkey.items()}
    scoring = [s for recent in windows.values() for s in recent if _clamp(s.score) > 0]
    # Keyed by identity: two samples may be equal and still be two episodes.
    divisor = dict(zip(map(id, scoring), shared_by(scoring, copy_share=policy.copy_share), strict=True))
    result: dict[str, MinerStanding] = {}
    for hotkey in sorted(windows):
        values = [
            _clamp(s.score) / divisor.get(id(s), 1) * (1.0 if s.attested else policy.unattested_factor)
            for s in windows[hotkey]
        ]
        n = len(values)
        mean = sum(values) / n
        lower = wilson_lower_bound(mean, n, policy.z) if n >= policy.min_samples else 0.0
        result[hotkey] = MinerStanding(hotkey=hotkey, n=n, mean=mean, lower=lower)
    return result


def weight_vector(
    standing: Mapping[str, MinerStanding],
    hotkey_to_uid: Mapping[str, int],
    *,
    owner_uid: int,
    policy: ScorePolicy,
) -> tuple[list[int], list[float]]:
    """Turn standings into a normalised weight vector over the metagraph's uids.

    Args:
        standing: windowed standings keyed by hotkey.
        hotkey_to_uid: the current metagraph's hotkey -> uid map (unregistered hotkeys drop out).
        owner_uid: the subnet owner's uid, which receives the burn share.
        policy: the weights policy.

    Returns:
        ``(uids, weights)`` sorted by uid, weights finite, non-negative, summing to 1.
    """
    raw: dict[int, float] = {}
    for hotkey, entry in standing.items():
        uid = hotkey_to_uid.get(hotkey)
        if uid is None or uid == owner_uid:
            continue
        value = _clamp(entry.lower) ** policy.power
        if value > 0:
            raw[uid] = value
    total = sum(raw.values())
    weights: dict[int, float] = {}
    if total > 0:
        scale = (1.0 - policy.burn_share) / total
        weights = {uid: v * scale for uid, v in raw.items()}
        if policy.burn_share > 0:
            weights[owner_uid] = policy.burn_share
    else:
        weights = {owner_uid: 1.0}
    uids = sorted(weights)
    return uids, [weights[uid] for uid in uids]


def _clamp(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        return 0.0
    return min(max(value, 0.0), 1.0)
