"""The commit statuses the gate and the status job read back, parsed once into typed values.

A status is read for three rules (github/trust.py): a terminal state is never replaced by
`pending` for the same (base, head) pair; a baseline's proof is a `success` linking to a trusted
rebuild run; one commit has one answer across bases. Each rule holds only if the status is the
gate's own: anyone with write access — and any CI bot or app a pull request can steer (a
workflow it adds, a service that posts what the fork's code prints) — can post a status of the
same context. So every status keeps who created it (`creator`, the login GitHub names), and only
those of the configured creator (`status.creator` in the base's `.reprogate.yaml`, or the
action's `status-creator` input; default `github-actions[bot]`, the GITHUB_TOKEN the gate posts
with) are read at all (`ours`). A check run read as a status (github/checks.py) names its app's
bot login (`<slug>[bot]`) as its creator, so the same setting covers both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from reprogate.core.errors import InfrastructureError

State = Literal["error", "failure", "pending", "success"]
STATES: frozenset[str] = frozenset({"error", "failure", "pending", "success"})
DEFAULT_CREATOR = "github-actions[bot]"


class MalformedStatus(InfrastructureError):
    """GitHub answered with a status that lacks what every status has (exit 3)."""


@dataclass(frozen=True)
class Status:
    """One status on a commit, as GitHub stores it (or a check run of reprogate's read as one)."""

    id: int
    state: State
    context: str
    description: str
    target_url: str | None
    created_at: str  # ISO 8601 UTC from GitHub's clock: comparable as a string
    creator: str | None  # the login that created it (a check run: its app's `<slug>[bot]`)

    @property
    def order(self) -> tuple[str, int]:
        """Newest last: GitHub's time, then its id (statuses posted in the same second)."""
        return (self.created_at, self.id)


def from_api(item: dict[str, Any]) -> Status:
    """A status of GET /repos/{owner}/{repo}/commits/{ref}/statuses."""
    state, context = item.get("state"), item.get("context")
    if not isinstance(state, str) or state not in STATES or not isinstance(context, str):  # a state of {} or [] is not hashable: no set lookup
        raise MalformedStatus(f"GitHub listed a status without a state and context ({str(state)[:20]!r}, {str(context)[:60]!r})")
    creator = item.get("creator")
    login = creator.get("login") if isinstance(creator, dict) else None
    description, url, created = item.get("description"), item.get("target_url"), item.get("created_at")
    identifier = item.get("id")
    return Status(
        id=identifier if isinstance(identifier, int) and not isinstance(identifier, bool) else 0,
        state=cast(State, state),
        context=context,
        description=description if isinstance(description, str) else "",
        target_url=url if isinstance(url, str) else None,
        created_at=created if isinstance(created, str) else "",
        creator=login if isinstance(login, str) else None,
    )


def ours(statuses: Iterable[Status], creator: str) -> list[Status]:
    """The statuses `creator` posted (GitHub compares logins case-insensitively)."""
    want = creator.lower()
    return [s for s in statuses if s.creator is not None and s.creator.lower() == want]


def app_slug(creator: str) -> str:
    """The app whose check runs count for a creator login: `github-actions[bot]` -> `github-actions`."""
    return creator.removesuffix("[bot]")


__all__ = ["DEFAULT_CREATOR", "STATES", "MalformedStatus", "State", "Status", "app_slug", "from_api", "ours"]
