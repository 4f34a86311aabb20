"""A loopback HTTP server with one misbehaviour, for the attacks on reprogate's one HTTP policy:
a body dripped one byte at a time, a manifest of hundreds of megabytes, a redirect loop, a Link
header to another host, a token realm over plain http, answers of the wrong JSON type. It records
every request (method, path, headers) so a test can tell whether a credential reached it."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Behaviour = Callable[[http.server.BaseHTTPRequestHandler, "Hostile"], None]


@dataclass
class Hostile:
    behaviour: Behaviour
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    sent: int = 0  # body bytes written before the client went away
    url: str = ""
    done: threading.Event = field(default_factory=threading.Event)  # set when a handler stopped (finished, or the client left)


@contextmanager
def hostile(behaviour: Behaviour) -> Iterator[Hostile]:
    state = Hostile(behaviour)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            state.seen.append((self.command, self.path, dict(self.headers.items())))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            try:
                state.behaviour(self, state)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                state.done.set()

        do_GET = do_HEAD = do_POST = do_PATCH = do_DELETE = _handle

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False  # a handler still dripping must not hold the test at shutdown
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def answer(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def json_answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Behaviour:
    body = json.dumps(value).encode()
    return lambda h, s: answer(h, status, body, {"Content-Type": "application/json", **(headers or {})})


def drip(every: float = 0.25, length: int = 1000) -> Behaviour:
    """Headers at once, then one byte every `every` seconds: a complete answer would take
    `length * every` seconds (250 s by default), far past any deadline a test sets."""

    def behave(handler: http.server.BaseHTTPRequestHandler, state: Hostile) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(length))
        handler.end_headers()
        handler.wfile.flush()
        for _ in range(length):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            state.sent += 1
            time.sleep(every)

    return behave


def huge(total: int = 300 * 1024 * 1024, media_type: str = "application/vnd.oci.image.manifest.v1+json") -> Behaviour:
    """A 300 MB answer, streamed in 1 MiB pieces for as long as the client reads."""

    def behave(handler: http.server.BaseHTTPRequestHandler, state: Hostile) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", media_type)
        handler.send_header("Content-Length", str(total))
        handler.end_headers()
        piece = b" " * (1024 * 1024)
        while state.sent < total:
            handler.wfile.write(piece)
            state.sent += len(piece)

    return behave


def redirect_loop() -> Behaviour:
    return lambda h, s: answer(h, 302, b"", {"Location": h.path})


def bearer_challenge(realm: str) -> Behaviour:
    return lambda h, s: answer(h, 401, b"{}", {"WWW-Authenticate": f'Bearer realm="{realm}",service="registry"', "Content-Type": "application/json"})


__all__ = ["Hostile", "answer", "bearer_challenge", "drip", "hostile", "huge", "json_answer", "redirect_loop"]
