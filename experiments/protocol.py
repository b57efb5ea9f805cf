"""The validation protocol (docs/validation.md), implemented once for every experiment set.

A claim of a paper is judged here and nowhere else::

    samples over seeds --Estimate.of--> mean and 95% Student-t interval
                                           |
    claim type:  point / range ------------+--> judge_point, judge_range    R, D or N
                 direction / ordering -----+--> judge_direction, judge_order
                 no effect ----------------+--> judge_no_effect
    several items (apps, layouts) ------------> worst: the lowest of the items' verdicts

"Beyond noise" has one meaning: a 95% interval that excludes the reference (zero for a
difference, one for a ratio) -- the interval of one estimate, of per-seed paired differences, or
Welch's interval of the difference of two unpaired means (``welch``, the same decision as
``scipy.stats.ttest_ind(equal_var=False)`` at p < 0.05).

The band, the no-effect margin, the confidence and the seed count are module constants: a script
never passes its own. The estimates and the noise test themselves live in the package
(``vcpusim.stats``), which ``vcpusim.aggregate`` and ``vcpusim.compare`` use too.
"""

from __future__ import annotations

from typing import Iterable, Sequence

# The estimates, intervals and noise tests are the package's own (vcpusim.stats): a user's
# `vcpusim compare` and a ledger's verdict are one test.
from vcpusim.stats import (  # noqa: F401  (re-exported: the protocol's vocabulary)
    CONFIDENCE,
    NO_ESTIMATE,
    Estimate,
    beyond_noise,
    change,
    relative,
    welch,
)

# --- What a claim is -----------------------------------------------------------------------------

#: Kinds: only predictions count in the tallies.
PREDICTION = "prediction"
#: A value the model was fitted to, or an input of the setup: shown (with the constant it feeds),
#: never counted.
CALIBRATION = "calibration"
#: Not a claim of the paper (a mechanism check, a question the paper did not ask): shown apart.
EXTRA = "extra"
KINDS = (PREDICTION, CALIBRATION, EXTRA)

#: Types: what the paper states.
POINT = "point"  # one value ("+8%", "1761 IPIs/s", "up to 75%" as the largest item's value)
RANGE = "range"  # a range the paper states ("8-13%")
DIRECTION = "direction"  # a direction or an ordering ("faster", "A > B > C")
NO_EFFECT = "no effect"  # "unaffected", "comparable", "little effect"
TYPES = (POINT, RANGE, DIRECTION, NO_EFFECT)

#: Verdicts: reproduced (direction and magnitude), direction only, not reproduced.
R, D, N = "R", "D", "N"
VERDICTS = (R, D, N)

#: Causes of a miss (a D or N prediction).
MECHANISM = "mechanism missing or wrong"
WORKLOAD = "workload calibration"
AMBIGUOUS = "paper ambiguous"
MEASURED = "measured differently"
CAUSES = (MECHANISM, WORKLOAD, AMBIGUOUS, MEASURED)

# --- The protocol's numbers (docs/validation.md; never passed by a script) -----------------------

#: A point value is in range within this fraction of the paper's value (relative).
BAND = 0.25
#: A "no effect" claim holds when the 95% interval of our relative effect lies within this margin.
NO_EFFECT_MARGIN = 0.05
#: Seeds per point of a full run.
MIN_SEEDS = 5



# --- Verdicts ------------------------------------------------------------------------------------


def in_band(ours: float, paper: float) -> bool:
    """Within ``BAND`` of the paper's value, relative to it."""
    return abs(ours - paper) <= BAND * abs(paper)


def _holds(ours: Estimate, sign: int, ref: float) -> bool:
    """The direction ``sign`` (+1 above ``ref``, -1 below) holds beyond noise."""
    return ours.known and sign * (ours.mean - ref) > 0 and ours.excludes(ref)


def judge_point(ours: Estimate, paper: float, *, ref: float | None = None,
                paper_range: tuple[float, float] | None = None, sign: int | None = None) -> str:
    """A point value. With a reference (0 for a change, 1 for a ratio, our baseline's value): R
    when the paper's direction holds beyond noise and the mean is within the band of ``paper``
    (or within the paper's own stated range); D when the direction holds beyond noise but the
    magnitude is outside; N otherwise. The paper's direction is the side of ``ref`` its value lies
    on, unless the paper states its own baseline or direction: then ``sign`` (+1 up, -1 down;
    for a level beside a baseline, the sign of the paper's value minus the paper's baseline,
    since our baseline is not the paper's). Without a reference (an absolute level) there is no
    direction: R within the band (or range), N otherwise."""
    if not ours.known:
        return N
    close = in_band(ours.mean, paper) or (paper_range is not None and paper_range[0] <= ours.mean <= paper_range[1])
    if ref is None:
        return R if close else N
    if sign is None:
        sign = (paper > ref) - (paper < ref)
    if sign not in (1, -1):
        raise ValueError("a point value equal to its reference is a 'no effect' claim (judge_no_effect)")
    if not _holds(ours, sign, ref):
        return N
    return R if close else D


def judge_range(ours: Estimate, lo: float, hi: float, *, ref: float | None = None) -> str:
    """A range the paper states: R when the mean lies in [lo, hi] and, if the range lies on one
    side of ``ref``, that direction holds beyond noise; D when that direction holds beyond noise
    but the mean is outside the range; N otherwise. A range that contains ``ref`` (or no ``ref``)
    claims no direction: R inside, N outside."""
    if lo > hi:
        raise ValueError(f"range [{lo}, {hi}] is reversed")
    if not ours.known:
        return N
    inside = lo <= ours.mean <= hi
    if ref is None or lo <= ref <= hi:
        return R if inside else N
    sign = 1 if lo > ref else -1
    if not _holds(ours, sign, ref):
        return N
    return R if inside else D


def judge_direction(ours: Estimate, sign: int, *, ref: float = 0.0) -> str:
    """A direction: ``sign`` = +1 (above ``ref``: faster, more, improves) or -1 (below). R when it
    holds beyond noise, N otherwise (a direction claim has no magnitude, so no D)."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, got {sign}")
    return R if _holds(ours, sign, ref) else N


def judge_holds(holds_beyond_noise: bool) -> str:
    """A direction decided by a test the script made with this module's functions (``welch``,
    ``beyond_noise``, ``Estimate.excludes``): R when it holds beyond noise, N otherwise."""
    return R if holds_beyond_noise else N


def judge_order(items: Sequence[Estimate], *, paired_diffs: Sequence[Estimate] | None = None) -> str:
    """An ordering ``items[0] > items[1] > ...``: R when every adjacent pair is apart in the stated
    order beyond noise (Welch's interval of the difference, or the given per-seed paired
    differences ``items[i] - items[i+1]``), N otherwise."""
    diffs = paired_diffs if paired_diffs is not None else [welch(a, b) for a, b in zip(items, items[1:])]
    return R if all(_holds(d, 1, 0.0) for d in diffs) else N


def judge_no_effect(effect: Estimate) -> str:
    """"No effect" on a relative effect (a ratio minus one, a fractional change): R when its 95%
    interval lies within +-``NO_EFFECT_MARGIN``; N when it is beyond noise (the interval excludes
    zero) and not within the margin; D when neither: no effect beyond noise, but the interval is
    too wide to bound it within the margin."""
    if not effect.known:
        return N
    if effect.has_interval and -NO_EFFECT_MARGIN <= effect.lo and effect.hi <= NO_EFFECT_MARGIN:
        return R
    if effect.excludes(0.0):
        return N
    return D


def worst(verdicts: Iterable[str]) -> str:
    """The verdict of a claim over several items: the lowest of the items' verdicts (N < D < R)."""
    vs = list(verdicts)
    if not vs:
        return N
    for v in vs:
        if v not in VERDICTS:
            raise ValueError(f"not a verdict: {v!r}")
    return N if N in vs else (D if D in vs else R)


def judge_count(holding: int, needed: int) -> str:
    """A claim about how many items something holds for ("most applications", "all but three"):
    R when at least ``needed`` items hold it beyond noise, N otherwise."""
    return R if holding >= needed else N
