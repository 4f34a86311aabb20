"""Writing a manifest shard by shard, in the form its file name asks for, atomically.

A build knows every field but the shards before it hashes them, so the writer writes the head,
streams the shards (hashing each into the digest as it goes) and writes the digest last: a JSON
Lines header gets it in the placeholder it left, YAML and JSON at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import Any, final

from reprogate.core.canonical import CANONICAL_PREFIX
from reprogate.core.fileio import atomic_writer
from reprogate.core.yamlout import FlowMap, dump_yaml, flow_item
from reprogate.datasets.digest import ManifestDigest
from reprogate.datasets.manifest_lines import is_stream

_PLACEHOLDER = CANONICAL_PREFIX + "0" * 64


def render_files(form: str, names: list[str], sizes: list[int], checksums: list[str]) -> tuple[bytes, bytes]:
    """(canonical-v1 text of the shards joined by commas, their text in `form`: jsonl, json or
    yaml) of plain file shards, as ManifestWriter writes them; UnicodeEncodeError for a name that
    is not valid Unicode. A function of its own so that the process that hashed a batch renders it."""
    quoted = [f'"{n}"' if n.isascii() and n.isprintable() and '"' not in n and "\\" not in n else json.dumps(n, ensure_ascii=False) for n in names]
    canonical = ",".join([f'{{"bytes":{s},"checksum":"{c}","name":{q}}}' for q, s, c in zip(quoted, sizes, checksums, strict=True)])
    if form == "jsonl":
        text = "".join([f'{{"name": {q}, "bytes": {s}, "checksum": "{c}"}}\n' for q, s, c in zip(quoted, sizes, checksums, strict=True)])
    elif form == "json":
        text = ",\n".join([f'    {{"name": {q}, "bytes": {s}, "checksum": "{c}"}}' for q, s, c in zip(quoted, sizes, checksums, strict=True)])
    else:
        text = "".join([flow_item({"name": n, "bytes": s, "checksum": c}) for n, s, c in zip(names, sizes, checksums, strict=True)])
    return canonical.encode("utf-8"), text.encode("utf-8")


def form_of(output: Path) -> str:
    """The form a manifest file's name asks for: jsonl, json or yaml."""
    return "jsonl" if is_stream(output) else ("json" if output.suffix.lower() == ".json" else "yaml")


@final
class ManifestWriter:
    """Write a manifest shard by shard, in the form its file name asks for, atomically.

    `fields` are every field but shards, side files and the digest, in the order to write them;
    `files` are the side files (known before the shards: a build hashes them first). Shards are
    added in order; leaving the `with` block writes the digest (`value`) and renames the file into
    place, or, by an exception, leaves the previous file, if any, untouched and no temporary.
    """

    def __init__(self, output: Path, fields: dict[str, Any], files: list[dict[str, Any]] | None = None, comment: str = "") -> None:
        self.output, self.fields, self.files, self.comment = output, dict(fields), files or [], comment
        self.form = form_of(output)
        all_fields = dict(self.fields)
        if self.files:
            all_fields["files"] = self.files
        self.digest = ManifestDigest(all_fields)
        self.count = 0
        self.bytes = 0
        self.value = ""  # the digest, once closed
        self._context: Any = None
        self._fh: Any = None
        self._placeholder_at = -1

    def __enter__(self) -> ManifestWriter:
        self._context = atomic_writer(self.output)
        self._fh = self._context.__enter__()
        self._write_head()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> bool:
        context, self._context = self._context, None
        if kind is None:
            try:
                self._write_tail()
            except BaseException as exc:
                context.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return bool(context.__exit__(kind, value, traceback))

    def _write(self, text: str) -> None:
        self._fh.write(text.encode("utf-8"))

    def _write_head(self) -> None:
        if self.form == "jsonl":
            header = {**self.fields, **({"files": self.files} if self.files else {}), "digest": _PLACEHOLDER}
            raw = (json.dumps(header, ensure_ascii=False) + "\n").encode("utf-8")
            self._placeholder_at = raw.rindex(_PLACEHOLDER.encode("ascii"))
            self._fh.write(raw)
        elif self.form == "json":
            self._write("{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in self.fields.items()) + '  "shards": [')
        else:
            self._write(dump_yaml(self.fields, self.comment) + "shards:")

    def add_files(self, names: list[str], sizes: list[int], checksums: list[str]) -> None:
        """Add plain file shards (the fast path of a build: a batch at a time, no dict per shard).
        Raises UnicodeEncodeError for a name that is not valid Unicode (undecodable bytes)."""
        if names:
            self.add_rendered(*render_files(self.form, names, sizes, checksums), len(names), sum(sizes))

    def add_rendered(self, canonical: bytes, text: bytes, count: int, total: int) -> None:
        """Add `count` plain file shards of `total` bytes rendered by render_files in this form
        (by a build's hashing workers, which hold the names already)."""
        if not count:
            return
        self.digest.add_canonical(canonical)
        if self.form == "json":
            self._fh.write(b"\n" if self.count == 0 else b",\n")
        elif self.form == "yaml" and self.count == 0:
            self._fh.write(b"\n")
        self._fh.write(text)
        self.count += count
        self.bytes += total

    def add(self, shard: dict[str, Any]) -> None:
        """Add a shard of any shape (DVC directories carry `kind` and `files`)."""
        self.digest.add(shard)
        if self.form == "jsonl":
            self._write(json.dumps(shard, ensure_ascii=False) + "\n")
        elif self.form == "json":
            self._write(("\n" if self.count == 0 else ",\n") + "    " + json.dumps(shard, ensure_ascii=False))
        else:
            self._write(("\n" if self.count == 0 else "") + flow_item(shard))
        self.count += 1
        self.bytes += int(shard.get("bytes", 0) or 0)

    def _write_tail(self) -> None:
        value = self.digest.value()
        if self.form == "jsonl":
            self._fh.seek(self._placeholder_at)
            self._fh.write(value.encode("ascii"))
            self._fh.seek(0, 2)
        elif self.form == "json":
            tail = "\n  ]" if self.count else "]"
            if self.files:
                tail += ',\n  "files": [\n' + ",\n".join("    " + json.dumps(f, ensure_ascii=False) for f in self.files) + "\n  ]"
            self._write(tail + f',\n  "digest": {json.dumps(value)}\n}}\n')
        else:
            tail = "" if self.count else " []\n"
            if self.files:
                tail += dump_yaml({"files": [FlowMap(f) for f in self.files]})
            self._write(tail + dump_yaml({"digest": value}))
        self.value = value
