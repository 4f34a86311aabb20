"""Embed the schemas another schema refers to, so each file is self-contained.

A record may carry its dataset manifest inline, and a capture reuses the record's sections.
Referencing those by URL would make every validator (check-jsonschema, editors) try to download
them; embedding them as bundled resources (JSON Schema 2020-12, section 9.3) keeps each schema
file usable offline. tests/test_schemas.py fails when an embedded copy is stale; run this script
to refresh them (order matters: the record first, then what embeds the record).
"""

import json
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
BUNDLES = [
    ("run-record.schema.json", "datasetManifestSchema", "dataset-manifest.schema.json"),
    ("capture.schema.json", "runRecordSchema", "run-record.schema.json"),
]

for target, key, embedded in BUNDLES:
    path = SCHEMAS / target
    schema = json.loads(path.read_text())
    schema["$defs"][key] = json.loads((SCHEMAS / embedded).read_text())
    path.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    print(f"embedded {embedded} into {target}")
