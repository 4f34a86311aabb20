"""Semantic rules: what a document must satisfy that JSON Schema cannot say.

Every rule is listed in RULES, by name, with the kinds it checks; a rule module that is not
listed here checks nothing (tests/rules/test_registry.py fails on a rule function left out).
Adding a rule is one function in a module below and one line here.
"""

from __future__ import annotations

from reprogate.rules import (
    addressed,
    config,
    contract,
    credentials,
    driver_compat,
    entrypoint,
    envelope,
    environment,
    manifest,
    rank_environment,
    ranks,
    rebuildable,
    retention,
    shards,
    source_tree,
    trace_meta,
    venv_rebuild,
)
from reprogate.rules.base import Rule, RuleContext, RuleSpec, get, items

RECORD, MANIFEST, CONFIG = "RunRecord", "DatasetManifest", "Config"

RULES: dict[str, RuleSpec] = {
    "checksums-match": RuleSpec(addressed.checksums_match, (RECORD,), reads_files=True),
    "source-tree-matches": RuleSpec(source_tree.source_tree_matches, (RECORD,), reads_files=True),
    "environment-pins-match": RuleSpec(environment.environment_pins_match, (RECORD,), reads_files=True),
    "configuration-hash-matches": RuleSpec(addressed.configuration_hash_matches, (RECORD,), reads_files=True),
    "entrypoint-is-readable": RuleSpec(entrypoint.entrypoint_is_readable, (RECORD,)),
    # like a configuration file's hash, judged by the rebuild at its `config` stage, not refused before it
    "arguments-match-configuration": RuleSpec(entrypoint.arguments_match_configuration, (RECORD,), reads_files=True),
    "torchrun-matches-world-size": RuleSpec(entrypoint.torchrun_matches_world_size, (RECORD,)),
    "dataset-manifest-matches": RuleSpec(addressed.dataset_manifest_matches, (RECORD,), reads_files=True),
    "dataset-shards-match": RuleSpec(shards.dataset_shards_match, (RECORD,), reads_files=True),
    "driver-runs-framework-cuda": RuleSpec(driver_compat.driver_runs_framework_cuda, (RECORD,)),
    "reference-record-exists": RuleSpec(config.reference_record_exists, (CONFIG,)),
    "statistical-has-interval": RuleSpec(contract.statistical_has_interval, (RECORD,)),
    "stored-interval-recomputes": RuleSpec(contract.stored_interval_recomputes, (RECORD,)),
    "seeds-say-what-they-can": RuleSpec(contract.seeds_say_what_they_can, (RECORD,)),
    "bitwise-names-tensors": RuleSpec(contract.bitwise_names_tensors, (RECORD,)),
    "dirty-source-has-diff": RuleSpec(contract.dirty_source_has_diff, (RECORD,)),
    "behavioral-has-tolerance": RuleSpec(contract.behavioral_has_tolerance, (RECORD,)),
    "reference-inside-envelope": RuleSpec(envelope.reference_inside_envelope, (RECORD,)),
    "manifest-consistent": RuleSpec(manifest.manifest_consistent, (MANIFEST,)),
    "inline-manifest-consistent": RuleSpec(manifest.inline_manifest_consistent, (RECORD,)),
    "seeds-cover-every-rank": RuleSpec(ranks.seeds_cover_every_rank, (RECORD,)),
    "rank-mapping-matches-shape": RuleSpec(ranks.rank_mapping_matches_shape, (RECORD,)),
    "dataset-retention-current": RuleSpec(retention.dataset_retention_current, (RECORD,)),
    "manifest-retention-current": RuleSpec(retention.manifest_retention_current, (MANIFEST,)),
    "contract-lifetime-current": RuleSpec(retention.contract_lifetime_current, (RECORD,)),
    "no-credentials": RuleSpec(credentials.no_secrets, (RECORD, MANIFEST, CONFIG)),
    "rank-environment-is-inert": RuleSpec(rank_environment.rank_environment_is_inert, (RECORD,)),
    "reference-trace-meta-agrees": RuleSpec(trace_meta.reference_trace_meta_agrees, (RECORD,), reads_files=True),
    "record-is-rebuildable": RuleSpec(rebuildable.record_is_rebuildable, (RECORD,)),
    "semantics-is-readable": RuleSpec(venv_rebuild.semantics_is_readable, (RECORD,)),
    "realizer-is-declared": RuleSpec(venv_rebuild.realizer_is_declared, (RECORD,)),
    "venv-lock-is-resolved": RuleSpec(venv_rebuild.venv_lock_is_resolved, (RECORD,), reads_files=True),
}


def rules_for(kind: str, addressed_files: bool = True) -> list[Rule]:
    """The checks for a document kind, in RULES order; without the ones that read addressed files
    when `addressed_files` is false."""
    return [spec.check for spec in RULES.values() if kind in spec.kinds and (addressed_files or not spec.reads_files)]


__all__ = ["RULES", "Rule", "RuleContext", "RuleSpec", "get", "items", "rules_for"]
