"""One HTTP policy for every remote reprogate talks to: GitHub's API, container registries and
dataset remotes.

The rules are the same for all three, so a user learns them once:

- Retries are urllib3's `Retry`, mounted on the session: connection and read errors, 408, 429 and
  5xx, exponential backoff, `Retry-After` honoured up to `max_wait` (a longer wait is reported,
  never slept through).
- A deadline bounds each request, retries and body included. Socket timeouts alone cannot: a
  server that sends one byte every two seconds never trips a 30-second read timeout. The request
  runs on a daemon thread and the caller stops waiting at the deadline (exit 3).
- A response body is read up to `max_body` bytes; a larger answer is refused, not buffered.
- Credentials travel only to the origin they were issued for and only over https (loopback
  excepted). requests drops the Authorization header when a redirect leaves the host; links to
  follow (pagination) are checked with `same_origin` before they are followed.
- At most `max_redirects` redirects; a loop ends as an infrastructure error, not a traceback.

requests is imported on first use, so commands that never go online do not pay for it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from reprogate.core.errors import InfrastructureError, UsageError

MiB = 1024 * 1024
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


class HttpUnreachable(InfrastructureError):
    """The remote could not be reached, kept failing, or did not finish within the deadline."""


class ResponseTooLarge(InfrastructureError):
    """The remote answered with more bytes than the policy reads."""


@dataclass(frozen=True)
class HttpPolicy:
    """Limits for one client. Each remote kind starts from these defaults and changes what it must
    (a registry reads manifests of at most 4 MiB; GitHub waits longer for rate limits)."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    deadline: float = 120.0  # one logical request: every retry and the whole body
    retries: int = 3
    backoff: float = 0.5
    max_wait: float = 60.0  # longest Retry-After honoured
    max_body: int = 16 * MiB
    max_redirects: int = 5
    retry_statuses: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
    retry_after_statuses: frozenset[int] = frozenset({413, 429, 503})


@dataclass
class Reply:
    """A finished response: status, headers, the body (empty when it was streamed to a consumer)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; a body that is not JSON is the remote's fault (exit 3)."""

        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            raise InfrastructureError(f"{origin(self.url)} answered HTTP {self.status} with a body that is not JSON") from None
        except RecursionError:  # `[[[[…` 100,000 deep: parsing runs out of stack
            raise InfrastructureError(f"{origin(self.url)} answered HTTP {self.status} with JSON nested too deep to read") from None


def origin(url: str) -> str:
    """scheme://host[:port] of a URL, lower-cased: the unit credentials are issued for."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{(parts.netloc.rpartition('@')[2]).lower()}"


def is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "").lower() in LOOPBACK_HOSTS


def same_origin(url: str, other: str) -> bool:
    return origin(url) == origin(other)


def require_secure_transport(url: str) -> None:
    """Credentials go over https, or plain http to this machine only; anything else is refused."""
    if urlsplit(url).scheme.lower() != "https" and not is_loopback(url):
        raise UsageError(f"credentials for {origin(url)} are only sent over https (or to a loopback address); refusing plain http")


def _retry_class() -> type:
    from urllib3.util.retry import Retry

    class CappedRetry(Retry):
        """urllib3's Retry, refusing to sleep longer than the policy allows."""

        def __init__(self, *args: Any, max_wait: float = 60.0, retry_after_statuses: frozenset[int] | None = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.max_wait = max_wait
            if retry_after_statuses is not None:
                self.RETRY_AFTER_STATUS_CODES = retry_after_statuses

        def new(self, **kw: Any) -> Any:
            kw.setdefault("max_wait", self.max_wait)
            kw.setdefault("retry_after_statuses", self.RETRY_AFTER_STATUS_CODES)
            return super().new(**kw)

        def get_retry_after(self, response: Any) -> float | None:
            seconds = super().get_retry_after(response)
            if seconds is not None and seconds > self.max_wait:
                raise HttpUnreachable(f"the remote asked to retry after {seconds:.0f} s, longer than the {self.max_wait:.0f} s reprogate waits")
            return seconds

    return CappedRetry


@dataclass
class HttpClient:
    """A session that keeps to an HttpPolicy. One per remote kind; reuse it for connection pooling."""

    policy: HttpPolicy = field(default_factory=HttpPolicy)
    user_agent: str = "reprogate"
    headers: dict[str, str] = field(default_factory=dict)
    _credentials: dict[str, str] = field(default_factory=dict)
    _session: Any = None

    @property
    def session(self) -> Any:
        if self._session is None:
            import requests
            from requests.adapters import HTTPAdapter

            retry = _retry_class()(
                total=self.policy.retries,
                connect=self.policy.retries,
                read=self.policy.retries,
                status=self.policy.retries,
                redirect=False,  # requests counts redirects itself (max_redirects)
                backoff_factor=self.policy.backoff,
                backoff_max=min(self.policy.max_wait, 30.0),
                status_forcelist=self.policy.retry_statuses,
                allowed_methods=None,  # every method: a 5xx means the write did not happen
                respect_retry_after_header=True,
                raise_on_status=False,  # the last answer comes back and is explained by the caller
                max_wait=self.policy.max_wait,
                retry_after_statuses=self.policy.retry_after_statuses,
            )
            session = requests.Session()
            session.max_redirects = self.policy.max_redirects
            session.headers.update({"User-Agent": self.user_agent, **self.headers})
            adapter = HTTPAdapter(max_retries=retry)
            session.mount("https://", adapter)
            session.mount("http://", adapter)
            self._session = session
        return self._session

    def authorize(self, url: str, header: str) -> None:
        """Send `Authorization: header` to this URL's origin, and to no other."""
        self._credentials[origin(url)] = header

    def credential_for(self, url: str) -> str | None:
        """The Authorization value for a URL, if one was issued for its origin and the transport
        may carry it (https, or plain http on loopback)."""
        header = self._credentials.get(origin(url))
        if header is None:
            return None
        require_secure_transport(url)
        return header

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        max_body: int | None = None,
        consume: Callable[[bytes], None] | None = None,
        deadline: float | None = None,
        chunk: int = 1024 * 1024,
    ) -> Reply:
        """One request under the policy. With `consume`, a successful body is streamed to it (no
        size bound: the caller hashes gigabytes) and the Reply's body is empty."""
        import requests

        send = dict(headers or {})
        credential = self.credential_for(url)
        if credential and "Authorization" not in send:
            send["Authorization"] = credential
        limit = self.policy.max_body if max_body is None else max_body
        timeout = (self.policy.connect_timeout, self.policy.read_timeout)
        cancelled = threading.Event()
        holder: dict[str, Any] = {}

        def perform() -> Reply:
            try:
                response = self.session.request(method, url, headers=send, params=params, json=json, timeout=timeout, stream=True, allow_redirects=True)
            except requests.TooManyRedirects:
                raise HttpUnreachable(f"{method} {origin(url)}: more than {self.policy.max_redirects} redirects (a redirect loop?)") from None
            except requests.exceptions.RetryError as exc:
                raise HttpUnreachable(f"{method} {origin(url)}: still failing after {self.policy.retries + 1} attempts ({_reason(exc)})") from None
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise HttpUnreachable(f"{method} {origin(url)}: {_reason(exc)} after {self.policy.retries + 1} attempt(s)") from None
            except requests.RequestException as exc:
                raise HttpUnreachable(f"{method} {origin(url)}: {type(exc).__name__}") from None
            holder["response"] = response
            sink = consume if 200 <= response.status_code < 300 else None  # error pages are read, not hashed
            with response:
                body = bytearray()
                try:
                    for piece in response.iter_content(chunk):
                        if cancelled.is_set():
                            break
                        if sink is not None:
                            sink(piece)
                            continue
                        body += piece
                        if len(body) > limit:
                            raise ResponseTooLarge(f"{method} {origin(url)}: the answer is larger than {limit:,} bytes; refused")
                except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
                    raise HttpUnreachable(f"{method} {origin(url)}: the connection broke while reading ({_reason(exc)})") from None
                return Reply(response.status_code, response.headers, bytes(body), response.url)

        budget = self.policy.deadline if deadline is None else deadline
        try:
            return _within(perform, budget)
        except TimeoutError:
            cancelled.set()
            _abort(holder.get("response"))
            raise HttpUnreachable(f"{method} {origin(url)}: no complete answer within {budget:g} s") from None


def _abort(response: Any) -> None:
    """End a response another thread is still reading. Closing the file is not enough: a read
    blocked in recv() keeps the socket open (a drip-feeding server never notices), so the socket
    is shut down first, which wakes the reader and tells the server the answer was abandoned."""
    if response is None:
        return

    connection = getattr(getattr(response, "raw", None), "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed by the other side
            sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):  # closing a half-read response may fail; we are leaving anyway
        response.close()


def _within(work: Callable[[], Reply], seconds: float) -> Reply:
    """Run `work` on a daemon thread and wait at most `seconds` (TimeoutError after that)."""
    values: list[Reply] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            values.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=target, name="reprogate-http", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError
    if errors:
        raise errors[0]
    return values[0]


def _reason(exc: BaseException) -> str:
    """A short cause: the innermost exception's class, never a URL with its query or credentials."""
    inner: BaseException = exc
    while True:
        nxt = getattr(inner, "reason", None) or inner.__cause__ or inner.__context__
        if not isinstance(nxt, BaseException) or nxt is inner:
            break
        inner = nxt
    return type(inner).__name__
