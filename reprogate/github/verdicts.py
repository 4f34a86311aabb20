"""The terminal reproduction status of a rebuild: one state for every record it rebuilt.

The gate dispatches one rebuild for all records a pull request reaches, and the rebuild posts one
status for all of them, so a record that failed can never be hidden by another record's later
success on the same context. The description names the digest of each record that reproduced;
the gate checks those digests (and the run the status links to) before it promotes a baseline.
Anything that is not a clean verdict for every expected record is `error`, never left pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reprogate.github.client import DESCRIPTION_LIMIT
from reprogate.github.trust import DIGEST_LENGTH, short_digest, with_base
from reprogate.rebuild.verdict import Verdict


@dataclass(frozen=True)
class Terminal:
    state: str
    description: str


def _digest_list(prefix: str, digests: list[str]) -> str:
    """`prefix` plus as many record digests as fit GitHub's 140 characters."""
    shown: list[str] = []
    for digest in digests:
        candidate = f"{prefix}; record{'s' if len(digests) > 1 else ''} {','.join([*shown, digest])}"
        if len(candidate) > DESCRIPTION_LIMIT:
            break
        shown.append(digest)
    if not shown:
        return prefix[:DESCRIPTION_LIMIT]
    return f"{prefix}; record{'s' if len(digests) > 1 else ''} {','.join(shown)}"


def contradicts_itself(verdict: Verdict) -> str | None:
    """Why a verdict that says `pass` cannot be one, or None. `rebuild` never writes such a
    verdict; one that does was not made by a finished rebuild (a hand-made or half-written file),
    and a pass is believed only when the rest of the verdict says so too."""
    if verdict.infrastructure:
        return "it also says the infrastructure stopped it"
    if verdict.diagnosis:
        return f"it names a failing stage ({verdict.diagnosis[:40]})"
    if any(s.status == "fail" for s in verdict.stages):
        return "one of its stages failed"
    if not any(s.status == "pass" for s in verdict.stages):
        return "no stage of it passed"
    failed_tests = [t for t in verdict.tests if not t.passed]
    if failed_tests:
        return f"its test {failed_tests[0].kind[:40]!r} did not pass"
    return None


def terminal(
    verdicts: Sequence[Verdict],
    unreadable: list[str],
    missing: list[str],
    refused: list[str] | None = None,
    job_problem: str | None = None,
    base: str | None = None,
) -> Terminal:
    """success only when every expected record has a passing verdict bound to this dispatch and
    the rebuild job itself succeeded; failure when one did not reproduce; error when one could not
    run, could not be read, was refused (github/binding.py) or never arrived. The description
    names the base the pair was judged for, so a status is never taken for another base's."""
    if refused:
        return Terminal("error", with_base(f"{len(refused)} rebuild verdict(s) not made by this dispatch's rebuild: refused", base))
    if unreadable or missing:
        what = f"{len(unreadable)} unreadable" if unreadable else ""
        what += (", " if what else "") + (f"{len(missing)} missing" if missing else "")
        return Terminal("error", with_base(f"rebuild verdict(s) {what} (cancelled, timed out or crashed): inconclusive", base))
    if not verdicts:
        return Terminal("error", with_base("the rebuild produced no verdict: inconclusive", base))
    contradicted = [v for v in verdicts if v.passed and contradicts_itself(v)]
    if contradicted:
        return Terminal("error", with_base(f"a verdict says pass but {contradicts_itself(contradicted[0])}: inconclusive", base))
    failed = [v for v in verdicts if not v.passed and not v.infrastructure]
    broken = [v for v in verdicts if not v.passed and v.infrastructure]
    if failed:
        first = failed[0]
        name = first.record.name or first.record.path or "record"
        return Terminal("failure", with_base(f"not reproduced: {name[:60]} first differs at {first.diagnosis}", base))
    if broken:
        return Terminal("error", with_base(f"rebuild could not run ({broken[0].diagnosis}): inconclusive", base))
    if job_problem:
        return Terminal("error", with_base(f"{job_problem}: inconclusive", base))
    on = f"; base {base[:DIGEST_LENGTH]}" if base else ""
    digests = [short_digest(v.record.digest) for v in verdicts]
    if len(verdicts) == 1:
        level = verdicts[0].record.level
        return Terminal("success", _digest_list(f"reproduced: {level} contract held{on}", digests))
    return Terminal("success", _digest_list(f"reproduced: {len(verdicts)} records{on}", digests))


__all__ = ["Terminal", "contradicts_itself", "terminal"]
