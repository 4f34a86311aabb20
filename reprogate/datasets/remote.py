"""Reading shards over HTTP(S): sizes with HEAD, digests by streaming GET.

Retries, timeouts and redirect limits are the shared HTTP policy (core/http.py). A 404 or 410
means the shard is missing; anything still failing after the retries means the remote is
unreachable (exit 3), and so does a GET that delivers another size than HEAD said (a wrong
Content-Length, a body cut short and closed): the transfer failed, not the data. A streamed digest gets a deadline that grows with the shard's size (at
least 1 MiB/s), so a dribbling server cannot hold a verify forever and a large shard is not cut
off for being large.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reprogate.core.errors import CheckFailed, InfrastructureError
from reprogate.core.http import HttpClient, HttpPolicy, MiB, Reply, origin
from reprogate.datasets.hashing import new_hasher

SLOWEST_RATE = MiB  # bytes per second a shard download may not fall below, on average


class RemoteUnreachable(InfrastructureError):
    """The remote could not be reached, kept failing or was too slow, after the allowed retries."""


class Missing(CheckFailed):
    """The remote answered that the shard does not exist."""


@dataclass
class Remote:
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    max_time: float = 6 * 3600.0  # for every request of this verification together: a million slow shards still end
    _http: HttpClient | None = field(default=None, repr=False)
    _ends: float | None = field(default=None, repr=False)
    _sizes: dict[str, int] = field(default_factory=dict, repr=False)  # what HEAD said of each URL

    def _left(self, deadline: float) -> float:
        """`deadline` for one request, cut to what the whole verification has left (none: RemoteUnreachable)."""

        if self._ends is None:
            self._ends = time.monotonic() + self.max_time
        left = self._ends - time.monotonic()
        if left <= 0:
            raise RemoteUnreachable(f"the verification ran past its time limit of {self.max_time:g} s (--max-time); this shard was not checked")
        return min(deadline, left)

    @property
    def http(self) -> HttpClient:
        if self._http is None:
            policy = HttpPolicy(
                connect_timeout=min(self.timeout, 10.0),
                read_timeout=self.timeout,
                deadline=max(60.0, self.timeout * (self.retries + 2)),
                retries=self.retries,
                backoff=self.backoff,
            )
            self._http = HttpClient(policy, user_agent="reprogate-dataset-verify")
        return self._http

    def _check(self, url: str, reply: Reply) -> Reply:
        if reply.status in (404, 410):
            raise Missing(f"HTTP {reply.status}")
        if reply.status >= 400:
            raise RemoteUnreachable(f"HTTP {reply.status} from {origin(url)}")
        return reply

    def size(self, url: str) -> int | None:
        """Content-Length from a HEAD request, or None when the server does not say."""
        try:
            reply = self._check(url, self.http.request("HEAD", url, max_body=0, deadline=self._left(self.http.policy.deadline)))
        except RemoteUnreachable:
            raise
        except InfrastructureError as exc:
            raise RemoteUnreachable(exc.message) from None
        length = reply.headers.get("Content-Length")
        if not (length and length.isdigit()):
            return None
        self._sizes[url] = int(length)
        return int(length)

    def digest(self, url: str, algorithm: str, on_bytes: Callable[[int], None] | None = None, expected_size: int | None = None) -> tuple[int, str]:
        """(size, "<algorithm>:<hex>") of the body, streamed through the hash."""
        h = new_hasher(algorithm)
        total = 0

        def consume(chunk: bytes) -> None:
            nonlocal total
            h.update(chunk)
            total += len(chunk)
            if on_bytes:
                on_bytes(len(chunk))

        deadline = self._left(self.http.policy.deadline + (expected_size or 0) / SLOWEST_RATE)
        try:
            self._check(url, self.http.request("GET", url, consume=consume, deadline=deadline))
        except (RemoteUnreachable, Missing):
            raise
        except InfrastructureError as exc:
            raise RemoteUnreachable(exc.message) from None
        said = self._sizes.get(url)
        if said is not None and total != said:
            # HEAD and GET disagree (a GET whose Content-Length is wrong, a proxy that cut the body
            # and closed): the remote did not deliver the file, which says nothing of the data
            raise RemoteUnreachable(f"GET {origin(url)}: {total:,} bytes delivered where HEAD said {said:,}; the remote's answers disagree")
        return total, f"{algorithm}:{h.hexdigest()}"
