"""Intervals across seeds and the test of "beyond noise", shared by :func:`vcpusim.aggregate`,
:func:`vcpusim.compare` and the experiment sets' validation protocol (experiments/protocol.py,
docs/validation.md), so that a user's comparison and a ledger's verdict are the same test::

    one value per seed --Estimate.of--> mean and 95% Student-t interval
    two groups ---------welch---------> Welch's interval of the difference (unpaired)
    the same seeds ------change(paired)-> the per-seed differences' interval, relative to the base

"Beyond noise" has one meaning: a 95% interval that excludes the reference (zero for a
difference), the same decision as ``scipy.stats.ttest_ind(equal_var=False)`` at p < 0.05 for
two unpaired groups and a one-sample t-test on the per-seed differences for paired ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from scipy import stats as _stats

#: Confidence of every interval and test.
CONFIDENCE = 0.95


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
