"""Private keys and credential files made by the tools that make them (ssh-keygen, openssl), for
the redactor's tests (tests/core/test_redact.py, tests/github/test_secret_shapes.py)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

from support import require_tool

KINDS = ("openssh", "rsa", "ec", "pkcs8")


def make_key(kind: str, folder: Path) -> str:
    """A fresh private key of `kind` as its tool writes it (PEM text)."""
    path = folder / f"{kind}.key"
    if kind == "openssh":
        subprocess.run([require_tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", str(path)], check=True)
    elif kind == "rsa":
        subprocess.run([require_tool("ssh-keygen"), "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-C", "t", "-f", str(path)], check=True)
    elif kind == "ec":
        subprocess.run([require_tool("openssl"), "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(path)], check=True)
    else:
        subprocess.run([require_tool("openssl"), "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", str(path)], check=True)
    return path.read_text()


def rsa_parameters(folder: Path) -> str:
    """The runner's `.credentials_rsaparams` (its RSAParameters as JSON, base64 big-endian
    numbers, keys as the runner writes them) for a fresh RSA key."""
    path = folder / "params.key"
    subprocess.run([require_tool("openssl"), "genrsa", "-out", str(path), "1024"], check=True, capture_output=True)
    text = subprocess.run([require_tool("openssl"), "rsa", "-in", str(path), "-text", "-noout"], check=True, capture_output=True, text=True).stdout
    numbers: dict[str, int] = {}
    for name, body in re.findall(r"^(\w+):\s*\n((?:\s+[0-9a-f:]+\n)+)", text, re.MULTILINE):
        numbers[name] = int(body.replace(":", "").replace(" ", "").replace("\n", ""), 16)
    numbers["publicExponent"] = int(re.search(r"publicExponent: (\d+)", text).group(1))  # type: ignore[union-attr]

    def b64(value: int) -> str:
        return base64.b64encode(value.to_bytes((value.bit_length() + 7) // 8, "big")).decode()

    names = {"d": "privateExponent", "dp": "exponent1", "dq": "exponent2", "exponent": "publicExponent", "inverseQ": "coefficient"}
    names.update(modulus="modulus", p="prime1", q="prime2")
    return json.dumps({key: b64(numbers[source]) for key, source in sorted(names.items())})


def secret_lines(text: str) -> list[str]:
    """The parts of a key that must not leave: every body line of at least 16 characters."""
    return [line for line in text.splitlines() if len(line) >= 16 and not line.startswith("-----")]


AWS_CREDENTIALS = """[default]
aws_access_key_id = AKIAIOSFODNN7EXAMPLE
aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
aws_session_token = IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ
region = us-east-1
"""
AWS_SECRETS = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ")
