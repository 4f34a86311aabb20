"""The one redactor against the shapes that leaked in 0.5.0 (issue 38.4), made by the tools that
make them (ssh-keygen, openssl) or copied from the format's owner (an AWS credentials file, the
runner's `.credentials_rsaparams`), and against the record content it must leave alone.

Each shape is tried as a log prints it, as a log tail cut inside it, and inside a JSON string
(a verdict holds log tails as JSON). tests/github/test_secret_shapes.py carries the same shapes
through every output of a real rebuild."""

from __future__ import annotations

import json

import pytest
from support.keys import AWS_CREDENTIALS, KINDS, make_key, rsa_parameters, secret_lines

from reprogate.core.redact import MARK, redact


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("keys")
    return {kind: make_key(kind, folder) for kind in KINDS} | {"rsaparams": rsa_parameters(folder)}


@pytest.mark.parametrize("kind", KINDS)
def test_a_whole_private_key_goes_with_its_body(keys: dict[str, str], kind: str) -> None:
    key = keys[kind]
    for text in (f"loading {kind}\n{key}done\n", json.dumps({"log_tail": f"x\n{key}y"}), key.replace("\n", "\r\n")):
        out = redact(text)
        assert not any(line in out for line in secret_lines(key)), (kind, out[:400])
        assert MARK in out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["start", "end"])
def test_a_log_tail_cut_inside_a_key_still_loses_the_body(keys: dict[str, str], kind: str, where: str) -> None:
    """A 20-line tail of a log that printed a key starts inside it (no BEGIN line) or ends inside it (no END)."""
    lines = f"step 1\n{keys[kind]}step 2\n".splitlines()
    cut = "\n".join(lines[3:] if where == "start" else lines[: len(lines) - 3])
    out = redact(cut)
    assert not any(line in out for line in secret_lines(keys[kind]) if line in cut), out
    assert ("step 2" in out) if where == "start" else ("step 1" in out)


def test_an_aws_credentials_file_keeps_its_names_and_loses_its_values() -> None:
    out = redact(AWS_CREDENTIALS)
    assert "wJalrXUtnFEMI" not in out and "AKIAIOSFODNN7EXAMPLE" not in out and "IQoJb3JpZ2lu" not in out
    assert "aws_secret_access_key = [redacted]" in out and "region = us-east-1" in out and "[default]" in out


@pytest.mark.parametrize(
    ("line", "gone"),
    [
        ("password: correct horse battery staple", "correct horse"),
        ("  db_password: hunter2hunter2", "hunter2"),
        ("HF_TOKEN=abcdefghijklmnop", "abcdefghijklmnop"),
        ("export WANDB_API_KEY=0123456789abcdef0123", "0123456789abcdef0123"),
        ('{"client_secret": "s3cr3t-value", "name": "x"}', "s3cr3t-value"),
        ("env: MY_SECRET=plainvalue other=1", "plainvalue"),
        ("cfg = {'api_key': 'k-1234567890abcdefgh'}", "k-1234567890abcdefgh"),
        ("session_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0zz", "9f8e7d6c5b4a39281706f5e4d3c2b1a0zz"),
    ],
)
def test_assignments_named_like_credentials_lose_their_value(line: str, gone: str) -> None:
    out = redact(line)
    assert gone not in out and MARK in out, out


def test_rsa_parameters_as_json_lose_every_number(keys: dict[str, str]) -> None:
    params = json.loads(keys["rsaparams"])
    for text in (keys["rsaparams"], str(params), json.dumps({"detail": keys["rsaparams"]})):
        out = redact(text)
        assert not [name for name, value in params.items() if len(value) > 8 and value in out], out[:300]


ORDINARY = [
    "sha256:0d8a4c1c5b3d3f1e6a2b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f",
    "checksum: sha256:0d8a4c1c5b3d3f1e6a2b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f",
    "digest: canonical-v1:sha256:1111111111111111111111111111111111111111111111111111111111111111",
    "ghcr.io/org/train@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "commit: 3f2c1e0d9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e",
    "torch==2.3.0 --hash=sha256:9d2f4a4d62a8d1b2a8f1e6a0c1b7e1fbd9e1c1a0e2e7d6c5b4a3f2e1d0c9b8a7",
    'hash = "sha256:9d2f4a4d62a8d1b2a8f1e6a0c1b7e1fbd9e1c1a0e2e7d6c5b4a3f2e1d0c9b8a7"',
    "cache_key: sha256:9d2f4a4d62a8d1b2a8f1e6a0c1b7e1fbd9e1c1a0e2e7d6c5b4a3f2e1d0c9b8a7",
    "sort_key: step",
    "key_file: ./keys/public.pem",
    "TOKENIZERS_PARALLELISM=false",
    "tokenizer: tokenizer.json",
    "task-0123456789abcdefghijklmnop finished",
    "| model-state | ❌ fail | 1.2 s | tensor `w` differs |",
    "shards[3].checksum: md5:0123456789abcdef0123456789abcdef",
    "nonce: test-dispatch-nonce-0123456789",
    "passed: 3 of 3; key: lr differs at step 4",
    "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_record_content_that_is_no_credential_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "token=[redacted]",
        "password: [redacted]",
        "env: A_SECRET=[redacted] and more",
        '"client_secret": "[redacted]"',
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz1234 then api_key=sk-abcdefghijklmnopqrstuvwxyz",
        "https://user:pass@example.com/x?token=abc123456789&sig=zz",
    ],
)
def test_redacting_twice_gives_the_same_text(text: str) -> None:
    """A verdict's text is redacted when written and may pass the redactor again when it leaves
    (a report, a check run): the second pass must change nothing (it added a `]` to `token=[redacted]`)."""
    once = redact(text)
    assert redact(once) == once and "]]" not in once
