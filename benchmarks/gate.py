"""Benchmark: `reprogate gate` for a lock-file pull request, from process start to status posted.

Against the local API stand-in the tests use (held to GitHub's OpenAPI description), with
GitHub's own pull_request webhook example. Prints the wall time (aim: under 2 s) and the API calls.
Needs @octokit/openapi and @octokit/webhooks-examples (.ci/run installs them into .ci/npm).

    .venv/bin/python benchmarks/gate.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.github_api import FakeGitHub, OpenAPI, serve, webhook  # noqa: E402

ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **ENV}).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    api = OpenAPI()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(ROOT / "examples", repo)
        shutil.copy(ROOT / "tests" / "fixtures" / "locks" / "before" / "requirements.txt", repo / "requirements.lock.txt")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        base = git(repo, "rev-parse", "HEAD")
        shutil.copy(ROOT / "tests" / "fixtures" / "locks" / "after" / "requirements.txt", repo / "requirements.lock.txt")
        git(repo, "commit", "-qam", "bump six")
        head = git(repo, "rev-parse", "HEAD")
        event = webhook("pull_request", "opened")
        event["repository"].update(full_name="octo/repro", default_branch="main")
        event["pull_request"]["base"]["sha"], event["pull_request"]["head"]["sha"] = base, head
        event["pull_request"]["head"]["repo"]["full_name"] = event["pull_request"]["base"]["repo"]["full_name"] = "octo/repro"
        path = Path(tmp) / "event.json"
        path.write_text(json.dumps(event))
        times, calls = [], 0
        for _ in range(args.repeat):
            fake = FakeGitHub(api, "octo/repro")
            server, url = serve(fake)
            env = {
                **os.environ,
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(path),
                "GITHUB_REPOSITORY": "octo/repro",
                "GITHUB_TOKEN": "ghs_benchmark",
                "GITHUB_API_URL": url,
            }
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "reprogate", "gate", "--repo", str(repo), "--format", "text"], capture_output=True, text=True, env=env)
            times.append(time.perf_counter() - start)
            server.shutdown()
            if done.returncode != 0:
                raise SystemExit(done.stdout + done.stderr)
            calls = len(fake.requests)
    operations = ", ".join(dict.fromkeys(r[3] for r in fake.requests))
    print(f"reprogate gate, lock-file PR: {min(times):.2f} s (best of {args.repeat}), {calls} API calls: {operations}")
    print("(default client settings: writes beyond the first 5 of a run are spaced 1 s apart; a gate makes 3)")


if __name__ == "__main__":
    main()
