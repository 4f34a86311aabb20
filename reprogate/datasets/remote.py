"""Reading shards over HTTP(S): sizes with HEAD, digests by streaming GET, bounded retries.

requests is imported only when a manifest actually names remote shards. Every request has a
connect and a read timeout; failures that may pass (connection errors, timeouts, 429 and 5xx)
are retried with exponential backoff, honouring Retry-After. A 404 means the shard is missing;
anything still failing after the retries means the remote is unreachable (exit 3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from reprogate.datasets.hashing import CHUNK, new_hasher

RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class Unreachable(Exception):
    """The remote could not be reached after the allowed retries."""


class Missing(Exception):
    """The remote answered that the shard does not exist."""


@dataclass
class Remote:
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    _session: Any = None

    @property
    def session(self) -> Any:
        if self._session is None:
            import requests

            self._session = requests.Session()
            self._session.headers["User-Agent"] = "reprogate-dataset-verify"
        return self._session

    def _attempts(self, method: str, url: str, call: Callable[[Any], Any]) -> Any:
        import requests

        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), 10.0))
            try:
                response = self.session.request(method, url, stream=method == "GET", timeout=(min(self.timeout, 10.0), self.timeout), allow_redirects=True)
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = type(exc).__name__
                continue
            with response:
                if response.status_code in (404, 410):
                    raise Missing(f"HTTP {response.status_code}")
                if response.status_code in RETRY_STATUS:
                    last = f"HTTP {response.status_code}"
                    wait = response.headers.get("Retry-After", "")
                    if wait.isdigit() and attempt < self.retries:
                        time.sleep(min(float(wait), 60.0))
                    continue
                if response.status_code >= 400:
                    raise Unreachable(f"HTTP {response.status_code} from {url}")
                try:
                    return call(response)
                except (requests.ConnectionError, requests.Timeout) as exc:
                    last = f"{type(exc).__name__} while reading"
                    continue
        raise Unreachable(f"{url}: {last} after {self.retries + 1} attempt(s)")

    def size(self, url: str) -> int | None:
        """Content-Length from a HEAD request, or None when the server does not say."""
        length = self._attempts("HEAD", url, lambda r: r.headers.get("Content-Length"))
        return int(length) if length and length.isdigit() else None

    def digest(self, url: str, algorithm: str, on_bytes: Callable[[int], None] | None = None) -> tuple[int, str]:
        """(size, "<algorithm>:<hex>") of the body, streamed; restarts from zero on a retry."""

        def consume(response: Any) -> tuple[int, str]:
            h = new_hasher(algorithm)
            size = 0
            for chunk in response.iter_content(CHUNK):
                h.update(chunk)
                size += len(chunk)
                if on_bytes:
                    on_bytes(len(chunk))
            return size, f"{algorithm}:{h.hexdigest()}"

        return self._attempts("GET", url, consume)
