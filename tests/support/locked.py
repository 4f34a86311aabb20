"""The record of tests/fixtures/projects/locked, one builder for every realizer that rebuilds it.

The venv realizer tests pin its lock file, the container realizer tests and benchmarks/realizers.py
pin the test image; the rest (contract, shape, entrypoint, configuration) is the same project.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reprogate.core.canonical import canonical_digest, file_digest
from reprogate.core.gittree import tree_id

ENTRYPOINT = ["python", "train.py", "--config", "../config.yaml"]


def locked_record(repo: Path, name: str, container: dict[str, Any], source: dict[str, Any] | None = None, realizer: str | None = None) -> dict[str, Any]:
    """A bitwise record of the locked project in `repo` (its tree and configuration hashed now)."""
    job: dict[str, Any] = {"entrypoint": list(ENTRYPOINT), "workdir": "project"}
    if realizer:
        job["environment"] = {"realizer": realizer}
    job["config"] = {"path": "config.yaml", "hash": canonical_digest(yaml.safe_load((repo / "config.yaml").read_text()))}
    return {
        "apiVersion": "reprogate/v1",
        "kind": "RunRecord",
        "metadata": {"name": name},
        "contract": {
            "level": "bitwise",
            "steps": {"start": 0, "count": 20},
            "tensors": ["model_state"],
            "envelope": {"world_sizes": [2], "nodes": {"min": 1, "max": 1}, "framework": {"name": "torch", "release": "2.13"}},
        },
        "container": container,
        "source": {"path": "project", "tree": tree_id(repo / "project"), "dirty": False, **(source or {})},
        "dataset": {"used": False, "reason": "the data is generated from the seed"},
        "seeds": {"global": 3},
        "execution": {"world_size": 2, "nodes": 1, "ranks_per_node": 2, "collective": {"backend": "gloo"}, "env": {"OMP_NUM_THREADS": "1"}},
        "job": job,
    }


def commit_with_reference(repo: Path, record: dict[str, Any], trace: Path) -> Path:
    """Pin `trace` (inside `repo`) as the record's reference, write records/contained.yaml and
    commit the repository: the state a rebuild of the locked project starts from."""
    from support import git

    record["reference"] = {"trace": {"path": trace.relative_to(repo).as_posix(), "checksum": file_digest(trace)}}
    path = repo / "records" / "contained.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "reference")
    return path
