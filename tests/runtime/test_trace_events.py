"""reprogate/runtime/trace.py: each trace line is checked once and read into one frozen typed event;
nothing the line says is lost on the way (the typed value gives the line back), and a line of the
wrong shape is refused naming the line and the field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support import REPO

from reprogate.rebuild.compare import compare_values, first_difference, step_events
from reprogate.runtime.trace import (
    CpuFacts,
    MetaEvent,
    MetricEvent,
    OtherEvent,
    StepEvent,
    TraceError,
    leading_meta_events,
    meta_events,
    parse_event,
    read_trace,
    trace_events,
)

EXAMPLE_TRACES = sorted((REPO / "examples").rglob("trace*.jsonl"))
FIELDS = {
    StepEvent: ("step", "rank", "loss", "lr", "batch", "metrics", "tensors", "model_state"),
    MetricEvent: ("name", "value", "rank", "step"),
    MetaEvent: ("rank", "world_size", "seed", "digest", "config_digest", "dataset_digest", "torch", "cpu", "determinism", "step"),
}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_there_are_example_traces_to_read() -> None:
    assert len(EXAMPLE_TRACES) >= 5 and all(lines(path) for path in EXAMPLE_TRACES)


@pytest.mark.parametrize("path", EXAMPLE_TRACES, ids=lambda p: str(p.relative_to(REPO / "examples")))
def test_every_field_of_a_real_trace_is_an_attribute_or_in_extra(path: Path) -> None:
    raw = lines(path)
    events = read_trace([path])
    assert len(events) == len(raw)
    # the typed events give back every line exactly (sorted as the reader sorts)
    assert sorted(json.dumps(e.to_json(), sort_keys=True) for e in events) == sorted(json.dumps(r, sort_keys=True) for r in raw)
    for event in events:
        assert not isinstance(event, OtherEvent), "the examples hold only events of this format"
        line = event.to_json()
        named = FIELDS[type(event)]
        for name in named:
            value = getattr(event, name)
            assert (value is None) == (name not in line) or name == "rank", name
            if value is not None:
                assert (value.to_json() if isinstance(value, CpuFacts) else value) == line[name], name  # a mapping proxy equals its object
        assert dict(event.extra) == {k: v for k, v in line.items() if k not in (*named, "type")}


def test_the_reference_of_the_tiny_example_reads_into_its_kinds() -> None:
    events = read_trace([REPO / "examples" / "tiny" / "reference" / "trace.jsonl"])
    metas = meta_events(events)
    assert [m.rank for m in metas] == [0, 1] and all(m.world_size == 2 and m.seed == 1 and m.digest == "sha256" for m in metas)
    assert metas[0].extra == {"steps": 80}, "a field the meta's format does not name is kept"
    assert metas[0].determinism is not None and metas[0].determinism["deterministic_algorithms"] is True
    cpu = metas[0].cpu
    assert cpu == CpuFacts("x86_64", "default", "COMPATIBLE", 1, False, {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OMP_NUM_THREADS": "1"})
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert len(steps) == 160 and all(s.batch and s.model_state and s.tensors and s.loss is not None for s in steps)
    assert [(m.name, m.rank) for m in events if isinstance(m, MetricEvent)] == [("val_loss", 0)]
    assert leading_meta_events(REPO / "examples" / "tiny" / "reference" / "trace.jsonl") == metas


def test_the_events_are_frozen_to_the_last_mapping() -> None:
    (meta, step) = trace_events(
        [
            '{"type": "meta", "rank": 0, "cpu": {"env": {"OMP_NUM_THREADS": "1"}, "flags": ["avx2"]}, "framework": {"name": "x"}}\n'
            '{"type": "step", "rank": 0, "step": 1, "metrics": {"grad_norm": 1.0}, "tensors": {"w": "sha256:aa"}}\n'
        ]
    )
    assert isinstance(meta, MetaEvent) and isinstance(step, StepEvent) and meta.cpu is not None and step.metrics is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.step = 2  # type: ignore[misc]
    assert meta.cpu.env is not None
    for table in (step.metrics, step.tensors, meta.cpu.env, meta.cpu.extra, meta.extra, meta.extra["framework"]):
        with pytest.raises(TypeError):
            table["x"] = 1  # type: ignore[index]
    assert meta.cpu.extra["flags"] == ("avx2",), "an array is a tuple, and a cpu fact the format does not name is kept"
    assert meta.to_json()["cpu"] == {"env": {"OMP_NUM_THREADS": "1"}, "flags": ["avx2"]}, "and plain JSON again when written out"


def test_a_step_field_the_format_does_not_name_is_kept_and_compared() -> None:
    line = {"type": "step", "rank": 0, "step": 3, "loss": 1.0, "grad_norm": 0.5, "note": {"why": "a script added it"}}
    event = parse_event(line, "line 1")
    assert isinstance(event, StepEvent) and event.extra == {"grad_norm": 0.5, "note": {"why": "a script added it"}}
    assert event.to_json() == line and event.has("grad_norm") and event.named("grad_norm") == 0.5
    assert not event.has("lr") and event.named("lr") is None
    other = parse_event({**line, "grad_norm": 0.75}, "line 1")
    assert other != event, "two steps that differ only in an added field are not equal"
    # a contract's tolerance that names the added field compares it, as it did on the raw line
    outcome, _ = compare_values(step_events([event], 0, None), step_events([other], 0, None), ["grad_norm"], 0.0, 0.0)
    assert outcome.status == "fail" and "grad_norm" in outcome.detail
    # the first difference reads the fields of the format (an added field is not one of its inputs or outputs)
    assert first_difference(step_events([event], 0, None), step_events([other], 0, None)) is None


def test_a_line_of_another_type_is_kept_whole() -> None:
    (event,) = trace_events(['{"type": "checkpoint", "rank": 1, "step": 40, "path": "ckpt/40.pt"}'])
    assert isinstance(event, OtherEvent) and event.type == "checkpoint" and (event.rank, event.step) == (1, 40)
    assert event.to_json() == {"type": "checkpoint", "rank": 1, "step": 40, "path": "ckpt/40.pt"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1]", "line 2: a trace line is a JSON object, not a list"),
        ('{"type": "step", "rank": 0}', "line 2: a step event has no step"),
        ('{"type": "step", "rank": "0", "step": 1}', 'line 2: rank is an integer, not "0"'),
        ('{"type": "step", "step": 1, "loss": "2.3"}', 'line 2: loss is a number, not "2.3"'),
        ('{"type": "metric", "name": 7, "value": 1.0}', "line 2: a metric event's name is a string"),
        ('{"type": "metric", "name": "acc", "value": "high"}', "line 2: metric 'acc': value is a number, not \"high\""),
        ('{"type": "step", "step": 1, "batch": 5}', "line 2: batch is a string, not 5"),
        ('{"type": "step", "step": 1, "metrics": [1]}', "line 2: metrics is an object, not [1]"),
        ('{"type": "step", "step": 1, "metrics": {"grad_norm": "1"}}', 'line 2: metrics.grad_norm is a number, not "1"'),
        ('{"type": "step", "step": 1, "tensors": {"w": 1}}', "line 2: tensors.w is a string, not 1"),
        ('{"type": "meta", "rank": 0, "seed": "7"}', 'line 2: seed is an integer, not "7"'),
        ('{"type": "meta", "rank": 0, "cpu": "x86"}', 'line 2: cpu is an object, not "x86"'),
        ('{"type": "meta", "rank": 0, "cpu": {"capability": 5}}', "line 2: cpu.capability is a string, not 5"),
        ('{"type": "meta", "rank": 0, "cpu": {"portable": "yes"}}', 'line 2: cpu.portable is true or false, not "yes"'),
        ('{"type": "meta", "rank": 0, "cpu": {"env": {"OMP_NUM_THREADS": 1}}}', "line 2: cpu.env.OMP_NUM_THREADS is a string, not 1"),
        ('{"type": "meta", "rank": 0, "config_digest": 1}', "line 2: config_digest is a string, not 1"),
    ],
)
def test_a_line_of_the_wrong_shape_is_refused_naming_the_line_and_the_field(line: str, message: str) -> None:
    with pytest.raises(TraceError) as refused:
        trace_events(['{"type": "meta", "rank": 0}\n' + line + "\n"])
    assert str(refused.value) == message
