"""What each finding code of `validate` checks, in words that hold for every finding of it: the
SARIF log's rule descriptions (output/sarif.py). A code without an entry gets words made from the
code; a finding's own message and hint go with that finding's result, never with its rule."""

from __future__ import annotations

from reprogate.output.sarif import RuleText

SCHEMA_HELP = "The document must match its JSON Schema (schemas/ in reprogate); the result names the field and the line."

RULE_TEXTS: dict[str, RuleText] = {
    "schema": RuleText("A document does not match its schema", SCHEMA_HELP),
    "schema.required": RuleText("A required field is missing", SCHEMA_HELP),
    "schema.unknown-field": RuleText("A field the schema does not know (often a misspelling)", SCHEMA_HELP),
    "schema.enum": RuleText("A value is not one of those the field allows", SCHEMA_HELP),
    "schema.const": RuleText("A value must be exactly the one the schema states", SCHEMA_HELP),
    "schema.type": RuleText("A value has the wrong type", SCHEMA_HELP),
    "schema.form": RuleText("A value is not in the form the field expects (a digest, a date, a version)", SCHEMA_HELP),
    "schema.choice": RuleText("A section needs one of several fields", SCHEMA_HELP),
    "duplicate-key": RuleText("A mapping holds the same key twice", "Keep one of them: YAML readers disagree on which one wins."),
    "not-rebuildable": RuleText(
        "The record cannot be rebuilt as it stands",
        "A rebuild needs every input the record's contract compares; the result names what is missing and how to add it.",
    ),
    "environment-drift": RuleText(
        "The working tree no longer matches an environment pin of the record",
        "An environment pin (lock file, build recipe, image) says what the reference ran in; a pull request that changes it is rebuilt "
        "by the gate. This is a notice, not an invalid record.",
    ),
    "checksum-mismatch": RuleText("A file the record addresses does not have the pinned checksum"),
    "size-mismatch": RuleText("A file the record addresses does not have the pinned size"),
    "source-tree-changed": RuleText("The project folder the record pins is no longer the pinned tree"),
    "reference-artifact-changed": RuleText("A reference artifact (trace, checkpoint, configuration) is not the one the record pins"),
    "dataset-shard-changed": RuleText("A dataset shard is not the one the manifest pins"),
    "secret-in-record": RuleText("A document holds what looks like a credential", "Remove it and rotate it: records are committed and published."),
    "retention-expired": RuleText("An addressed artifact's retention has expired"),
    "contract-expired": RuleText("The contract's lifetime has ended"),
    "statistical-no-interval": RuleText("A statistical contract without a predeclared interval"),
    "interval-does-not-recompute": RuleText("The stored interval is not what the reference seeds give"),
    "bitwise-no-tensors": RuleText("A bitwise contract that names no tensors to compare"),
    "lock-not-resolved": RuleText("A lock file a venv rebuild cannot install as it is"),
    "semantics-unknown": RuleText("The record names a semantics version this reprogate does not know"),
    "unreadable-file": RuleText("A file could not be read"),
    "not-found": RuleText("A path given to validate does not exist"),
}
