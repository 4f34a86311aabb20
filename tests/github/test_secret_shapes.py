"""Issue 38.4: each credential shape that leaked from 0.5.0 — a whole private key (OpenSSH, RSA,
EC, PKCS#8; a log tail that starts inside one), an AWS credentials file, the runner's
`.credentials_rsaparams`, `password:` / `NAME=value` lines — printed by training code that then
fails, through every output a real rebuild and its status job make: the rebuild's stdout and
step summary, verdict.json, report.md, `reprogate report`, the commit status, the sticky
comment, the check run's summary and its annotations (against the API stand-in held to GitHub's
OpenAPI description). None of it may hold the secret; the record content beside it stays."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record, git
from support.gate import FakeGitHub, require_octokit
from support.keys import AWS_CREDENTIALS, AWS_SECRETS, make_key, rsa_parameters, secret_lines
from support.verdicts import NONCE

require_octokit()

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"
LEAK = """
import sys
from pathlib import Path
print("loading credentials for the dataset bucket")
print(Path(__file__).with_name("printed.txt").read_text(), end="")
sys.exit(7)
"""
OTHER = [
    "password: correct-horse-battery-staple-42",
    'settings {"client_secret": "cs-0123456789abcdefghij", "region": "eu"}',
    "export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
]


def printed(case: str, keys: Path) -> tuple[str, list[str]]:
    """What the training code prints for `case` (at most the 20 lines a log tail keeps), and the
    fragments of it that must not leave."""
    if case == "openssh+ec+aws+rsaparams":
        ssh, ec, params = make_key("openssh", keys), make_key("ec", keys), rsa_parameters(keys)
        values = [v for v in json.loads(params).values() if len(v) > 8]
        return ssh + ec + AWS_CREDENTIALS + params + "\n", [*secret_lines(ssh), *secret_lines(ec), *AWS_SECRETS, *values]
    if case == "pkcs8+assignments":
        pkcs8 = make_key("pkcs8", keys)
        gone = ["correct-horse-battery-staple-42", "cs-0123456789abcdefghij", "0123456789abcdef0123456789abcdef01234567"]
        return pkcs8 + "\n".join(OTHER) + "\n", [*secret_lines(pkcs8), *gone]
    rsa = make_key("rsa", keys)  # 27 lines: the tail starts inside the key, without its BEGIN line
    return rsa, secret_lines(rsa)


def leaking_head(repo: Path, text: str) -> str:
    """Commit a head whose entrypoint prints `text` and fails; the record re-pinned to it."""
    from reprogate.core.gittree import tree_id

    project = repo / "tiny" / "project"
    (project / "leak.py").write_text(LEAK)
    (project / "printed.txt").write_text(text)

    def change(record: dict[str, Any]) -> None:
        record["job"]["entrypoint"] = ["python", "leak.py"]
        record["source"]["tree"] = tree_id(project)

    edit_record(repo / TINY, change)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "training code that prints credentials")
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("case", ["openssh+ec+aws+rsaparams", "pkcs8+assignments", "rsa cut by the tail"])
def test_no_credential_shape_leaves_through_any_output(
    cli: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    text, secrets = printed(case, tmp_path)
    head = leaking_head(repo, text)
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    rebuilt = cli("rebuild", TINY, "--out", str(out), "--workdir", str(tmp_path / "work"), "--nonce", NONCE, "--format", "github", cwd=repo)
    verdict = json.loads((out / "verdict.json").read_text())
    assert rebuilt.exit_code == 1 and verdict["diagnosis"] == "run", rebuilt.output
    tail = next(s.get("log_tail", "") for s in verdict["stages"] if s["name"] == "run")
    assert "loading credentials" in tail or "[redacted]" in tail, "the log tail is there, cleaned"
    report = cli("report", str(out / "verdict.json"), cwd=repo)
    posted = post_status(repo, head, "--from-verdict", str(out / "verdict.json"), "--expect-records", json.dumps([TINY]), "--pr", "2")
    assert posted.exit_code == 0 and github.statuses[-1]["state"] == "failure", posted.output
    [check] = github.check_runs
    outputs = {
        "rebuild stdout": rebuilt.output,
        "step summary": summary.read_text(),
        "verdict.json": (out / "verdict.json").read_text(),
        "report.md": (out / "report.md").read_text(),
        "reprogate report": report.output,
        "status": json.dumps(github.statuses),
        "comment": github.comments[-1]["body"],
        "check run summary": check["output"]["summary"] + check["output"]["title"],
        "annotations": json.dumps(check["annotations"]),
    }
    for where, said in outputs.items():
        leaked = [secret[:12] for secret in secrets if secret in said]
        assert not leaked, f"{where} holds {len(leaked)} secret fragment(s), e.g. {leaked[0]}…"
    assert verdict["record"]["digest"].startswith("canonical-v1:sha256:") and verdict["record"]["digest"][20:36] in outputs["report.md"], (
        "a digest is no credential: it stays"
    )
