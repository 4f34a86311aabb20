"""Recognise credentials, so that none is ever written to a record, a log or a comment.

One list, used by every writer: `capture` drops matching environment variables, `validate`
refuses records that hold one, and messages that quote a value pass it through `redact` first.
"""

from __future__ import annotations

import re

# Variable names that hold credentials by convention (matched as words inside the name).
SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|KEY|CREDENTIALS?|AUTH|APIKEY|PRIVATE)(?:_|$)", re.IGNORECASE)

# Value shapes of well-known credentials.
SECRET_VALUE = re.compile(
    r"ghp_[A-Za-z0-9]{20,}"
    r"|gh[osur]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|sk-[A-Za-z0-9_-]{20,}"
)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def looks_secret(value: str) -> bool:
    return bool(SECRET_VALUE.search(value))


def redact(text: str) -> str:
    """`text` with every credential-shaped substring replaced by a marker."""
    return SECRET_VALUE.sub("[redacted]", text)
