"""reprogate/core/history.py: earlier versions of a file found in a real git repository by what
they hold, and the keys two versions of a document differ in."""

from __future__ import annotations

from pathlib import Path

from support import git, require_tool

from reprogate.core.history import find_version, flatten, key_changes


def repository(tmp_path: Path, versions: list[bytes], path: str = "config/train.yaml") -> tuple[Path, list[str]]:
    """A repository whose `path` holds each of `versions` in turn, one commit each (an unrelated
    commit between each), and the commits that wrote them."""
    require_tool("git")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commits = []
    for i, content in enumerate(versions):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"version {i}")
        commits.append(git(root, "rev-parse", "HEAD"))
        (root / "notes.txt").write_text(f"unrelated {i}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"notes {i}")
    return root, commits


def test_the_newest_matching_version_is_found_with_its_commit(tmp_path: Path) -> None:
    root, commits = repository(tmp_path, [b"lr: 0.1\n", b"lr: 0.2\n", b"lr: 0.3\n"])
    assert find_version(root, "config/train.yaml", lambda c: c == b"lr: 0.2\n") == (commits[1], b"lr: 0.2\n")
    assert find_version(root, "config/train.yaml", lambda c: c.startswith(b"lr:")) == (commits[2], b"lr: 0.3\n")  # newest first
    assert find_version(root, "config/train.yaml", lambda c: c == b"lr: 0.1\n") == (commits[0], b"lr: 0.1\n")


def test_no_matching_version_unknown_path_or_no_repository_is_none(tmp_path: Path) -> None:
    root, _ = repository(tmp_path, [b"lr: 0.1\n", b"lr: 0.2\n"])
    assert find_version(root, "config/train.yaml", lambda c: False) is None
    assert find_version(root, "config/other.yaml", lambda c: True) is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_version(plain, "config/train.yaml", lambda c: True) is None


def test_the_search_stops_after_limit_commits_of_the_file(tmp_path: Path) -> None:
    root, commits = repository(tmp_path, [b"v0\n", b"v1\n", b"v2\n", b"v3\n"])
    assert find_version(root, "config/train.yaml", lambda c: c == b"v1\n", limit=3) == (commits[1], b"v1\n")  # v3, v2, v1
    assert find_version(root, "config/train.yaml", lambda c: c == b"v0\n", limit=3) is None


def test_each_distinct_content_is_tested_once(tmp_path: Path) -> None:
    root, commits = repository(tmp_path, [b"a\n", b"b\n", b"a\n", b"b\n"])
    asked: list[bytes] = []

    def matches(content: bytes) -> bool:
        asked.append(content)
        return False

    assert find_version(root, "config/train.yaml", matches) is None
    assert asked == [b"b\n", b"a\n"]
    assert find_version(root, "config/train.yaml", lambda c: c == b"a\n") == (commits[2], b"a\n")


def test_a_deleted_file_is_found_in_the_commits_before_the_deletion(tmp_path: Path) -> None:
    root, commits = repository(tmp_path, [b"keep: 1\n"])
    git(root, "rm", "-q", "config/train.yaml")
    git(root, "commit", "-q", "-m", "remove")
    assert find_version(root, "config/train.yaml", lambda c: True) == (commits[0], b"keep: 1\n")


def test_flatten_names_every_leaf_by_its_path() -> None:
    data = {"train": {"lr": 0.01, "schedule": {"warmup": 100}}, "model": {"layers": [4, {"width": 8}]}, "seed": 1, "empty": {}}
    assert flatten(data) == {"train.lr": 0.01, "train.schedule.warmup": 100, "model.layers[0]": 4, "model.layers[1].width": 8, "seed": 1}
    assert flatten([1, [2]]) == {"[0]": 1, "[1][0]": 2}
    assert flatten(5) == {"": 5}
    assert flatten({1: "a"}) == {"1": "a"}


def test_key_changes_lists_changed_added_and_removed_leaves_sorted() -> None:
    before = {"train": {"lr": 0.01, "steps": 100}, "model": {"layers": [4, 4]}, "old": "x"}
    after = {"train": {"lr": 0.02, "steps": 100}, "model": {"layers": [4, 8]}, "new": True}
    assert key_changes(before, after) == [
        "model.layers[1]: 4 -> 8",
        "new: added (True)",
        "old: removed (was 'x')",
        "train.lr: 0.01 -> 0.02",
    ]
    assert key_changes(before, before) == []


def test_key_changes_stops_at_the_limit_and_counts_the_rest() -> None:
    before = {f"k{i:02d}": i for i in range(12)}
    after = {f"k{i:02d}": i + 1 for i in range(12)}
    assert key_changes(before, after) == [f"k{i:02d}: {i} -> {i + 1}" for i in range(8)] + ["... 4 more"]
    assert key_changes(before, after, limit=12) == [f"k{i:02d}: {i} -> {i + 1}" for i in range(12)]
