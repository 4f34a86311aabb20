"""Embed the schemas another schema refers to, so each file is self-contained.

A record may carry its dataset manifest inline, and a capture reuses the record's sections.
Referencing those by URL would make every validator (check-jsonschema, editors) try to download
them, so each target carries a copy under `$defs/<key>`. The copy is not kept as an embedded
resource with its own `$id`: some resolvers (VS Code's JSON language service among them) do not
support those and then cannot resolve the copy's own `#/$defs/...` refs. Instead the copy drops
`$id`/`$schema`, its local refs are re-rooted at `#/$defs/<key>/...`, and the target's refs to the
other file's URL become local pointers into the copy, so plain JSON Pointer resolution suffices.

tests/core/test_schemas.py fails when a target differs from what `bundled` makes of it; run this
script to refresh them (order matters: the record first, then what embeds the record). Running it
twice gives the same files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
BASE = "https://schemas.reprogate.dev/v1/"
BUNDLES = [
    ("run-record.schema.json", "datasetManifestSchema", "dataset-manifest.schema.json"),
    ("capture.schema.json", "runRecordSchema", "run-record.schema.json"),
]


def _rewrite_refs(node: Any, rewrite: Any) -> Any:
    """A copy of `node` with every string `$ref` passed through `rewrite`."""
    if isinstance(node, dict):
        return {k: rewrite(v) if k == "$ref" and isinstance(v, str) else _rewrite_refs(v, rewrite) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(v, rewrite) for v in node]
    return node


def embedded_copy(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """`schema` as it sits at `$defs/<key>` of another file: no `$id`/`$schema`, local refs re-rooted."""
    prefix = f"#/$defs/{key}"

    def local(ref: str) -> str:
        if ref == "#" or ref.startswith("#/"):
            return prefix + ref[1:]
        return ref

    copy = {k: v for k, v in schema.items() if k not in ("$id", "$schema")}
    return _rewrite_refs(copy, local)


def bundled(target: dict[str, Any], key: str, embedded_name: str, embedded: dict[str, Any]) -> dict[str, Any]:
    """`target` with `embedded` copied in at `$defs/<key>` and its refs to `embedded_name`'s URL
    pointing into that copy."""
    url = BASE + embedded_name

    def cross(ref: str) -> str:
        if ref == url or ref.startswith(url + "#"):
            fragment = ref[len(url) :].lstrip("#")
            return f"#/$defs/{key}{fragment}"
        return ref

    result = _rewrite_refs(target, cross)
    result.setdefault("$defs", {})[key] = embedded_copy(embedded, key)
    return result


def load(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    for target, key, embedded in BUNDLES:
        path = SCHEMAS / target
        path.write_text(dump(bundled(load(target), key, embedded, load(embedded))), encoding="utf-8")
        print(f"embedded {embedded} into {target}")


if __name__ == "__main__":
    main()
