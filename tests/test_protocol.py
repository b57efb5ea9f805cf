"""The validation protocol (experiments/protocol.py, docs/validation.md) on made-up data: every
verdict of every claim type is reachable and reached where the page says, intervals are
Student-t's, and Welch's interval makes the same decision as scipy's Welch t-test."""

import math
import sys
from pathlib import Path

import pytest

scipy_stats = pytest.importorskip("scipy.stats")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))

import protocol as p  # noqa: E402
from protocol import D, N, R, Estimate  # noqa: E402


def tight(mean, half=0.01, n=5):
    """An estimate with a narrow interval."""
    return Estimate(mean, mean - half, mean + half, n)


# --- Estimates -----------------------------------------------------------------------------------


def test_the_interval_is_students_t_with_the_table_quantile():
    # Five values 1..5: mean 3, sd sqrt(2.5); t(0.975, 4) = 2.776 (any t table).
    e = Estimate.of([1, 2, 3, 4, 5])
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert e.n == 5 and e.mean == 3
    assert e.lo == pytest.approx(3 - half, abs=1e-3) and e.hi == pytest.approx(3 + half, abs=1e-3)


def test_nan_values_are_left_out_and_one_seed_has_no_interval():
    e = Estimate.of([2.0, float("nan"), None, 4.0])
    assert e.n == 2 and e.mean == 3.0 and e.has_interval
    one = Estimate.of([7.0])
    assert one.n == 1 and one.mean == 7.0 and not one.has_interval
    assert not one.excludes(0.0), "one seed is never beyond noise"
    assert not Estimate.of([]).known


def test_from_stats_matches_of_samples():
    xs = [0.9, 1.3, 1.1, 1.6, 1.2, 0.8]
    a = Estimate.of(xs)
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    b = Estimate.from_stats(m, sd, len(xs))
    assert (a.lo, a.hi) == pytest.approx((b.lo, b.hi))


def test_map_and_text():
    e = Estimate(0.1, 0.05, 0.15, 5).map(lambda x: 1 + x)
    assert (e.mean, e.lo, e.hi) == pytest.approx((1.1, 1.05, 1.15))
    assert Estimate(0.08, 0.06, 0.1, 5).text(1, pct=True) == "+8.0% [+6.0%, +10.0%]"
    neg = Estimate(0.2, 0.1, 0.3, 5).map(lambda x: -x)
    assert (neg.mean, neg.lo, neg.hi) == pytest.approx((-0.2, -0.3, -0.1)), "a decreasing map keeps lo <= hi"
    assert not Estimate(1.0, math.nan, math.nan, 1).map(lambda x: -x).has_interval
    assert Estimate(2.0, math.nan, math.nan, 1).text(1, unit="x") == "2.0x"


# --- Welch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", [
    ([1.0, 1.2, 0.9, 1.1, 1.05], [1.3, 1.4, 1.25, 1.5, 1.35]),
    ([5.0, 5.1, 4.9, 5.2, 5.0], [5.05, 5.3, 4.7, 5.4, 4.8, 5.1, 5.2]),
    ([10, 11, 12, 13, 14], [11, 14, 9, 16, 12]),
    ([0.0, 0.1, -0.1, 0.05, 0.0], [0.5, 3.0, -1.0, 2.0, 0.8]),
])
def test_welchs_interval_decides_as_scipys_welch_test(a, b):
    diff = p.welch(a, b)
    t = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert diff.mean == pytest.approx(sum(a) / len(a) - sum(b) / len(b))
    assert diff.excludes(0.0) == (t.pvalue < 0.05)
    assert p.beyond_noise(a, b) == (t.pvalue < 0.05)
    # The interval's ends are where Welch's test would sit exactly at p = 0.05.
    for end in (diff.lo, diff.hi):
        shifted = [x - end for x in a]
        assert scipy_stats.ttest_ind(shifted, b, equal_var=False).pvalue == pytest.approx(0.05, abs=1e-6)


def test_welch_from_estimates_equals_welch_from_samples():
    a, b = [1.0, 1.2, 0.9, 1.1, 1.05], [1.3, 1.4, 1.25, 1.5, 1.35, 1.2]
    from_samples = p.welch(a, b)
    from_estimates = p.welch(Estimate.of(a), Estimate.of(b))
    assert (from_estimates.lo, from_estimates.hi) == pytest.approx((from_samples.lo, from_samples.hi))


def test_welch_with_no_spread_is_exact_and_one_seed_is_never_beyond_noise():
    assert p.welch([2.0] * 5, [1.0] * 5).excludes(0.0)
    assert not p.welch([2.0] * 5, [2.0] * 5).excludes(0.0)
    assert not p.beyond_noise([5.0], [1.0, 1.1, 0.9])


# --- Verdicts by type ----------------------------------------------------------------------------


def test_point_with_a_reference_reaches_r_d_and_n():
    paper = 0.08  # "+8% faster"
    assert p.judge_point(tight(0.09), paper, ref=0) == R          # within 6-10%
    assert p.judge_point(tight(0.059), paper, ref=0) == D         # faster beyond noise, below the band
    assert p.judge_point(tight(0.30), paper, ref=0) == D          # above the band
    assert p.judge_point(tight(-0.05), paper, ref=0) == N         # the other way
    assert p.judge_point(Estimate(0.08, -0.01, 0.17, 5), paper, ref=0) == N  # in the band but not beyond noise
    assert p.judge_point(Estimate(0.08, math.nan, math.nan, 1), paper, ref=0) == N  # one seed


def test_point_band_is_relative_to_the_value_as_the_paper_states_it():
    assert p.judge_point(tight(1.71), 1.37, ref=1) == R and p.judge_point(tight(1.72), 1.37, ref=1) == D
    assert p.judge_point(tight(1.03), 1.37, ref=1) == R and p.judge_point(tight(1.02), 1.37, ref=1) == D
    # A reduction below the reference: "-38%".
    assert p.judge_point(tight(-0.40), -0.38, ref=0) == R
    assert p.judge_point(tight(-0.10), -0.38, ref=0) == D
    assert p.judge_point(tight(0.10), -0.38, ref=0) == N


def test_a_level_beside_a_baseline_takes_the_papers_own_direction():
    # The paper: solo 5 us, co-run 7 us (a rise). Ours: solo 13.9, co-run 9.07 beyond noise below.
    ours = Estimate(9.07, 8.5, 9.6, 5)
    assert p.judge_point(ours, 7.0, ref=13.9) == D, "taken from our solo, the paper's 7 would read as a fall"
    assert p.judge_point(ours, 7.0, ref=13.9, sign=+1) == N
    assert p.judge_point(Estimate(16.0, 15.0, 17.0, 5), 7.0, ref=13.9, sign=+1) == D
    with pytest.raises(ValueError):
        p.judge_point(ours, 7.0, ref=13.9, sign=0)


def test_point_inside_the_papers_own_range_is_r():
    assert p.judge_point(tight(0.13), 0.08, ref=0, paper_range=(0.05, 0.13)) == R
    assert p.judge_point(tight(0.14), 0.08, ref=0, paper_range=(0.05, 0.13)) == D


def test_point_without_a_reference_claims_no_direction():
    assert p.judge_point(tight(1700), 1761) == R
    assert p.judge_point(tight(900), 1761) == N


def test_a_point_equal_to_its_reference_must_be_a_no_effect_claim():
    with pytest.raises(ValueError, match="no effect"):
        p.judge_point(tight(0.0), 0.0, ref=0)


def test_range_reaches_r_d_and_n():
    assert p.judge_range(tight(0.10), 0.08, 0.13, ref=0) == R
    assert p.judge_range(tight(0.90), 0.08, 0.13, ref=0) == D
    assert p.judge_range(tight(-0.10), 0.08, 0.13, ref=0) == N
    assert p.judge_range(Estimate(0.10, -0.2, 0.4, 5), 0.08, 0.13, ref=0) == N  # not beyond noise
    # A range around its reference claims no direction.
    assert p.judge_range(tight(0.5), -0.01, 0.89, ref=0) == R
    assert p.judge_range(tight(0.97), -0.01, 0.89, ref=0) == N
    with pytest.raises(ValueError):
        p.judge_range(tight(0.1), 0.2, 0.1)


def test_direction_has_no_d():
    assert p.judge_direction(tight(0.02), +1) == R
    assert p.judge_direction(Estimate(0.02, -0.01, 0.05, 5), +1) == N  # a tie within noise
    assert p.judge_direction(tight(0.02), -1) == N
    assert p.judge_direction(tight(0.98), -1, ref=1.0) == R
    assert p.judge_holds(True) == R and p.judge_holds(False) == N
    with pytest.raises(ValueError):
        p.judge_direction(tight(1.0), 0)


def test_ordering_needs_every_adjacent_pair_apart():
    a, b, c = [10.0, 10.5, 9.5, 10.2, 9.8], [5.0, 5.5, 4.5, 5.2, 4.8], [1.0, 1.1, 0.9, 1.2, 0.8]
    assert p.judge_order([Estimate.of(a), Estimate.of(b), Estimate.of(c)]) == R
    assert p.judge_order([Estimate.of(a), Estimate.of(c), Estimate.of(b)]) == N
    close = [5.1, 5.4, 4.6, 5.0, 4.9]
    assert p.judge_order([Estimate.of(a), Estimate.of(b), Estimate.of(close)]) == N
    assert p.judge_order([], paired_diffs=[tight(1.0), tight(0.5)]) == R
    assert p.judge_order([], paired_diffs=[tight(1.0), Estimate(0.5, -0.1, 1.1, 5)]) == N


def test_no_effect_reaches_r_d_and_n():
    assert p.judge_no_effect(Estimate(0.01, -0.02, 0.04, 5)) == R
    assert p.judge_no_effect(Estimate(0.01, -0.08, 0.10, 5)) == D   # within noise, too wide to bound
    assert p.judge_no_effect(Estimate(0.12, 0.08, 0.16, 5)) == N    # beyond noise
    assert p.judge_no_effect(Estimate(0.03, 0.02, 0.04, 5)) == R    # beyond noise yet bounded within 5%
    assert p.judge_no_effect(Estimate(0.0, math.nan, math.nan, 1)) == D
    assert p.judge_no_effect(Estimate(math.nan, math.nan, math.nan, 0)) == N


def test_several_items_take_the_lowest_verdict_and_counts_need_enough_items():
    assert p.worst([R, R]) == R and p.worst([R, D, R]) == D and p.worst([D, N, R]) == N
    assert p.worst([]) == N
    with pytest.raises(ValueError):
        p.worst(["reproduced"])
    assert p.judge_count(7, 7) == R and p.judge_count(6, 7) == N


def test_the_protocols_numbers_are_the_pages():
    page = (Path(__file__).resolve().parent.parent / "docs" / "validation.md").read_text()
    assert p.BAND == 0.25 and "±25%" in page
    assert p.NO_EFFECT_MARGIN == 0.05 and "±5%" in page
    assert p.CONFIDENCE == 0.95 and "95%" in page
    assert p.MIN_SEEDS == 5 and "5 seeds or more" in page
    for cause in p.CAUSES:
        assert cause in page


def test_a_change_is_beyond_noise_exactly_when_its_difference_is():
    base = [6.0, 14.0, 10.0, 8.0, 12.0]
    new = [x * 0.8 + d for x, d in zip(base, (0.1, -0.1, 0.0, 0.2, -0.2))]
    c = p.change(new, base, paired=True)
    assert c.mean == pytest.approx(sum(new) / sum(base) - 1)
    assert c.excludes(0.0) and p.judge_point(c, -0.25, ref=0) == R
    # Unpaired, the seed-to-seed spread of the base hides the same change.
    u = p.change(new, base, paired=False)
    assert u.mean == pytest.approx(c.mean) and not u.excludes(0.0)
    assert p.Estimate.of([b - a for a, b in zip(new, base)]).excludes(0.0) == c.excludes(0.0)
    # A seed with a missing value is left out of both sides of the pair.
    d = p.change(new + [float("nan")], base + [100.0], paired=True)
    assert d.n == 5 and d.mean == pytest.approx(c.mean)
    with pytest.raises(ValueError):
        p.change([1.0], [1.0, 2.0], paired=True)
    assert not p.relative(Estimate(1.0, 0.5, 1.5, 5), 0.0).known
