"""runtime/probe.py: what a realized environment holds, told from inside it."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from reprogate.runtime.probe import installed_packages


def _parsed_whole(path: list[str] | None = None) -> dict[str, str]:
    """importlib.metadata's own answer, each file parsed whole."""
    found = metadata.distributions(path=path) if path is not None else metadata.distributions()
    return {str(d.metadata["Name"]).lower().replace("_", "-"): str(d.version) for d in found if d.metadata.get("Name")}


def test_the_packages_of_this_environment_are_importlib_metadatas() -> None:
    assert installed_packages() == _parsed_whole()
    assert "torch" in installed_packages() and "pytest" in installed_packages()


def test_only_the_headers_are_read_and_egg_info_counts(tmp_path: Path) -> None:
    wheel = tmp_path / "Some_Package-1.2.3.dist-info"
    wheel.mkdir()
    (wheel / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: Some_Package\nVersion: 1.2.3\nSummary: s\n\n"
        "A long description that quotes headers:\nName: not-a-package\nVersion: 9\n" + "text\n" * 10_000
    )
    egg = tmp_path / "old.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: old\nVersion: 0.1\n")
    nameless = tmp_path / "broken-1.0.dist-info"
    nameless.mkdir()
    (nameless / "METADATA").write_text("Metadata-Version: 2.1\n")
    assert installed_packages([str(tmp_path)]) == _parsed_whole([str(tmp_path)]) == {"some-package": "1.2.3", "old": "0.1"}
