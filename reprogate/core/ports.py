"""A TCP port for a rendezvous (torch.distributed's MASTER_PORT) on this machine."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now: the kernel's choice, so two rebuilds on one machine never
    pick the same one by rule. It is free when asked, not reserved; the ranks bind it moments later."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


__all__ = ["free_port"]
