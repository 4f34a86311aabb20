"""Embed dataset-manifest.schema.json inside run-record.schema.json.

A record may carry its dataset manifest inline. Referencing the manifest schema by URL would make
every validator (check-jsonschema, editors) try to download it; embedding it as a bundled
resource (JSON Schema 2020-12, section 9.3) keeps each schema file self-contained and offline.
tests/test_schemas.py fails when the embedded copy is stale; run this script to refresh it.
"""

import json
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"

record_path = SCHEMAS / "run-record.schema.json"
record = json.loads(record_path.read_text())
record["$defs"]["datasetManifestSchema"] = json.loads((SCHEMAS / "dataset-manifest.schema.json").read_text())
record_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
print(f"embedded dataset-manifest.schema.json into {record_path.name}")
