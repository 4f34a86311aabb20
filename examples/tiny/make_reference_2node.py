"""Produce the two-node example's reference on Slurm: 5 seeds, each one job of 2 nodes x 1 rank.

Run from the repository after changing the project, data or configuration:
    python examples/tiny/make_reference_2node.py [--work SHARED_FOLDER]
With SLURM_CONF (or the system's slurm.conf) naming a cluster whose default partition (or
SBATCH_PARTITION) has two nodes, it runs there; SHARED_FOLDER must then be a folder every node
sees at the same path, holding this Python environment's interpreter as well. Without
SLURM_CONF it starts the repository's two-node loopback cluster for the duration
(tests/support/slurm.py: munged, slurmctld and two slurmd from Debian's slurm-wlm and munge).

Every seed runs through the launcher `reprogate rebuild --launcher slurm` uses (an sbatch job,
ranks started by srun, torchrun's variables from Slurm's), with the record's execution.env, so
the reference is made the way it will be rebuilt. It keeps seed 1's trace as
tiny/reference/trace-2node.jsonl, fills record-2node.yaml.tmpl with real digests and per-seed
metrics into records/tiny-2node.yaml, and stores the prediction interval.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import yaml

from reprogate.core.canonical import canonical_digest, file_digest
from reprogate.core.documents import load_document
from reprogate.core.gittree import tree_id
from reprogate.datasets import manifest_digest
from reprogate.rebuild.compare import metrics
from reprogate.rebuild.inject import runtime_folder
from reprogate.rebuild.interval import store
from reprogate.rebuild.launchers import record_shape
from reprogate.rebuild.launchers.slurm import SlurmLauncher
from reprogate.rebuild.ranks import RankHosts, rank_environment
from reprogate.rebuild.realizers.current import CurrentEnvironment
from reprogate.trace import read_trace

HERE = Path(__file__).resolve().parent
SEEDS = [1, 2, 3, 4, 5]
ENTRYPOINT = ["python", "train.py", "--config", "../config/tiny.yaml"]


def loopback_cluster(stack: ExitStack) -> None:
    """Start the repository's two-node test cluster and point SLURM_CONF at it."""
    sys.path.insert(0, str(HERE.parent.parent / "tests"))
    from support.slurm import start_cluster

    cluster = start_cluster(Path(tempfile.mkdtemp(prefix="reprogate-slurm-")))
    stack.callback(cluster.stop)
    os.environ["SLURM_CONF"] = str(cluster.conf)
    print(f"started the loopback cluster ({cluster.conf})")


def run_seed(launcher: SlurmLauncher, shape, env: dict, work: Path, seed: int) -> list[dict]:
    folder = work / "runs" / f"seed-{seed}"
    trace_dir = folder / "trace"
    trace_dir.mkdir(parents=True)
    hosts = RankHosts(launcher, CurrentEnvironment(), shape, env, folder, work / "tiny" / "project", False, "gloo", 60.0)
    try:
        hosts.start()
        ready = hosts.wait_ready()
        if ready.failed:
            raise SystemExit(f"seed {seed}: the ranks did not start: {ready.detail}\n{ready.log_tail}")
        hosts.go(
            ENTRYPOINT, work / "tiny" / "project", {"REPROGATE_SEED": str(seed), "REPROGATE_TRACE_DIR": str(trace_dir), "MASTER_PORT": str(ready.spare_port)}
        )
        done = hosts.wait_done(600.0)
        if not done.ok:
            raise SystemExit(f"seed {seed} failed: {done.detail}\n{done.log_tail}")
        print(f"seed {seed}: ranks on {', '.join(f'{r}={n}' for r, n in sorted(hosts.group.placement().items()))}")
    finally:
        hosts.stop()
    return read_trace(sorted(trace_dir.glob("trace-rank*.jsonl")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="a folder every node shares (default: a temporary one, enough for the loopback cluster)")
    args = parser.parse_args()
    template = (HERE / "record-2node.yaml.tmpl").read_text()
    data = yaml.safe_load(template.replace("@VALUES@", "[]"))
    values = []
    with ExitStack() as stack:
        if not os.environ.get("SLURM_CONF"):
            loopback_cluster(stack)
        work = Path(tempfile.mkdtemp(prefix="tiny-2node-", dir=args.work))
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        for part in ("project", "config", "data"):
            shutil.copytree(HERE / part, work / "tiny" / part)
        shape = record_shape(data, time_limit=900.0)
        launcher = SlurmLauncher()
        launcher.admit(shape)
        env = rank_environment(data["execution"]["env"], work, runtime_folder(work / ".reprogate" / "runtime"))
        for seed in SEEDS:
            events = run_seed(launcher, shape, env, work, seed)
            values.append({"seed": seed, "value": metrics(events)["val_loss"]})
            if seed == SEEDS[0]:
                with open(HERE / "reference" / "trace-2node.jsonl", "w", encoding="utf-8") as fh:
                    fh.writelines(json.dumps(event.to_json(), sort_keys=True) + "\n" for event in events)
            print(f"seed {seed}: val_loss {values[-1]['value']:.6f}")
    text = template.replace("@TREE@", tree_id(HERE / "project"))
    text = text.replace("@MANIFEST@", manifest_digest(load_document(HERE / "data" / "tiny.manifest.yaml").data))
    text = text.replace("@CONFIG@", canonical_digest(load_document(HERE / "config" / "tiny.yaml").data))
    text = text.replace("@TRACE@", file_digest(HERE / "reference" / "trace-2node.jsonl"))
    text = text.replace("@VALUES@", "\n" + "".join(f"      - {{seed: {v['seed']}, value: {v['value']!r}}}\n" for v in values).rstrip("\n"))
    record = HERE / "records" / "tiny-2node.yaml"
    record.write_text(text)
    interval = store(record)
    print(f"wrote {record}: interval [{interval['low']:.6f}, {interval['high']:.6f}]")


if __name__ == "__main__":
    main()
