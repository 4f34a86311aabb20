"""reprogate/rebuild/stats.py against values worked out by hand: the step rule, the t
prediction interval, the two-sample t on the means and Welch's TOST.

The t quantiles and distribution functions are independent of reprogate's: closed forms for 2 and
4 degrees of freedom (Student's t has them for every even df) and quantiles from a t table.
tests/rebuild/test_statistics.py holds the tests' error rates; this file their arithmetic.
"""

from __future__ import annotations

import math

import pytest

from reprogate.rebuild.stats import Interval, difference_test, prediction_interval, welch_tost, within

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)

T975_DF2 = 4.302652729749462  # t table: t(0.975, 2)
T975_DF4 = 2.7764451051977934  # t(0.975, 4)
T95_DF4 = 2.1318467863266495  # t(0.95, 4)


def t2_quantile(q: float) -> float:
    """Student's t with 2 degrees of freedom, inverted in closed form."""
    return (2 * q - 1) / math.sqrt(2 * q * (1 - q))


def t4_cdf(t: float) -> float:
    """Student's t with 4 degrees of freedom: F(t) = 1/2 + (3/8)·x·(1 - t²/(12(1 + t²/4))), x = t/sqrt(1 + t²/4)."""
    w = 1 + t * t / 4
    return 0.5 + 0.375 * (t / math.sqrt(w)) * (1 - t * t / (12 * w))


def test_the_table_quantiles_agree_with_the_closed_forms() -> None:
    """The constants below are what the formulas say (so a typo in one cannot hide)."""
    assert t2_quantile(0.975) == pytest.approx(T975_DF2, rel=1e-12)
    assert t4_cdf(T975_DF4) == pytest.approx(0.975, abs=1e-12)
    assert t4_cdf(T95_DF4) == pytest.approx(0.95, abs=1e-12)
    assert t4_cdf(0.0) == 0.5 and t4_cdf(-T975_DF4) == pytest.approx(0.025, abs=1e-12)


# --- the step comparison --------------------------------------------------------------------


def test_within_is_abs_plus_rel_times_the_reference_inclusive() -> None:
    assert within(1.5, 1.0, 0.5, 0.0)  # |Δ| 0.5 <= 0.5: the bound itself is inside
    assert not within(1.5000001, 1.0, 0.5, 0.0)
    assert within(11.0, 10.0, 0.0, 0.1)  # 1 <= 0.1 * |10|
    assert not within(9.0, 10.0, 0.0, 0.09)
    assert within(-9.5, -10.0, 0.25, 0.025)  # 0.5 <= 0.25 + 0.025 * 10
    assert not within(-9.4, -10.0, 0.25, 0.025)
    assert within(2.0, 2.0, 0.0, 0.0) and not within(2.0, 2.0 + 1e-15, 0.0, 0.0)


# --- the prediction interval ----------------------------------------------------------------


def test_the_prediction_interval_is_mean_plus_minus_t_s_sqrt_1_plus_1_over_n() -> None:
    # n = 3: mean 2, s = 1, half width t(0.975, 2) · 1 · sqrt(4/3) = 4.96827...
    interval = prediction_interval([1.0, 2.0, 3.0], 0.05)
    half = T975_DF2 * math.sqrt(4 / 3)
    assert half == pytest.approx(4.968275, abs=1e-6)
    assert (interval.method, interval.n, interval.alpha, interval.mean, interval.sd) == ("prediction", 3, 0.05, 2.0, 1.0)
    assert interval.low == pytest.approx(2 - half, rel=1e-9) and interval.high == pytest.approx(2 + half, rel=1e-9)
    assert interval.contains(6.9) and not interval.contains(7.0) and interval.contains(-2.9) and not interval.contains(-3.0)


def test_the_prediction_interval_at_n_5_and_its_resolution() -> None:
    # n = 5: values 10..14, mean 12, s = sqrt(2.5); t(0.975, 4) · s · sqrt(6/5) + r/2
    values = [10.0, 11.0, 12.0, 13.0, 14.0]
    half = T975_DF4 * math.sqrt(2.5) * math.sqrt(1.2)
    plain = prediction_interval(values, 0.05)
    widened = prediction_interval(values, 0.05, resolution=0.4)
    assert plain.sd == pytest.approx(math.sqrt(2.5), rel=1e-12)
    assert (plain.low, plain.high) == (pytest.approx(12 - half, rel=1e-9), pytest.approx(12 + half, rel=1e-9))
    assert (widened.low, widened.high) == (pytest.approx(12 - half - 0.2, rel=1e-9), pytest.approx(12 + half + 0.2, rel=1e-9))
    assert widened.resolution == 0.4 and plain.resolution == 0.0


def test_the_interval_as_stored_is_rounded_to_ten_places_and_omits_the_resolution() -> None:
    stored = Interval("prediction", 1 / 3, 2 / 3, 0.05, 4, 0.5, 1 / 7, resolution=0.1).as_record()
    assert stored == {"method": "prediction", "low": 0.3333333333, "high": 0.6666666667, "alpha": 0.05, "n": 4, "mean": 0.5, "sd": 0.1428571429}


def test_a_prediction_interval_needs_two_reference_seeds() -> None:
    with pytest.raises(ValueError, match="at least 2 reference seeds"):
        prediction_interval([1.0])


# --- the two-sample t on the means ----------------------------------------------------------


def test_the_two_sample_t_by_hand() -> None:
    # reference 1, 2, 3 and rebuilt 2, 3, 4: difference 1, pooled s 1, df 4, se sqrt(2/3)
    result = difference_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], 0.05)
    se = math.sqrt(2 / 3)
    assert (result.difference, result.sd_pooled, result.df, result.n, result.m, result.alpha, result.resolution) == (1.0, 1.0, 4, 3, 3, 0.05, 0.0)
    assert result.limit == pytest.approx(T975_DF4 * se, rel=1e-9)  # 2.26696
    assert result.p_value == pytest.approx(2 * (1 - t4_cdf(1 / se)), abs=1e-9)  # 0.28786
    assert result.p_value == pytest.approx(0.2878641, abs=1e-6)
    assert result.passed


def test_the_two_sample_t_fails_a_difference_beyond_its_limit() -> None:
    # reference 1, 2, 3 and rebuilt 4, 5, 6: difference 3 > 2.26696; t = 3/sqrt(2/3) = 3.674
    result = difference_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], 0.05)
    assert not result.passed and result.difference == 3.0
    assert result.p_value == pytest.approx(2 * (1 - t4_cdf(3 / math.sqrt(2 / 3))), abs=1e-9)  # 0.02131
    assert result.p_value < 0.05
    assert difference_test([4.0, 5.0, 6.0], [1.0, 2.0, 3.0], 0.05).difference == -3.0  # rebuilt minus reference


def test_the_resolution_widens_the_limit_and_shrinks_the_excess_by_half_of_it() -> None:
    result = difference_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], 0.05, resolution=0.5)
    se = math.sqrt(2 / 3)
    assert result.limit == pytest.approx(T975_DF4 * se + 0.25, rel=1e-9)
    assert result.p_value == pytest.approx(2 * (1 - t4_cdf(0.75 / se)), abs=1e-9)
    within_band = difference_test([1.0, 2.0, 3.0], [2.2, 3.2, 1.6], 0.05, resolution=1.0)  # |difference| 0.333 <= r/2
    assert within_band.p_value == 1.0 and within_band.passed


def test_one_rebuild_seed_uses_the_reference_sd_and_df_n_minus_1() -> None:
    # n = 5, m = 1: the pooled s is the reference's, df 4, se s·sqrt(6/5)
    result = difference_test([10.0, 11.0, 12.0, 13.0, 14.0], [16.0], 0.05)
    s = math.sqrt(2.5)
    assert result.df == 4 and result.sd_pooled == pytest.approx(s, rel=1e-12) and result.difference == 4.0
    assert result.limit == pytest.approx(T975_DF4 * s * math.sqrt(1.2), rel=1e-9)  # 4.809, so 16 is inside
    assert result.passed and result.p_value == pytest.approx(2 * (1 - t4_cdf(4 / (s * math.sqrt(1.2)))), abs=1e-9)


def test_constant_seeds_give_p_0_for_any_difference_beyond_the_resolution() -> None:
    shifted = difference_test([0.5] * 4, [0.6, 0.6], 0.05)
    assert (shifted.passed, shifted.p_value, shifted.sd_pooled) == (False, 0.0, 0.0)
    assert shifted.limit == 16 * math.ulp(0.6)  # the rounding floor alone
    same = difference_test([0.5] * 4, [0.5], 0.05)
    assert (same.passed, same.p_value) == (True, 1.0)


@pytest.mark.parametrize(("reference", "rebuilt"), [([1.0], [1.0]), ([1.0, 2.0], [])])
def test_the_two_sample_t_refuses_too_few_seeds(reference: list[float], rebuilt: list[float]) -> None:
    with pytest.raises(ValueError, match="at least 2 reference seeds and 1 rebuild seed"):
        difference_test(reference, rebuilt, 0.05)


# --- Welch's TOST ---------------------------------------------------------------------------


def test_welch_tost_by_hand() -> None:
    # sx = sy = 1, n = m = 3: var 2/3, Welch df (4/9) / (2 · (1/9)/2) = 4, difference 1
    tost = welch_tost([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], margin=3.0, alpha=0.05)
    se = math.sqrt(2 / 3)
    assert tost.df == pytest.approx(4.0, rel=1e-12) and tost.difference == 1.0
    p = max(1 - t4_cdf((1 + 3) / se), t4_cdf((1 - 3) / se))  # the larger of the two one-sided p values
    assert tost.p_value == pytest.approx(p, abs=1e-9) and tost.p_value == pytest.approx(0.0352419, abs=1e-6)
    assert tost.ci_low == pytest.approx(1 - T95_DF4 * se, rel=1e-9) and tost.ci_high == pytest.approx(1 + T95_DF4 * se, rel=1e-9)
    assert tost.equivalent  # the 90 % interval (-0.741, 2.741) lies inside (-3, 3)
    narrow = welch_tost([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], margin=2.0, alpha=0.05)
    assert not narrow.equivalent and narrow.p_value == pytest.approx(t4_cdf(-1 / se), abs=1e-9)  # 0.1870


def test_welch_tost_on_constant_seeds_knows_the_difference_exactly() -> None:
    inside = welch_tost([1.0, 1.0], [1.2, 1.2, 1.2], margin=0.5)
    assert (inside.equivalent, inside.p_value, inside.df) == (True, 0.0, math.inf)
    assert inside.difference == inside.ci_low == inside.ci_high == pytest.approx(0.2)
    outside = welch_tost([1.0, 1.0], [2.0, 2.0], margin=1.0)  # |difference| = margin: not strictly inside
    assert (outside.equivalent, outside.p_value) == (False, 1.0)


def test_welch_tost_refuses_one_seed_on_a_side() -> None:
    with pytest.raises(ValueError, match="at least 2 seeds on each side"):
        welch_tost([1.0, 2.0], [1.0], margin=1.0)


def test_welch_tost_at_fractional_degrees_of_freedom_agrees_with_scipy() -> None:
    """Welch's df is rarely whole; the reference values were computed with scipy 1.17.1
    (stats.t.sf, stats.t.cdf, stats.t.ppf at df = 2.5398), which reprogate no longer needs."""
    tost = welch_tost([0.951, 0.962, 0.958, 0.971, 0.949], [0.96, 0.99, 0.955], margin=0.02, alpha=0.05)
    assert tost.df == pytest.approx(2.5397853707991014, rel=1e-12)
    assert tost.p_value == pytest.approx(0.23427615173651656, rel=1e-9)
    assert (tost.ci_low, tost.ci_high) == (pytest.approx(-0.01937354071617786, rel=1e-8), pytest.approx(0.03964020738284452, rel=1e-8))
    assert not tost.equivalent
