"""The training-side tracer: digests, the meta it writes, background hashing and the portable CPU mode."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support import REPO

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

import torch
from torch import nn

from reprogate.core.canonical import canonical_digest
from reprogate.runtime import trace


def reference_digest(t: torch.Tensor, algorithm: str = "sha256") -> str:
    """Digest of dtype, shape and the C-order bytes, computed independently of the tracer."""
    dense = t.detach().contiguous()
    raw = dense.reshape(-1).view(torch.uint8).numpy().tobytes() if dense.numel() else b""
    h = trace.new_hash(algorithm)
    h.update(f"{str(t.dtype)[6:]}|{tuple(t.shape)}|".encode() + raw)
    return f"{algorithm}:{h.hexdigest()}"


def strided_tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(64, 48, 10, generator=g)
    return {
        "transposed": torch.randn(300, 700, generator=g).t(),
        "every other row": torch.randn(1000, 33, generator=g)[::2],
        "permuted": base.permute(2, 0, 1),
        "column slice": torch.randn(128, 256, generator=g)[:, 3:200],
        "expanded": torch.randn(1, 500, generator=g).expand(40, 500),
        "bfloat16 transposed": torch.randn(200, 300, generator=g).to(torch.bfloat16).t(),
        "int64 strided 1-d": torch.arange(100_000)[::3],
        "empty": torch.randn(0, 5).t(),
    }


@pytest.mark.parametrize("name", list(strided_tensors()))
@pytest.mark.parametrize("block_bytes", [1 << 20, 256])
def test_non_contiguous_tensors_digest_like_their_contiguous_bytes(name: str, block_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "BLOCK_BYTES", block_bytes)  # 256 B forces the row-by-row recursion
    t = strided_tensors()[name]
    assert t.numel() == 0 or not t.is_contiguous()
    assert trace.tensor_digest(t) == trace.tensor_digest(t.contiguous()) == reference_digest(t)


def test_a_non_contiguous_tensor_is_never_copied_whole() -> None:
    from torch.profiler import ProfilerActivity, profile

    t = torch.randn(512, 2048).t()  # 4 MiB, column-major
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        digest = trace.tensor_digest(t)
    allocations = [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0]
    assert digest == reference_digest(t)
    assert allocations and max(allocations) <= trace.BLOCK_BYTES < t.numel() * t.element_size()


def test_blake3_digests_are_declared_by_their_prefix() -> None:
    t = torch.randn(33, 17).t()
    digest = trace.tensor_digest(t, "blake3")
    assert digest.startswith("blake3:") and digest == reference_digest(t, "blake3")
    assert trace.digest_algorithm(digest) == "blake3" and trace.digest_algorithm(trace.tensor_digest(t)) == "sha256"
    with pytest.raises(ValueError, match="unknown digest algorithm"):
        trace.tensor_digest(t, "md5")


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.hidden = nn.Linear(16, 16)
        self.norm = nn.BatchNorm1d(16)
        self.head = nn.Linear(16, 50, bias=False)
        self.head.weight = self.embed.weight  # weight tying: one tensor under two names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(torch.tanh(self.hidden(self.embed(x)))))


def test_model_state_reuses_tensor_digests_and_hashes_tied_weights_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Tied()
    state = model.state_dict()
    expected = hashlib.sha256("".join(f"{n}={reference_digest(state[n])}\n" for n in sorted(state)).encode()).hexdigest()
    assert trace.model_state_digest(model) == "sha256:" + expected  # the format references were made in
    fed: list[tuple[int, ...]] = []
    original = trace._feed_tensor
    monkeypatch.setattr(trace, "_feed_tensor", lambda h, t: (fed.append(tuple(t.shape)), original(h, t))[1])
    tracer = trace.Tracer(tmp_path, rank=0, every=1, tensors=["hidden.weight", "embed.weight"], model=model)
    tracer.step(1, loss=1.0)
    tracer.close()
    distinct = {(p.data_ptr(), p.shape) for p in state.values()}
    assert len(fed) == len(distinct) == len(state) - 1  # every tensor once; the tied head.weight reuses embed.weight's
    event = [json.loads(line) for line in tracer.path.read_text().splitlines()][1]
    assert event["model_state"] == "sha256:" + expected
    assert event["tensors"] == {"hidden.weight": reference_digest(state["hidden.weight"]), "embed.weight": reference_digest(state["embed.weight"])}


def train(folder: Path, steps: int = 6, **tracer_options: Any) -> list[str]:
    """A few optimizer steps of a small model traced every other step; returns the trace lines."""
    trace.seed_everything(3)
    model = Tied()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    options = dict(tracer_options)
    if options.pop("guard", False):
        options["optimizers"] = [optimizer]
    tracer = trace.Tracer(folder, rank=0, every=2, tensors=["hidden.weight"], model=model, **options)
    g = torch.Generator().manual_seed(5)
    for step in range(1, steps + 1):
        x = torch.randint(0, 50, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tracer.step(step, batch=x, loss=loss, lr=0.05)
    tracer.metric("val_loss", 0.5, steps)
    tracer.close()
    return tracer.path.read_text().splitlines()


@pytest.mark.parametrize("options", [{"background": True}, {"background": True, "guard": True}, {"digest": "blake3", "background": True, "guard": True}])
def test_hashing_off_the_training_thread_writes_the_same_trace(tmp_path: Path, options: dict[str, Any]) -> None:
    digest = options.get("digest", "sha256")
    inline = train(tmp_path / "inline", digest=digest)
    background = train(tmp_path / "background", **options)
    assert background == inline
    steps = [e for e in map(json.loads, inline) if e["type"] == "step"]
    assert all(e["batch"].startswith(digest + ":") for e in steps) and all(e["model_state"].startswith(digest + ":") for e in steps if e["step"] % 2 == 0)


def test_copy_free_hashing_finishes_before_the_optimizer_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow hash on the worker must still see the parameters of its own step: the optimizer's
    step pre-hook waits for it. Without the hook the digests would be of later weights."""
    import time

    inline = train(tmp_path / "inline")

    class Slow:
        def __init__(self) -> None:
            self.inner = hashlib.sha256()

        def update(self, data: Any) -> None:
            time.sleep(0.002)
            self.inner.update(data)

        def hexdigest(self) -> str:
            return self.inner.hexdigest()

    original = trace.new_hash
    monkeypatch.setattr(trace, "new_hash", lambda algorithm="sha256", parallel=False: Slow() if algorithm == "sha256" else original(algorithm, parallel))
    assert train(tmp_path / "guarded", background=True, guard=True) == inline


def test_meta_states_what_the_run_used_even_when_the_tracer_came_first(tmp_path: Path) -> None:
    config = {"model": {"hidden": 64}, "train": {"lr": 0.01}}
    manifest = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "d", "shards": [], "digest": "canonical-v1:sha256:" + "0" * 64}
    tracer = trace.Tracer(tmp_path, rank=0, config=config, dataset_manifest=manifest, meta={"steps": 3})
    trace.seed_everything(11)  # after the tracer: the meta is read at the first event
    tracer.step(1, loss=1.5)
    tracer.close()
    meta = json.loads(tracer.path.read_text().splitlines()[0])
    assert meta["type"] == "meta" and meta["seed"] == 11 and meta["world_size"] == int(os.environ.get("WORLD_SIZE", "1")) and meta["steps"] == 3
    assert meta["config_digest"] == canonical_digest(config)
    assert meta["dataset_digest"] == canonical_digest({k: v for k, v in manifest.items() if k != "digest"})
    assert meta["digest"] == "sha256" and meta["torch"] == torch.__version__
    assert meta["cpu"]["capability"] == torch.backends.cpu.get_cpu_capability().lower() and meta["cpu"]["threads"] == torch.get_num_threads()
    assert meta["determinism"]["deterministic_algorithms"] is True and meta["determinism"]["tf32_matmul"] is False


PORTABLE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from reprogate.runtime.trace import Tracer, seed_everything
    import torch
    from torch import nn
    seed_everything(1, portable_cpu=sys.argv[2] == "portable")
    model = nn.Sequential(
        nn.Unflatten(1, (4, 10)), nn.Conv1d(4, 8, 3), nn.Flatten(),
        nn.Linear(64, 96), nn.Tanh(), nn.Linear(96, 96), nn.GELU(), nn.Linear(96, 10),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(2)
    with Tracer(sys.argv[1], rank=0, every=5, model=model) as tracer:
        for step in range(1, 11):
            x, y = torch.randn(64, 40, generator=g), torch.randint(0, 10, (64,), generator=g)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            tracer.step(step, batch=(x, y), loss=loss)
    """
)


def run_script(folder: Path, mode: str, capability: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "RANK", "WORLD_SIZE")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    if capability is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    done = subprocess.run([sys.executable, "-c", PORTABLE_SCRIPT, str(folder), mode], env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in (folder / "trace-rank0.jsonl").read_text().splitlines()]
    return events[0], events[1:]


def test_portable_mode_gives_identical_digests_whatever_capability_the_machine_would_pick(tmp_path: Path) -> None:
    """ATEN_CPU_CAPABILITY in the environment stands in for machines whose CPUs pick other kernels:
    in portable mode the script pins the baseline kernels and MKL's common code path itself."""
    meta_default, default = run_script(tmp_path / "default", "portable", "default")
    meta_avx2, avx2 = run_script(tmp_path / "avx2", "portable", "avx2")
    assert [e["model_state"] for e in default if "model_state" in e] == [e["model_state"] for e in avx2 if "model_state" in e]
    assert default == avx2
    for meta in (meta_default, meta_avx2):
        assert meta["cpu"]["capability"] == "default" and meta["cpu"]["portable"] is True
        assert meta["cpu"].get("mkl_cbwr", "COMPATIBLE").startswith("COMPATIBLE") and meta["determinism"]["mkldnn_enabled"] is False


def test_without_portable_mode_the_kernels_follow_the_machine(tmp_path: Path) -> None:
    """The control for the test above: unpinned, torch takes the CPU's best kernels (or the
    environment's), and those give other bits than the baseline ones wherever they differ."""
    meta_forced, forced = run_script(tmp_path / "forced", "plain", "default")
    meta_natural, natural = run_script(tmp_path / "natural", "plain", None)
    assert meta_forced["cpu"]["capability"] == "default" and meta_forced["cpu"]["portable"] is False
    if meta_natural["cpu"]["capability"] != "default":  # a CPU with AVX2 or AVX-512
        assert [e.get("model_state") for e in forced] != [e.get("model_state") for e in natural]


def test_portable_mode_refuses_to_start_after_torch_chose_its_kernels() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    env.update(ATEN_CPU_CAPABILITY="avx2", PYTHONPATH=str(REPO))
    script = "import torch\ntorch.ones(3).sum()\nfrom reprogate.trace import seed_everything\nseed_everything(1, portable_cpu=True)\n"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode != 0 and "came too late" in done.stderr and "ATEN_CPU_CAPABILITY=default" in done.stderr


def test_compare_refuses_digests_of_different_algorithms(tmp_path: Path) -> None:
    from reprogate.rebuild.compare import compare_batches, compare_tensors, step_events
    from reprogate.runtime.trace import read_trace

    sha = train(tmp_path / "sha")
    b3 = train(tmp_path / "b3", digest="blake3")
    ref = step_events(read_trace([tmp_path / "sha" / "trace-rank0.jsonl"]), 1, None)
    new = step_events(read_trace([tmp_path / "b3" / "trace-rank0.jsonl"]), 1, None)
    assert sha != b3
    batches = compare_batches(ref, new)
    tensors = compare_tensors(ref, new, ["model_state"])
    for outcome in (batches, tensors):
        assert outcome.status == "fail" and "different digest algorithms" in outcome.detail and "differs" not in outcome.detail


def test_trace_module_imports_nothing_heavy() -> None:
    script = "import sys\nimport reprogate.trace\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'blake3', 'yaml', 'reprogate')))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60, cwd=REPO)
    assert json.loads(done.stdout.replace("'", '"')) == [
        "reprogate",
        "reprogate.runtime",
        "reprogate.runtime.portable_cpu",
        "reprogate.runtime.trace",
        "reprogate.trace",
    ]
