"""The one redactor: no credential is ever written to a record, a log, a report or a comment.

Every writer uses it: `capture` drops or cleans matching values, `validate` refuses records that
hold one, and everything that leaves the process (output/emit.py, verdicts, reports, log tails)
passes `redact` first. It recognises

- well-known token shapes (GitHub, AWS, Hugging Face, Slack, JWT, private keys, `sk-` keys);
- values registered at run time (`register`): the runner's own secrets, taken from environment
  variables named like credentials, so a training log that prints one is still cleaned;
- URL userinfo (`https://user:pass@host`, and `user:pass@host` without a scheme);
- query parameters that carry credentials (`?token=`, `access_token`, `sig`, `X-Amz-Signature` ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MARK = "[redacted]"

# Variable names that hold credentials by convention (matched as words inside the name).
SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|KEY|CREDENTIALS?|AUTH|APIKEY|PRIVATE|COOKIE|SESSION)(?:_|$)", re.IGNORECASE)

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

# A URL's start; its userinfo is judged by _userinfo_end, not by one pattern.
# Anchored at the start of a run of scheme characters, so a long word is scanned once, not once per letter.
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://")
# user:password@host without a scheme (MASTER_ADDR=admin:pw@host); not host:port/path@digest.
_BARE_USERINFO = re.compile(r"(?<![\w.@/:%-])[^\s/@:?#=\"'<>]+:(?!//)[^\s/@?#\"'<>]*@(?!sha256:|sha512:)(?=[\w\[])")
_QUERY_KEYS = (
    "token|access_token|refresh_token|id_token|api_key|apikey|key|password|passwd|secret|sig|signature"
    "|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|auth|code"
)
_QUERY = re.compile(rf"(?P<lead>[?&;](?:{_QUERY_KEYS})=)(?P<value>[^&#\s\"'<>]+)", re.IGNORECASE)

_registered: set[str] = set()
MIN_REGISTERED = 6  # shorter values would redact ordinary words


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def looks_secret(value: str) -> bool:
    """A token shape, a registered secret, or a URL carrying credentials."""
    return bool(SECRET_VALUE.search(value)) or has_url_credentials(value) or any(secret in value for secret in _registered)


_TERMINATOR = re.compile(r"[\s\"'<>]")


def _userinfo_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each credential in a URL's authority: `user:password` (the password may
    hold `/`, as git remotes written by hand do) or a lone token before `@` on http(s).

    The next `@` and the next terminator are found once and reused while they lie ahead, so text
    made of thousands of `http://` costs linear time, not quadratic."""
    spans = []
    next_at = next_end = -1
    for match in _SCHEME.finditer(text):
        start = match.end()
        if next_end < start:
            found = _TERMINATOR.search(text, start)
            next_end = found.start() if found else len(text)
        if next_at < start:
            next_at = text.find("@", start)
            if next_at == -1:
                next_at = len(text) + 1  # no `@` anywhere ahead: nothing more to find
        if next_at >= next_end or next_at == start:
            continue
        before = text[start:next_at]
        user, colon, _ = before.partition(":")
        if colon and "/" not in user and "?" not in user:
            spans.append((start, next_at))
        elif not colon and not any(c in before for c in "/?#") and match.group().lower().startswith(("http", "git+http")):
            spans.append((start, next_at))  # https://TOKEN@host
    return spans


def has_url_credentials(value: str) -> bool:
    """Userinfo ends at an `@` and a credential parameter is `name=value`: text without either
    (most of a record) skips the scans, which cost ~0.2 ms on a record's strings."""
    if "@" in value and (_userinfo_spans(value) or _BARE_USERINFO.search(value)):
        return True
    return "=" in value and bool(_QUERY.search(value))


def register(values: Iterable[str]) -> None:
    """Treat these exact values as secrets from now on (too-short values are ignored)."""
    _registered.update(v for v in values if isinstance(v, str) and len(v) >= MIN_REGISTERED)


def register_environment(env: Mapping[str, str]) -> None:
    """Register the values of variables named like credentials (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...)."""
    register(value for name, value in env.items() if is_secret_name(name))


def redact(text: str) -> str:
    """`text` with every credential-shaped substring replaced by a marker."""
    if not text:
        return text
    for secret in sorted(_registered, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MARK)
    text = SECRET_VALUE.sub(MARK, text)
    if "@" in text:  # userinfo ends at an `@`; most lines have none and skip both scans
        for start, end in reversed(_userinfo_spans(text)):
            text = text[:start] + MARK + text[end:]
        text = _BARE_USERINFO.sub(f"{MARK}@", text)
    if "=" in text:  # a credential parameter is `name=value`
        text = _QUERY.sub(lambda m: f"{m.group('lead')}{MARK}", text)
    return text


_QUERY_STRING = re.compile(r"\?(?P<query>[^#\s\"'<>]*)")
_CREDENTIAL_PARAM = re.compile(rf"(?:{_QUERY_KEYS})=", re.IGNORECASE)


def _without_credential_params(match: re.Match[str]) -> str:
    """A query string without its credential parameters; untouched when it has none."""
    params = [p for p in re.split(r"[&;]", match.group("query")) if p]
    kept = [p for p in params if not _CREDENTIAL_PARAM.match(p)]
    if len(kept) == len(params):
        return match.group(0)
    return "?" + "&".join(kept) if kept else ""


def strip_credentials(text: str) -> str:
    """`text` with credentials taken out rather than marked, for values that are written into
    records: URL userinfo goes with its `@` (`https://user:pa/ss@host` -> `https://host`,
    `admin:pw@host` -> `host`), credential query parameters are dropped (`?token=x&a=1` ->
    `?a=1`), and token shapes or registered secrets become the marker. A record keeps the
    address it needs and nothing `validate` would refuse."""
    if not text:
        return text
    for start, end in reversed(_userinfo_spans(text)):
        text = text[:start] + text[end + 1 :]
    text = _BARE_USERINFO.sub("", text)
    text = _QUERY_STRING.sub(_without_credential_params, text)
    return redact(text)
