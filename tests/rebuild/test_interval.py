"""reprogate/rebuild/interval.py (`reprogate interval RECORD`): the metric's interval computed from
the reference seeds alone and spliced into the record, the rest of it kept as written.

Expected bounds come from Student's t with 2 degrees of freedom in closed form (three reference
seeds), not from reprogate's quantile function."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reprogate import __version__
from reprogate.core.documents import load_text
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.record import RunRecord, read_record
from reprogate.rebuild.interval import IntervalError, checked_alpha, compute, read_inputs, reference_values, seed_notices, store

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)

RECORD = """\
apiVersion: reprogate/v1
kind: RunRecord
# this comment stays
contract:
  level: statistical
  envelope: {}
  metric:
    name: acc
    alpha: 0.05
reference:
  metric:
    name: acc
    values:
      - {seed: 1, value: 1.0}
      - {seed: 2, value: 2.0}
      - {seed: 3, value: 3.0}
"""
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def t2_quantile(q: float) -> float:
    return (2 * q - 1) / math.sqrt(2 * q * (1 - q))


def half_width(alpha: float) -> float:
    """Three seeds 1, 2, 3: mean 2, s 1, half width t(1 - α/2, 2) · sqrt(1 + 1/3)."""
    return t2_quantile(1 - alpha / 2) * math.sqrt(4 / 3)


def data_of(values: list[Any] | None = None, metric: dict[str, Any] | None = None) -> dict[str, Any]:
    """A record's data with a contract the schema accepts, its metric and reference seeds as given."""
    data: dict[str, Any] = {"kind": "RunRecord", "contract": {"level": "statistical", "envelope": {}, "metric": {"name": "acc", **(metric or {})}}}
    data["reference"] = {"metric": {"name": "acc", "values": [{"seed": i, "value": v} for i, v in enumerate([1.0, 2.0, 3.0] if values is None else values)]}}
    return data


def record(values: list[Any] | None = None, metric: dict[str, Any] | None = None) -> RunRecord:
    return read_record(data_of(values, metric))


def test_compute_is_the_prediction_interval_at_the_contract_s_alpha() -> None:
    stored = compute(record(metric={"alpha": 0.05}))
    half = half_width(0.05)  # 4.96827
    assert stored["method"] == "prediction" and stored["n"] == 3 and stored["alpha"] == 0.05 and stored["mean"] == 2.0 and stored["sd"] == 1.0
    assert stored["low"] == pytest.approx(2 - half, abs=1e-9) and stored["high"] == pytest.approx(2 + half, abs=1e-9)
    assert stored["computed_by"] == f"reprogate {__version__} (t prediction interval for one rebuild seed; the two-sample t on the means for more)"
    assert STAMP.fullmatch(stored["computed_at"])
    assert "resolution" not in stored and "notice" not in stored


def test_compute_defaults_alpha_to_5_percent_and_the_argument_overrides_the_contract() -> None:
    assert compute(record())["alpha"] == 0.05
    stored = compute(record(metric={"alpha": 0.05}), alpha=0.1)
    assert stored["alpha"] == 0.1 and stored["high"] == pytest.approx(2 + half_width(0.1), abs=1e-9)  # 5.37171


def test_compute_widens_by_half_the_resolution_and_stores_it() -> None:
    stored = compute(record(metric={"resolution": 0.5}))
    assert stored["resolution"] == 0.5
    assert stored["high"] - stored["low"] == pytest.approx(2 * half_width(0.05) + 0.5, abs=1e-9)


def test_compute_states_what_few_or_identical_seeds_mean() -> None:
    stored = compute(record([0.5, 0.5], metric={"resolution": 0.02}))
    assert (stored["low"], stored["high"]) == (pytest.approx(0.49), pytest.approx(0.51))
    assert stored["notice"] == (
        "the 2 reference seeds showed no spread: the interval is the resolution band (declare contract.metric.resolution); "
        "only 2 reference seeds: the interval is very wide and the power low (5 or more recommended)"
    )


def test_seed_notices() -> None:
    assert seed_notices([1.0, 2.0, 3.0]) == []
    assert seed_notices([1.0, 2.0]) == ["only 2 reference seeds: the interval is very wide and the power low (5 or more recommended)"]
    skewed = seed_notices([10, 11, 10, 12, 10, 11, 110])
    assert len(skewed) == 1 and skewed[0].startswith("the reference seeds show 1 outlier(s) (Grubbs' test at 1 %)"), skewed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "RunRecord"}, "contract.metric is not declared"),
        ({"contract": {"metric": "acc"}}, "contract.metric is not declared"),
        (data_of([1.0]), "reference.metric.values holds 1 seed(s); at least 2 are needed"),
        (data_of([]), "reference.metric.values holds 0 seed(s)"),
        (data_of([1.0, math.nan]), "reference.metric.values holds a value that is not a finite number"),
        (data_of([1.0, math.inf]), "reference.metric.values holds a value that is not a finite number"),
        (data_of([1.0, 1e160]), "reference.metric.values[1].value: 1e+160 is beyond ±1e+100"),
    ],
    ids=["no-contract", "metric-not-a-mapping", "one-seed", "no-seeds", "nan", "inf", "beyond"],
)
def test_what_the_interval_cannot_be_computed_from_is_a_check_failure(data: dict[str, Any], message: str) -> None:
    with pytest.raises(IntervalError, match=re.escape(message)) as caught:
        compute(read_record(data))
    assert isinstance(caught.value, CheckFailed)


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (data_of([1.0, "high"]), "reference.metric.values[1].value"),
        ({"kind": "RunRecord", "contract": {"metric": {}}, "reference": {"metric": {"values": [1.0, 2.0]}}}, "reference.metric.values[0]"),
        ({"kind": "RunRecord", "contract": {"metric": {"name": "acc"}}, **{k: v for k, v in data_of().items() if k == "reference"}}, "contract"),
        ({**data_of(), "reference": {"metric": {"name": "acc", "values": [{"seed": 1, "value": 1.0}]}, "extra": 1}}, "reference"),
    ],
    ids=["word", "bare-numbers", "contract-without-level", "reference-with-an-unknown-field"],
)
def test_inputs_of_the_wrong_shape_or_outside_the_schema_are_refused_naming_the_field(data: dict[str, Any], where: str) -> None:
    """Before anything is computed: a shape the statistics cannot read, or a section the schema
    rejects (which the typed record reads as absent), is a usage error naming the field."""
    with pytest.raises(UsageError) as caught:
        read_inputs(load_text(json.dumps(data), "r.json", "json"))
    fields = [d.field for d in caught.value.diagnostics]
    assert any(f == where or f.startswith(where + ".") for f in fields), fields


def test_reference_values_are_floats_in_order() -> None:
    assert reference_values(record([3, 2.5, 1])) == [3.0, 2.5, 1.0]


@pytest.mark.parametrize("value", [0.5, 1e-6, "0.01", 0.05])
def test_checked_alpha_accepts_1e_minus_6_to_one_half(value: object) -> None:
    assert checked_alpha(value, "--alpha") == float(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, 1, 0.7, 1e-300, 9e-7, math.nan, math.inf, -0.05, "five percent", None, True, False, [0.05], 10**400])
def test_checked_alpha_refuses_the_rest_naming_where_it_came_from(value: object) -> None:
    with pytest.raises(UsageError, match=r"^contract\.metric\.alpha must be a number in \[1e-06, 0\.5\], not "):
        checked_alpha(value, "contract.metric.alpha")


def test_compute_refuses_a_bad_alpha_from_the_contract_or_the_argument() -> None:
    with pytest.raises(UsageError, match=r"^contract\.metric\.alpha must be"):
        compute(record(metric={"alpha": 1e-7}))  # the schema admits it (> 0), the t quantile is out of reach
    with pytest.raises(UsageError, match=r"^--alpha must be"):
        compute(record(metric={"alpha": 0.05}), alpha=0.0)


def test_store_splices_the_interval_into_yaml_keeping_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(RECORD)
    stored = store(path)
    text = path.read_text()
    assert "# this comment stays\n" in text and "      - {seed: 2, value: 2.0}\n" in text
    data = yaml.safe_load(text)
    assert data["contract"]["metric"]["interval"] == stored
    assert data["contract"]["metric"]["alpha"] == 0.05 and data["contract"]["metric"]["name"] == "acc"
    assert stored["high"] == pytest.approx(2 + half_width(0.05), abs=1e-9)


def test_store_with_alpha_sets_the_contract_s_alpha_too(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(RECORD)
    store(path, alpha=0.1)
    metric = yaml.safe_load(path.read_text())["contract"]["metric"]
    assert metric["alpha"] == 0.1 and metric["interval"]["alpha"] == 0.1
    assert metric["interval"]["high"] == pytest.approx(2 + half_width(0.1), abs=1e-9)


def test_store_rewrites_a_json_record_as_json(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(yaml.safe_load(RECORD)))
    stored = store(path, alpha=0.1)
    data = json.loads(path.read_text())
    assert data["contract"]["metric"]["interval"] == stored and data["contract"]["metric"]["alpha"] == 0.1
    assert data["reference"] == yaml.safe_load(RECORD)["reference"]


def test_store_refuses_what_is_not_a_run_record_and_leaves_a_record_it_cannot_compute_unchanged(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: reprogate/v1\nkind: DatasetManifest\n")
    with pytest.raises(UsageError, match="is not a run record"):
        store(manifest)
    one_seed = tmp_path / "r.yaml"
    text = RECORD.replace("      - {seed: 2, value: 2.0}\n      - {seed: 3, value: 3.0}\n", "")
    one_seed.write_text(text)
    with pytest.raises(IntervalError, match="holds 1 seed"):
        store(one_seed)
    assert one_seed.read_text() == text
