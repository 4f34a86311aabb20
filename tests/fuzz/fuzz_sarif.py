"""Fuzz harness: the SARIF writer (`validate --format sarif`, `detect --format sarif`), given the
findings a command could hand it: file names of any bytes (not UTF-8, `..`, absolute, inside
and outside the checkout, `%`, `#`, newlines), messages, hints, fields, codes, lines and
columns, and the rule texts of both commands.

Expected: nothing raises. The log is one JSON document, valid against the official SARIF 2.1.0
schema (tests/fixtures/sarif), every string in it valid Unicode (I-JSON, RFC 7493: a lone
surrogate from a file name is not text code scanning can store), every result's rule index naming
its rule, and no %SRCROOT%-relative URI climbing out of the checkout; anything else is a finding.
Half the inputs (first byte odd) are the findings of `validate` on the example records, mutated
structurally (`harness.structured`); the rest are built from the bytes (`FuzzedDataProvider`).
Seeds: those findings, and file names from examples/ and tests/fixtures/.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import atheris
import jsonschema
from harness import EXAMPLES, FIXTURES, REPO, files, fuzz, instrumented, structured

with instrumented():
    from reprogate.core.diagnostics import Diagnostic, ExitCode, Location, Severity
    from reprogate.output.findings import all_findings
    from reprogate.output.sarif import RuleText, render_sarif, sarif_log
    from reprogate.validate.rule_texts import RULE_TEXTS
    from reprogate.validate.runner import Options, validate

SCHEMA = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
ROOT = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-sarif-")).resolve()
BASES = [ROOT, ROOT / "sub" / "dir", ROOT.parent]  # the checkout's top, a folder in it (working-directory:), one above it
SEVERITIES = list(Severity)
NAMES = [p.relative_to(REPO).as_posix() for p in files("examples/**/*", "tests/fixtures/sarif/*")][:64]
DETECT_TEXTS = {"framework-version": RuleText("A change in the watched framework layer (version)", "rebuilt by the gate"), "records-not-listed": RuleText("x")}


def _found() -> list[dict[str, Any]]:
    """The findings of `validate` on the example records (and a missing file), as to_json writes them."""
    targets = [str(p) for p in files("**/records/*.yaml", under=EXAMPLES)] + [str(EXAMPLES / "no such record.yaml")]
    return [d.to_json() for d in all_findings(validate(targets, Options(root=EXAMPLES)))]


FOUND = _found()
DOCUMENTS: list[Any] = [FOUND[i : i + 4] for i in range(0, len(FOUND), 4)] or [[]]


def seeds() -> list[tuple[str, bytes]]:
    raw = [(f"name-{i}", b"\x00" + name.encode() + b"\x00" * 8) for i, name in enumerate(NAMES[:16])]
    raw += [("not-utf8", b"\x00\x03\xff\xfe/../x%#\n.yaml"), ("absolute", b"\x02" + str(ROOT.parent).encode() + b"/outside.yaml")]
    return raw + [(f"found-{i}", bytes([1, i]) + bytes(range(16))) for i in range(len(DOCUMENTS))]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def from_document(items: Any) -> list[Diagnostic]:
    """Diagnostics from mutated to_json findings, each field coerced to the type it has."""
    out = []
    for item in items if isinstance(items, list) else [items]:
        item = item if isinstance(item, dict) else {}
        severity = next((s for s in SEVERITIES if s.value == item.get("severity")), Severity.ERROR)
        where = Location(_number(item.get("line")), _number(item.get("col")))
        fields = {
            key: _text(item.get(name)) for key, name in (("path", "file"), ("message", "message"), ("code", "code"), ("field", "field"), ("hint", "hint"))
        }
        out.append(Diagnostic(severity=severity, location=where, **fields))
    return out


def _name(fdp: atheris.FuzzedDataProvider) -> str:
    """A file name as the command holds it: bytes through os.fsdecode (a name that is not UTF-8
    keeps its bytes as surrogate escapes), a name from the repository, or either absolute."""
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        name = os.fsdecode(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 60)).replace(b"\0", b""))
    elif kind == 1:
        name = NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]
    elif kind == 2:
        name = BASES[fdp.ConsumeIntInRange(0, len(BASES) - 1)].as_posix() + "/" + os.fsdecode(fdp.ConsumeBytes(20).replace(b"\0", b""))
    else:
        name = fdp.ConsumeUnicodeNoSurrogates(30)
    return name


def from_bytes(data: bytes) -> list[Diagnostic]:
    fdp = atheris.FuzzedDataProvider(data)
    out = []
    for _ in range(fdp.ConsumeIntInRange(0, 6)):
        name = _name(fdp)
        code = fdp.PickValueInList([*RULE_TEXTS, *DETECT_TEXTS, "", fdp.ConsumeUnicodeNoSurrogates(12)])
        where = Location(fdp.ConsumeIntInRange(-2, 2**40), fdp.ConsumeIntInRange(-2, 300))
        message, hint, field = (
            os.fsdecode(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40))) if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(40) for _ in range(3)
        )
        out.append(Diagnostic(name, message, code, fdp.PickValueInList(SEVERITIES), where, field, hint))
    return out


def _strings(node: Any) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def check(text: str) -> None:
    log = json.loads(text)
    errors = sorted(VALIDATOR.iter_errors(log), key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError(f"the SARIF log is not valid against the schema: {errors[0].message[:300]} at {list(errors[0].absolute_path)}")
    for value in _strings(log):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise AssertionError(f"the SARIF log holds a string that is not valid Unicode: {value[:120]!r}") from None
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        if rules[result["ruleIndex"]]["id"] != result["ruleId"]:
            raise AssertionError("a result's ruleIndex names another rule than its ruleId")
        for location in result.get("locations", []):
            where = location["physicalLocation"]["artifactLocation"]
            uri = where["uri"]
            if where.get("uriBaseId") == "%SRCROOT%" and (uri.startswith(("../", "/")) or "/../" in f"/{uri}" or uri == ".."):
                raise AssertionError(f"a %SRCROOT%-relative URI climbs out of the checkout: {uri!r}")


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    edited = structured(data, DOCUMENTS)
    findings = from_document(edited) if edited is not None else from_bytes(data[1:])
    base = BASES[data[0] >> 1 & 1 if edited is None else data[1] >> 7]
    command = "detect" if data[-1] & 1 else "validate"
    rules = DETECT_TEXTS if command == "detect" else RULE_TEXTS
    if data[-1] % 16 == 5:  # as the command renders it, the root found by git from the base (a subprocess: one input in 16)
        check(render_sarif(command, ExitCode.FAILED, findings, rules, base).stdout[0])
    else:  # render_sarif's own JSON, the checkout's root given
        check(json.dumps(sarif_log(command, findings, rules, base, ROOT), indent=2))


if __name__ == "__main__":
    os.chdir(ROOT)  # render_sarif's root is the checkout of the base: here none, so the base itself
    fuzz(one, seeds(), max_len=4096)
