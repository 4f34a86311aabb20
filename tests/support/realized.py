"""Realized environments built by hand: each realizer's typed identity with plausible values, on a
stand-in that can neither spawn nor be closed twice, for tests of what the stages, the claim, the
side-by-side and the rebuild record say of an environment without realizing one."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from reprogate.rebuild.realizers.base import Identity
from reprogate.rebuild.realizers.container import ContainerIdentity
from reprogate.rebuild.realizers.current import CurrentIdentity
from reprogate.rebuild.realizers.venv import VenvIdentity

IMAGE_ID = "sha256:" + "ab" * 32


def venv_identity(lock_file: str = "train/requirements.txt", lock_digest: str = "sha256:" + "0f" * 32, **more: Any) -> VenvIdentity:
    said: dict[str, Any] = {"lock_from": "the checkout", "lock_format": "pip-requirements", "python_requested": "3.12", "uv": "uv 0.9.0", "cache_key": "k"}
    return VenvIdentity(lock_file, lock_digest, **{**said, **more})


def container_identity(image_id: str = IMAGE_ID, image_source: str = "the record's pinned digest", **more: Any) -> ContainerIdentity:
    return ContainerIdentity(**{"engine": "podman", "docker_host": "default socket", "image_source": image_source, "image_id": image_id, **more})


def current_identity() -> CurrentIdentity:
    return CurrentIdentity("/usr/bin/python3")


IDENTITIES: dict[str, Callable[[], Identity]] = {"venv": venv_identity, "container": container_identity, "current": current_identity}


def realized(kind: str, identity: Identity | None = None) -> Any:
    """A realized environment of the `kind` realizer (its identity by default: IDENTITIES)."""
    return SimpleNamespace(kind=kind, identity=identity or IDENTITIES[kind](), image_reference=None, close=lambda: None)
