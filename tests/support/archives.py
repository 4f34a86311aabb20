"""Small package archives made by hand, for tests of what a lock file may bring."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def sdist(path: Path, files: dict[str, str]) -> Path:
    """A gzipped tar of `files` (archive name -> text): a source distribution's shape."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path
