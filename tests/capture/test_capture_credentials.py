"""Issue 13: `capture` must never write a credential into a record, however a value carries it
(URL userinfo, a password holding `/`, a token query parameter), and `validate` refuses a record
that holds one. Both use the one redactor (core/redact.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import EXAMPLES, edit_record, git

from reprogate.capture.layers import without_credentials
from reprogate.core.redact import looks_secret, strip_credentials

Cli = Callable[..., Result]
PASSWORD = "pa/ss-w0rd-with-slash"


@pytest.mark.parametrize(
    "value, stripped",
    [
        (f"https://deploy:{PASSWORD}@git.example.com/org/repo.git", "https://git.example.com/org/repo.git"),
        ("https://x-access-token:ghs_abcdefghijklmnopqrstuvwxyz012345@github.com/o/r", "https://github.com/o/r"),
        ("git+https://tok3n@example.com/pkg", "git+https://example.com/pkg"),
        ("admin:pw@node-1", "node-1"),
        ("https://mirror.example.com/simple?token=abc123&arch=x86_64", "https://mirror.example.com/simple?arch=x86_64"),
        ("https://bucket.example.com/d77/shard-0?X-Amz-Signature=deadbeef", "https://bucket.example.com/d77/shard-0"),
        ("ghcr.io/org/train@sha256:" + "0" * 64, "ghcr.io/org/train@sha256:" + "0" * 64),
        ("is this a question?", "is this a question?"),
    ],
)
def test_strip_credentials_keeps_the_address_and_drops_the_secret(value: str, stripped: str) -> None:
    assert strip_credentials(value) == stripped
    assert not looks_secret(stripped)


def test_the_post_pass_reaches_every_value() -> None:
    document = {"a": [f"https://u:{PASSWORD}@h/x", {"b": "ok", "c": "https://h/y?access_token=zzz"}], "n": 3}
    assert without_credentials(document) == {"a": ["https://h/x", {"b": "ok", "c": "https://h/y"}], "n": 3}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_capture_writes_no_url_credential_and_the_record_still_validates(repo: Path, tmp_path: Path, cli: Cli) -> None:
    git(repo, "remote", "add", "origin", f"https://deploy:{PASSWORD}@git.example.com/org/repo.git")
    env = {
        **os.environ,
        "MASTER_ADDR": "admin:hunter2-pw@node-1",
        "TORCH_HOME": "https://cache.example.com/torch?token=t0k3n-in-query",
        "NCCL_SOCKET_IFNAME": "eth0",
    }
    record = repo / "records" / "startup.yaml"
    out = tmp_path / "capture.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "capture", "--no-framework", "-o", str(out), "--into", str(record), "--root", str(repo)],
        capture_output=True,
        env=env,
        cwd=repo,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    written = out.read_bytes() + record.read_bytes() + done.stdout + done.stderr
    for secret in (PASSWORD, "pa/ss", "hunter2", "t0k3n", "deploy:"):
        assert secret.encode() not in written, secret
    assert b"https://git.example.com/org/repo.git" in out.read_bytes()
    result = cli("validate", str(record), cwd=repo)
    assert "secret-in-record" not in result.output and "looks like a credential" not in result.output, result.output


@pytest.mark.parametrize(
    "field, value",
    [
        (("source", "repository"), f"https://deploy:{PASSWORD}@git.example.com/org/repo.git"),
        (("source", "repository"), "https://tok3n@github.com/org/repo"),
        (("metadata", "description"), "mirror at https://pypi.example.com/simple?token=abc123"),
        (("execution", "env", "MASTER_ADDR"), "admin:pw@node-1"),
    ],
)
def test_validate_refuses_a_record_holding_url_credentials(cli: Cli, project: Path, field: tuple[str, ...], value: str) -> None:
    record = project / "records" / "startup.yaml"

    def plant(data: dict) -> None:
        node = data
        for part in field[:-1]:
            node = node.setdefault(part, {})
        node[field[-1]] = value

    edit_record(record, plant)
    result = cli("validate", str(record), cwd=project)
    assert result.exit_code == 1, result.output
    assert "looks like a credential" in result.output and value not in result.output
