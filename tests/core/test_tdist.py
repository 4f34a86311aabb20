"""reprogate.core.tdist: Student's t for the checks the core runs without scipy."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)


def test_the_cores_t_quantile_agrees_with_scipy_where_intervals_use_it() -> None:
    """validate recomputes stored intervals without scipy (it must start light); reprogate's own
    quantile is held to scipy's over the α and n a record can declare."""
    import pytest

    stats = pytest.importorskip("scipy.stats")
    from reprogate.core.tdist import t_quantile

    for df in (1, 2, 3, 4, 5, 9, 29, 99, 999):
        for alpha in (0.5, 0.2, 0.1, 0.05, 0.01, 0.001, 0.0001):
            p = 1 - alpha / 2
            expected = float(stats.t.ppf(p, df))
            assert abs(t_quantile(p, df) - expected) <= 1e-9 * expected, (df, alpha)
