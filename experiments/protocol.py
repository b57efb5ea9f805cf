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
never passes its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

try:
    from scipy import stats as _stats
except ImportError:  # the package itself needs no scipy; the experiment sets do
    raise SystemExit("the experiment scripts judge claims with scipy: pip install \".[experiments]\"") from None

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
#: Confidence of every interval and test.
CONFIDENCE = 0.95
#: Seeds per point of a full run.
MIN_SEEDS = 5


# --- Estimates -----------------------------------------------------------------------------------


def _t(n: int) -> float:
    """The two-sided Student-t quantile of ``CONFIDENCE`` with n - 1 degrees of freedom."""
    return float(_stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1))


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds and its 95% Student-t interval [lo, hi] (NaN with fewer than two seeds)."""

    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, samples: Iterable[float]) -> "Estimate":
        """From one value per seed; NaN and None are left out (n counts the finite values)."""
        xs = [float(x) for x in samples if x is not None and not math.isnan(float(x))]
        n = len(xs)
        if n == 0:
            return cls(math.nan, math.nan, math.nan, 0)
        mean = math.fsum(xs) / n
        if n == 1:
            return cls(mean, math.nan, math.nan, 1)
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
        return cls.from_stats(mean, sd, n)

    @classmethod
    def from_stats(cls, mean: float, sd: float, n: int) -> "Estimate":
        """From a mean, a sample standard deviation and n."""
        n = int(n)
        if n < 2 or math.isnan(sd):
            return cls(float(mean), math.nan, math.nan, n)
        half = _t(n) * sd / math.sqrt(n)
        return cls(float(mean), float(mean) - half, float(mean) + half, n)

    @classmethod
    def of_row(cls, row, value: str) -> "Estimate":
        """From an aggregate row (``runkit.aggregate``): ``<value>_mean``, ``_lo``, ``_hi``, ``_n``."""
        return cls(float(row[f"{value}_mean"]), float(row[f"{value}_lo"]), float(row[f"{value}_hi"]),
                   int(row[f"{value}_n"]))

    @property
    def known(self) -> bool:
        """A mean exists."""
        return not math.isnan(self.mean)

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))

    def excludes(self, ref: float) -> bool:
        """Beyond noise: the interval excludes ``ref`` (False without an interval)."""
        return self.has_interval and (self.lo > ref or self.hi < ref)

    def map(self, f) -> "Estimate":
        """The estimate under a monotone ``f`` (a shift, a scale, a negation): the mean and both
        interval ends mapped, the ends put back in order when ``f`` decreases."""
        a, b = f(self.lo), f(self.hi)
        return Estimate(f(self.mean), min(a, b) if self.has_interval else a, max(a, b) if self.has_interval else b,
                        self.n)

    def __neg__(self) -> "Estimate":
        """``-e``: a change read as a saving, a cut as a gain (the interval's ends swap)."""
        return self.map(lambda x: -x)

    def text(self, digits: int = 2, pct: bool = False, unit: str = "") -> str:
        """``mean [lo, hi]``; ``pct`` shows fractions as signed percentages."""
        if not self.known:
            return "n/a"

        def f(x):
            if pct:
                return f"{x * 100:+.{digits}f}%"
            return f"{x:.{digits}f}{unit}"

        if not self.has_interval:
            return f(self.mean)
        return f"{f(self.mean)} [{f(self.lo)}, {f(self.hi)}]"


#: No estimate: a point that was not run or cannot be measured (every judge gives it N).
NO_ESTIMATE = Estimate(math.nan, math.nan, math.nan, 0)


def welch(a: Estimate | Sequence[float], b: Estimate | Sequence[float], *, sd_a: float | None = None,
          sd_b: float | None = None) -> Estimate:
    """Welch's estimate of mean(a) - mean(b) for two unpaired groups, with its 95% interval
    (Welch-Satterthwaite degrees of freedom). ``a`` and ``b`` are samples, or Estimates (whose
    standard deviation is recovered from the interval)."""
    ma, sa, na = _moments(a, sd_a)
    mb, sb, nb = _moments(b, sd_b)
    diff = ma - mb
    if na < 2 or nb < 2:
        return Estimate(diff, math.nan, math.nan, min(na, nb))
    va, vb = sa * sa / na, sb * sb / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return Estimate(diff, diff, diff, min(na, nb))
    dof = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    half = float(_stats.t.ppf(0.5 + CONFIDENCE / 2, dof)) * se
    return Estimate(diff, diff - half, diff + half, min(na, nb))


def _moments(x, sd: float | None) -> tuple[float, float, int]:
    if isinstance(x, Estimate):
        if sd is None:
            sd = (x.hi - x.lo) / 2 / _t(x.n) * math.sqrt(x.n) if x.has_interval and x.n >= 2 else math.nan
        return x.mean, sd, x.n
    xs = [float(v) for v in x if v is not None and not math.isnan(float(v))]
    n = len(xs)
    m = math.fsum(xs) / n if n else math.nan
    s = math.sqrt(math.fsum((v - m) ** 2 for v in xs) / (n - 1)) if n >= 2 else math.nan
    return m, s, n


def beyond_noise(a: Estimate | Sequence[float], b: Estimate | Sequence[float]) -> bool:
    """Whether two unpaired groups differ beyond noise: Welch's 95% interval excludes zero."""
    return welch(a, b).excludes(0.0)


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


# --- Changes -------------------------------------------------------------------------------------


def relative(diff: Estimate, base: float) -> Estimate:
    """A difference of means as a change relative to the base's mean, ``(new - base) / base``:
    the difference's interval (per-seed paired, or ``welch``) scaled by the base's mean, so the
    change is beyond noise exactly when the difference is. NaN when the base's mean is not
    positive."""
    if not (base > 0):
        return Estimate(math.nan, math.nan, math.nan, diff.n)
    return diff.map(lambda x: x / base)


def change(new: Sequence[float], base: Sequence[float], *, paired: bool) -> Estimate:
    """``mean(new) / mean(base) - 1`` (a ratio of whole-run totals or of mean rates, as a paper
    compares two configurations), with its 95% interval: from the per-seed differences when the
    two were run on the same seeds (``paired``: ``new[i]`` and ``base[i]`` share seed i), from
    Welch's interval otherwise. A side with no values (a point not run) gives ``NO_ESTIMATE``."""
    if not len(new) or not len(base):
        return NO_ESTIMATE
    if paired:
        if len(new) != len(base):
            raise ValueError(f"paired samples differ in length: {len(new)} and {len(base)}")
        pairs = [(a, b) for a, b in zip(new, base) if not (_nan(a) or _nan(b))]
        diff = Estimate.of([a - b for a, b in pairs])
        base_mean = math.fsum(b for _, b in pairs) / len(pairs) if pairs else math.nan
    else:
        diff = welch(new, base)
        base_mean = _moments(base, None)[0]
    return relative(diff, base_mean)


def _nan(x) -> bool:
    return x is None or math.isnan(float(x))
