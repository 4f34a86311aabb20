"""Every family of alike things is listed in one explicit mapping; a member left out fails here.

Rules, rebuild stages, realizers and launchers each have a protocol and a mapping from name to
member. A module added to a family's package without a line in its mapping does nothing at run
time, which is the mistake these tests catch.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import reprogate.rebuild.launchers as launchers
import reprogate.rebuild.realizers as realizers
import reprogate.rebuild.stages as stages
import reprogate.rules as rules

SHARED = {"base", "local", "rank_reports"}  # modules holding a family's shared parts, not members


def _modules(package: ModuleType) -> list[ModuleType]:
    return [
        importlib.import_module(f"{package.__name__}.{m.name}")
        for m in pkgutil.iter_modules(package.__path__)
        if m.name not in SHARED and not m.name.startswith("_")
    ]


def test_every_rule_function_is_registered() -> None:
    registered = {spec.check for spec in rules.RULES.values()}
    for module in _modules(rules):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_"):
                continue
            params = list(inspect.signature(fn).parameters.values())
            if len(params) == 1 and params[0].name == "ctx" and "Iterator[Diagnostic]" in str(inspect.signature(fn).return_annotation):
                assert fn in registered, f"{module.__name__}.{name} looks like a rule but RULES does not list it"


def test_every_stage_function_is_registered() -> None:
    """(Their order is the runbook's: tests/rebuild/test_stages_contract.py.)"""
    registered = {stage.run for stage in stages.STAGES.values()}
    for module in _modules(stages):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            hints = inspect.signature(fn)
            if (
                fn.__module__ == module.__name__
                and not name.startswith("_")
                and list(hints.parameters) == ["state"]
                and "StageResult" in str(hints.return_annotation)
            ):
                assert fn in registered, f"{module.__name__}.{name} is a stage function no STAGES entry runs"


def test_every_realizer_and_launcher_module_is_registered() -> None:
    for package, mapping in ((realizers, realizers.REALIZERS), (launchers, launchers.LAUNCHERS)):
        for module in _modules(package):
            name = getattr(module, "NAME", None)
            assert name in mapping, f"{module.__name__} declares NAME {name!r} but is not registered"
            assert type(mapping[name]).__module__ == module.__name__


def test_the_realizer_names_the_cli_and_schemas_list_are_the_registered_ones() -> None:
    """The one place outside the registry that spells realizer names: what a person or a record
    may ask for (the --realizer choices, the schemas' enums). A realizer added to REALIZERS and
    not there cannot be chosen; one listed there and not registered is refused at run time."""
    import json

    import click
    from support import REPO

    from reprogate.cli.init import init
    from reprogate.cli.rebuild import rebuild

    registered = set(realizers.REALIZERS)
    for command in (rebuild, init):
        choice = next(p.type for p in command.params if p.name == "realizer")
        assert isinstance(choice, click.Choice) and set(choice.choices) == registered, f"{command.name} --realizer"

    def enums(node: object, key: str = "") -> list[tuple[str, set[str]]]:
        if isinstance(node, dict):
            found = [(key, set(node["enum"]))] if key in ("realizer", "candidate") and "enum" in node else []
            return found + [e for k, v in node.items() for e in enums(v, k)]
        return [e for v in node for e in enums(v)] if isinstance(node, list) else []

    for name in ("run-record", "capture"):
        listed = enums(json.loads((REPO / "schemas" / f"{name}.schema.json").read_text()))
        assert len(listed) == 3 and all(names == registered for _, names in listed), (name, listed)


def test_the_contract_levels_the_cli_and_schemas_list_are_core_levels() -> None:
    """Contract levels are one closed set (core/levels.py): the schemas' enums of a record's
    contract.level and a verdict's record.level, and init's --level choices, are exactly it."""
    import json

    import click
    from support import REPO

    from reprogate.cli.init import init
    from reprogate.core.levels import LEVELS

    choice = next(p.type for p in init.params if p.name == "level")
    assert isinstance(choice, click.Choice) and tuple(choice.choices) == LEVELS

    def enums(node: object, key: str = "") -> list[set[str]]:
        if isinstance(node, dict):
            found = [set(node["enum"])] if key == "level" and "enum" in node else []
            return found + [e for k, v in node.items() for e in enums(v, k)]
        return [e for v in node for e in enums(v)] if isinstance(node, list) else []

    for name in ("run-record", "capture", "verdict"):
        listed = enums(json.loads((REPO / "schemas" / f"{name}.schema.json").read_text()))
        assert listed and all(names == set(LEVELS) for names in listed), (name, listed)


def test_the_stage_names_the_runner_and_the_verdict_schema_list_are_one_tuple() -> None:
    """Stage names are one closed set (rebuild/stage_names.py): the runner's STAGES and DOING in
    that order, and the verdict schema's enums of a stage's name, status and cause."""
    import json

    from support import REPO

    from reprogate.rebuild.stage_names import CAUSES, STAGE_NAMES, STAGE_STATUSES
    from reprogate.rebuild.stages import DOING, STAGES

    assert tuple(STAGES) == STAGE_NAMES and tuple(DOING) == STAGE_NAMES
    stage = json.loads((REPO / "schemas" / "verdict.schema.json").read_text())["properties"]["stages"]["items"]["properties"]
    assert stage["name"]["enum"] == list(STAGE_NAMES)
    assert set(stage["status"]["enum"]) == set(STAGE_STATUSES) and set(stage["cause"]["enum"]) == set(CAUSES)


def test_every_detector_and_lock_format_module_is_registered() -> None:
    import reprogate.detect as detect
    import reprogate.lockfiles as lockfiles

    helpers = {"command", "output", "run", "git", "versions", "cuda", "dockerfile", "pip_commands", "pinned", "lines"}
    for module in _modules(detect):
        if module.__name__.rsplit(".", 1)[-1] not in helpers:
            assert detect.DETECTORS.get(getattr(module, "LAYER", None)) is module, f"{module.__name__} is not in DETECTORS"
    for module in _modules(lockfiles):
        assert lockfiles.FORMATS.get(getattr(module, "FORMAT", None)) is module, f"{module.__name__} is not in FORMATS"


def test_every_capture_layer_is_registered_under_its_section() -> None:
    import reprogate.capture as capture
    from reprogate.capture.layers import LAYERS

    members = {m for m in _modules(capture) if hasattr(m, "SECTION")}
    assert members == set(LAYERS.values()), "a module with SECTION and capture() that LAYERS does not list does nothing"
    for name, found in LAYERS.items():
        assert found.SECTION == name and callable(found.capture)
