"""The one redactor: no credential is ever written to a record, a log, a report or a comment.

Every writer uses it: `capture` drops or cleans matching values, `validate` refuses records that
hold one, and everything that leaves the process (output/emit.py, verdicts, reports, log tails)
passes `redact` first. It recognises

- well-known token shapes (GitHub, AWS, Hugging Face, Slack, JWT, private keys, `sk-` keys);
- values registered at run time (`register`): the runner's own secrets, taken from environment
  variables named like credentials, so a training log that prints one is still cleaned;
- URL userinfo (`https://user:pass@host`, and `user:pass@host` without a scheme);
- query parameters that carry credentials (`?token=`, `access_token`, `sig`, `X-Amz-Signature` ...);
- whole private-key blocks (PEM: OpenSSH, RSA, EC, DSA, PKCS#8, encrypted, PGP), body included,
  also when a log tail begins inside one (its body lines up to the END line) or ends inside one,
  and when the block is written with `\\n` escapes inside a JSON string;
- assignments whose name says credential: `aws_secret_access_key = …` (an AWS credentials
  file), `password: …`, `HF_TOKEN=…`, `"client_secret": "…"` (the value goes, the name stays);
- RSA key parameters written as JSON (`"d"`, `"p"`, `"q"`, `"dp"`, `"dq"`, `"inverseQ"`,
  `"modulus"`, `"exponent"`: the runner's `.credentials_rsaparams`; `"qi"` of a JWK).

What it leaves alone is as much a part of it as what it takes: digests and checksums
(`sha256:…`, git shas, `canonical-v1:…`), ordinary words after a name like `sort_key:` or
`key_file:` (a weak name — KEY, PASS, AUTH, SESSION, PRIVATE — takes only a value that looks like
a token), and names such as `TOKENIZERS_PARALLELISM`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

MARK = "[redacted]"

# Variable names that hold credentials by convention (matched as words inside the name).
SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|KEY|CREDENTIALS?|AUTH|APIKEY|PRIVATE|COOKIE|SESSION)(?:_|$)", re.IGNORECASE)

# Value shapes of well-known credentials (`sk-` only at a word's start: `task-…` holds no key).
SECRET_VALUE = re.compile(
    r"ghp_[A-Za-z0-9]{20,}"
    r"|gh[osur]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"|s(?<![A-Za-z0-9_-]s)k-[A-Za-z0-9_-]{20,}"
)

# A private-key block, BEGIN to END: its body is base64 with optional headers (Proc-Type,
# DEK-Info) and line ends, real or written as `\n` inside a JSON string, bounded so that a BEGIN
# without its END costs linear time. A BEGIN without an END (a text that ends inside the block)
# takes everything after it that can be a body; a text that starts inside one (a log tail) loses
# the lines of base64 before the END line.
_PEM_LABEL = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
_PEM_BODY = r"(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nr])"
_PEM_BLOCK = re.compile(rf"-----BEGIN {_PEM_LABEL}-----{_PEM_BODY}{{0,65536}}?-----END {_PEM_LABEL}-----")
_PEM_OPEN = re.compile(rf"-----BEGIN {_PEM_LABEL}-----{_PEM_BODY}{{0,65536}}")
_PEM_TAIL = re.compile(rf"(?:^|(?<=\\n))(?:[A-Za-z0-9+/=]+[ \t\r]*(?:\n|\\n))*[A-Za-z0-9+/=]*-----END {_PEM_LABEL}-----", re.MULTILINE)

# `name = value`, `name: value`, `NAME=value`, `"name": "value"` whose name says credential
# (is_secret_name). A strong name takes any value; a weak one (a bare KEY, PASS, AUTH, SESSION,
# PRIVATE) only a value that looks like a token, so `sort_key: step`, `key_file: ./a` and
# `cache_key: sha256:…` stay as they are. At the start of a line the value is the rest of it
# (`password = correct horse battery staple`); elsewhere it ends at a blank or a quote.
_STRONG_NAME = re.compile(
    r"(?:^|[_.-])(?:SECRETS?|PASSWORD|PASSWD|PASSPHRASE|TOKEN|CREDENTIALS?|APIKEY|COOKIE)(?:[_.-]|$)"
    r"|(?:^|[_.-])(?:API|ACCESS|SECRET|PRIVATE|SIGNING|ENCRYPTION|CLIENT)[_.-]?KEY(?:[_.-]|$)",
    re.IGNORECASE,
)
_NAME = r"(?P<q>(?:\\?[\"'])?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})(?P=q)[ \t]*(?:=|:)[ \t]*"
_LINE_ASSIGNMENT = re.compile(rf"(?P<lead>^[ \t]*(?:export[ \t]+|-[ \t]+)?{_NAME})(?P<value>[^\s\"'][^\n]{{0,4095}}?)(?=[ \t\r]*$)", re.MULTILINE)
_ASSIGNMENT = re.compile(rf"(?:^|(?<=[\s{{,(\[;])){_NAME}", re.MULTILINE)  # the name only: `env: A_SECRET=x` holds two
_SECRET_WORDS = ("token", "secret", "credential", "cookie", "key", "pass", "auth", "private", "session")  # what is_secret_name's words hold
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# a value: in quotes (escaped ones inside a JSON string too), or up to a blank, a quote or an `=` (base64's padding kept)
# a value: in quotes (escaped ones inside a JSON string too), or up to a blank, a quote or an `=` (base64's padding kept)
_VALUE = re.compile(
    r"\\\"(?:[^\"\\\n]|\\[^\"\n]){1,4096}\\\"|\"(?:[^\"\\\n]|\\.){1,4096}\"|'[^'\n]{1,4096}'|[^\s\"',;}\])=]{1,4096}={0,2}"
)  # unquoted: up to a blank, a quote or an `=` (base64's padding kept)
_NOT_A_VALUE = frozenset({"true", "false", "null", "none", "yes", "no", "on", "off", "redacted", "required", "optional", "***", "-", "{", "["})
_TOKEN_LIKE = re.compile(r"^(?=[^\s]*[0-9])(?=[^\s]*[A-Za-z])[A-Za-z0-9+/=_.~-]{16,}$")
_DIGEST_LIKE = re.compile(r"^(?:[A-Za-z0-9-]+:)*(?:sha|md5|blake|crc|xxh)[A-Za-z0-9-]*[:=-][A-Za-z0-9+/=]+$|^[0-9a-f]{32,128}$", re.IGNORECASE)

# RSA key parameters as JSON (the runner's `.credentials_rsaparams`; a JWK's private members).
_RSA_PARAMS = re.compile(
    r"(?P<lead>(?P<q>\\?[\"'])(?:d|p|q|dp|dq|qi|inverseQ|modulus|exponent|privateExponent|prime[12]|coefficient)(?P=q)\s*:\s*(?P=q))"
    r"[A-Za-z0-9+/=_-]{4,}(?=(?P=q))"
)

_RSA_TELLTALES = ("modulus", "inverseQ", "qi", "privateExponent", "coefficient")  # one of them is in every dump of a private key's numbers

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


def _assigned(match: re.Match[str]) -> str:
    """A line's assignment with its value replaced when its name says credential (_LINE_ASSIGNMENT)."""
    return match.group("lead") + _value_shown(match.group("name"), match.group("value"))


def _assignments(text: str) -> str:
    """Every `name=value` / `name: value` / `"name": "value"` inside a line, value replaced when
    its name says credential. The words a credential's name holds are found first (one scan, so
    a long log of `loss=…` costs little), then the name around each, its operator and its value;
    a name inside another assignment's value (`env: A_SECRET=x`) is judged too."""
    out, done, name_end = [], 0, -1
    for at in _secret_words(text):
        if at < name_end or at < done:
            continue  # inside a name already judged (`secret_token`), or a value already replaced
        start, name_end = at, at
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        while name_end < len(text) and text[name_end] in _NAME_CHARS:
            name_end += 1
        after = name_end + (text[name_end : name_end + 1] in ('"', "'", "\\"))
        while after < len(text) and text[after] in ' \t"':
            after += 1
        if after >= len(text) or text[after] not in ":=" or name_end - start > 81 or _name_kind(text[start:name_end]) is None:
            continue  # no assignment follows, or the name is not a credential's
        quoted = 2 if text[max(0, start - 2) : start] in ('\\"', "\\'") else 1 if text[start - 1 : start] in ('"', "'") else 0
        lead = _ASSIGNMENT.match(text, start - quoted)
        if lead is None:
            continue
        value = _VALUE.match(text, lead.end())
        at = lead.end() + (text[lead.end() : lead.end() + 1] in ('"', "'"))
        if value is None or text.startswith(MARK, at):
            continue  # no value, or one already redacted (the unquoted value stops at its `]`): redact twice, the same text
        shown = _value_shown(lead.group("name"), value.group(0))
        if shown != value.group(0):
            out += [text[done : lead.end()], shown]
            done = value.end()
    return "".join([*out, text[done:]]) if out else text


def _secret_words(text: str) -> list[int]:
    """Where a word of a credential's name occurs in `text`, in order (str.find over the lower-cased
    text: one C scan per word, where a case-insensitive regex costs a hundred times more)."""
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lower case is longer: positions would not match
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found: list[int] = []
    for word in _SECRET_WORDS:
        at = lower.find(word)
        while at != -1:
            found.append(at)
            at = lower.find(word, at + 1)
    return sorted(found)


@functools.lru_cache(maxsize=4096)
def _name_kind(name: str) -> str | None:
    """ "strong" for a name that always holds a credential, "weak" for one that may, else None
    (a log repeats its names: each is judged once)."""
    if not is_secret_name(name):
        return None
    return "strong" if _STRONG_NAME.search(name) else "weak"


def _value_shown(name: str, value: str) -> str:
    """`value` as it may be shown after `name`: the marker (in the value's quotes) when the name
    says credential and the value can be one; else the value itself."""
    kind = _name_kind(name)
    strong = kind == "strong"
    if kind is None or (not strong and len(value) < 16):
        return value  # a weak name takes only a token's length
    if len(value) >= 4 and value.startswith('\\"') and value.endswith('\\"'):
        quote = '\\"'  # inside a JSON string
    else:
        quote = value[0] if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0] else ""
    bare = value[len(quote) : len(value) - len(quote)]
    if not bare.strip() or bare.lower() in _NOT_A_VALUE or MARK in bare or bare.startswith("$"):
        return value  # not a credential's name, or a value that is no credential (a reference to one, a marker)
    if not strong and (not _TOKEN_LIKE.match(bare) or _DIGEST_LIKE.match(bare)):
        return value
    return f"{quote}{MARK}{quote}"


def _private_keys(text: str) -> str:
    """Every private-key block and block part (see _PEM_BLOCK, _PEM_OPEN, _PEM_TAIL) as the marker."""
    if "PRIVATE KEY" not in text:
        return text
    text = _PEM_BLOCK.sub(MARK, text)
    text = _PEM_OPEN.sub(MARK, text)
    return _PEM_TAIL.sub(MARK, text)


def redact(text: str) -> str:
    """`text` with every credential-shaped substring replaced by a marker."""
    if not text:
        return text
    for secret in sorted(_registered, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MARK)
    text = _private_keys(text)
    text = SECRET_VALUE.sub(MARK, text)
    if "=" in text or ":" in text:  # an assignment or a JSON member
        if any(name in text for name in _RSA_TELLTALES):
            text = _RSA_PARAMS.sub(lambda m: f"{m.group('lead')}{MARK}", text)
        text = _LINE_ASSIGNMENT.sub(_assigned, text)
        text = _assignments(text)
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
