"""Issue 13's attacks on the one HTTP policy (core/http.py), through the clients that use it
(GitHub, registries, dataset remotes) and the commands a user runs: each must end as a plain
exit 3 (or a refusal before anything is sent), never a hang, a traceback or a leaked credential."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support.gate import (
    REPOSITORY,
    TOKEN,
    FakeGitHub,
    bump_lock,
    pr_event,
    require_octokit,
    statuses,
)
from support.hostile_http import (
    Hostile,
    bearer_challenge,
    drip,
    hostile,
    huge,
    json_answer,
    redirect_loop,
)

from reprogate.core.errors import InfrastructureError, UsageError

Cli = Callable[..., Result]
DEADLINE = 2.0  # seconds: the tests shorten the policy's deadline so a hang shows up quickly


def abandoned(server: Hostile) -> bool:
    """The client hung up: the dripping handler stopped long before its 250 s answer was sent."""
    return server.done.wait(20) and server.sent < 1000


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output, result.output


def test_pagination_never_follows_a_link_to_another_host(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    require_octokit()
    with hostile(json_answer([])) as elsewhere:
        github.link = f'<{elsewhere.url}/repos/{REPOSITORY}/commits/x/statuses?page=2>; rel="next"'
        base, head = bump_lock(repo)
        result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 3, result.output
    assert elsewhere.seen == [] and "the token stays with its host" in result.output
    assert statuses(github) == []


def test_basic_credentials_never_go_in_clear_to_a_foreign_token_realm(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROGATE_REGISTRY_USERNAME", "alice")
    monkeypatch.setenv("REPROGATE_REGISTRY_PASSWORD", "s3cret-registry-password")
    with hostile(bearer_challenge("http://auth.registry.invalid/token")) as registry:
        host = registry.url.removeprefix("http://")
        result = cli("image", "resolve", f"{host}/team/train:v1")
    no_traceback(result)
    assert result.exit_code == 2 and "only sent over https" in result.output
    assert "s3cret" not in result.output and all("Authorization" not in headers for _, _, headers in registry.seen)


def test_a_drip_feeding_api_ends_at_the_deadline() -> None:
    from reprogate.github.client import POLICY, GitHubClient

    with hostile(drip()) as server:
        client = GitHubClient(TOKEN, api_url=server.url, policy=dataclasses.replace(POLICY, deadline=DEADLINE, retries=0))
        with pytest.raises(InfrastructureError, match="within"):
            client.combined_status(REPOSITORY, "a" * 40)
    assert abandoned(server)


def test_a_drip_feeding_registry_ends_at_the_deadline() -> None:
    from reprogate.images.errors import RegistryUnreachable
    from reprogate.images.registry import RegistryClient

    with hostile(drip()) as server:
        client = RegistryClient(timeout=1.0, retries=0)
        client.http.policy = dataclasses.replace(client.http.policy, deadline=DEADLINE)
        with pytest.raises(RegistryUnreachable, match="within"):
            client.resolve(f"{server.url.removeprefix('http://')}/team/train:v1")
    assert abandoned(server)


def test_a_drip_feeding_dataset_remote_ends_at_the_deadline() -> None:
    from reprogate.datasets.remote import Remote, RemoteUnreachable

    with hostile(drip()) as server:
        remote = Remote(timeout=1.0, retries=0)
        remote.http.policy = dataclasses.replace(remote.http.policy, deadline=DEADLINE)
        with pytest.raises(RemoteUnreachable, match="within"):
            remote.digest(f"{server.url}/shard-000", "sha256")
    assert abandoned(server)


def test_an_oversized_manifest_is_refused_without_reading_it(cli: Cli) -> None:
    with hostile(huge()) as registry:
        result = cli("image", "resolve", f"{registry.url.removeprefix('http://')}/team/train:v1")
    no_traceback(result)
    assert result.exit_code == 3 and "larger than 4,194,304 bytes" in result.output
    assert registry.sent < 64 * 1024 * 1024  # what socket buffers hold, not 300 MB


def test_a_redirect_loop_is_exit_3_for_a_registry(cli: Cli) -> None:
    with hostile(redirect_loop()) as registry:
        result = cli("image", "resolve", f"{registry.url.removeprefix('http://')}/team/train:v1")
    no_traceback(result)
    assert result.exit_code == 3 and "redirect" in result.output


def test_a_redirect_loop_is_exit_3_for_the_api(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    with hostile(redirect_loop()) as api:
        for key, value in {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": api.url, "GITHUB_SHA": "a" * 40}.items():
            monkeypatch.setenv(key, value)
        result = cli("github", "status", "--state", "success")
    no_traceback(result)
    assert result.exit_code == 3 and "redirect" in result.output and TOKEN not in result.output


@pytest.mark.parametrize(
    "args, answer",
    [
        (("github", "status", "--state", "success"), ["a list, not a status"]),
        (("github", "comment", "--pr", "2", "--body-file", "BODY"), {"not": "a list of comments"}),
        (("github", "dispatch", "--workflow", "w.yml", "--ref", "main"), [1, 2, 3]),
        (("github", "status", "--state", "success"), "a string"),
    ],
)
def test_api_answers_of_the_wrong_json_type_are_exit_3(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: tuple[str, ...], answer: object
) -> None:
    body = tmp_path / "body.md"
    body.write_text("hello\n")
    status = 201 if args[1] == "status" else 200
    with hostile(json_answer(answer, status)) as api:
        for key, value in {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": api.url, "GITHUB_SHA": "a" * 40}.items():
            monkeypatch.setenv(key, value)
        result = cli(*[str(body) if a == "BODY" else a for a in args])
    no_traceback(result)
    assert result.exit_code == 3, result.output


def test_a_manifest_of_the_wrong_json_type_is_exit_3(cli: Cli) -> None:
    with hostile(json_answer(["not", "a", "manifest"], headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"})) as registry:
        result = cli("image", "resolve", f"{registry.url.removeprefix('http://')}/team/train:v1")
    no_traceback(result)
    assert result.exit_code == 3 and "not a JSON object" in result.output


def test_credentials_are_refused_over_plain_http_to_another_machine() -> None:
    from reprogate.core.http import HttpClient

    client = HttpClient()
    client.authorize("http://api.example.invalid", "Bearer x")
    with pytest.raises(UsageError, match="only sent over https"):
        client.request("GET", "http://api.example.invalid/repos")


def deep(status: int = 201, headers: dict[str, str] | None = None) -> Callable[..., None]:
    """A JSON answer 100,000 arrays deep: valid JSON that no recursive parser finishes."""
    from support.hostile_http import answer

    body = b"[" * 100_000 + b"]" * 100_000
    return lambda handler, _state: answer(handler, status, body, {"Content-Type": "application/json", **(headers or {})})


def test_json_nested_100k_deep_from_the_api_or_a_registry_is_exit_3(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    with hostile(deep()) as api:
        for key, value in {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": api.url, "GITHUB_SHA": "a" * 40}.items():
            monkeypatch.setenv(key, value)
        result = cli("github", "status", "--state", "success")
    no_traceback(result)
    assert result.exit_code == 3 and "nested too deep" in result.output, result.output
    with hostile(deep(200, {"Content-Type": "application/vnd.oci.image.manifest.v1+json"})) as registry:
        result = cli("image", "resolve", f"{registry.url.removeprefix('http://')}/team/train:v1")
    no_traceback(result)
    assert result.exit_code == 3, result.output


def test_a_remote_verification_has_one_time_limit_for_all_its_shards() -> None:
    """Each shard has its own deadline; a remote that drips every shard still ends the whole
    verification at --max-time, the shards after it named unchecked, not waited for."""
    from reprogate.datasets.remote import Remote, RemoteUnreachable

    with hostile(drip()) as server:
        remote = Remote(timeout=1.0, retries=0, max_time=1.5)
        remote.http.policy = dataclasses.replace(remote.http.policy, deadline=60.0)
        with pytest.raises(RemoteUnreachable, match="within"):
            remote.digest(f"{server.url}/shard-000", "sha256")  # cut from 60 s to what is left of 1.5 s
        for shard in range(1, 50):
            with pytest.raises(RemoteUnreachable, match="time limit of 1.5 s"):
                remote.size(f"{server.url}/shard-{shard:03d}")
    assert abandoned(server)
