"""Bad input gets a located, plain error and the right exit code, never a traceback."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
from pathlib import Path

import pytest

from reprogate.core.diagnostics import ExitCode, Location
from reprogate.core.documents import DocumentError, load_document, load_text


def load_error(text: str | bytes, tmp_path: Path, name: str = "r.yaml", **kw: int) -> DocumentError:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DocumentError) as caught:
        load_document(path, **kw)
    return caught.value


def test_malformed_yaml_reports_line_and_column(tmp_path: Path) -> None:
    err = load_error("apiVersion: reprogate/v1\nkind: [RunRecord\nmetadata: {}\n", tmp_path)
    assert err.exit_code == ExitCode.USAGE
    d = err.diagnostics[0]
    assert d.code == "yaml-syntax"
    assert d.location.line == 3 and d.location.col >= 1


def test_duplicate_keys_report_both_lines(tmp_path: Path) -> None:
    err = load_error("kind: RunRecord\nseeds:\n  global: 1\n  python: 2\n  global: 3\n", tmp_path)
    assert err.exit_code == ExitCode.USAGE  # unreadable as written, like a file that is not UTF-8
    d = err.diagnostics[0]
    assert d.code == "duplicate-key" and d.field == "seeds.global"
    assert "line 3" in d.message and "line 5" in d.message
    assert d.location == Location(5, 3)


def test_duplicate_keys_in_json_are_caught_too(tmp_path: Path) -> None:
    err = load_error('{"kind": "RunRecord",\n "kind": "Other"}', tmp_path, "r.json")
    assert err.diagnostics[0].code == "duplicate-key"
    assert "line 1" in err.diagnostics[0].message and "line 2" in err.diagnostics[0].message


def test_alias_bomb_is_rejected_fast_and_in_bounded_memory(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    tracemalloc.start()
    err = load_error("\n".join(lines) + "\n", tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert err.diagnostics[0].code == "alias-expansion"
    expanded = int(re.search(r"to ([\d,]+) nodes", err.diagnostics[0].message).group(1).replace(",", ""))
    assert expanded > 10**10  # counted, never built: that many nodes would never fit in memory
    assert peak < 5 * 1024 * 1024


def test_modest_aliases_are_expanded(tmp_path: Path) -> None:
    doc = load_text("base: &b {lr: 0.1, wd: 0.0}\nrun:\n  <<: *b\n  lr: 0.2\nother: *b\n", "t")
    assert doc.data["run"] == {"lr": 0.2, "wd": 0.0}
    assert doc.data["other"] == {"lr": 0.1, "wd": 0.0}
    assert doc.data["other"] is not doc.data["base"]  # copies: mutating one never changes another


def test_recursive_alias_is_an_error(tmp_path: Path) -> None:
    assert load_error("a: &a [1, *a]\n", tmp_path).diagnostics[0].code == "recursive-alias"


def test_file_over_size_cap_is_refused_and_cap_can_be_raised(tmp_path: Path) -> None:
    text = "kind: RunRecord\n" + "# padding\n" * 200
    err = load_error(text, tmp_path, max_bytes=1000)
    assert err.diagnostics[0].code == "too-large"
    assert "--max-bytes" in err.diagnostics[0].hint
    assert load_document(tmp_path / "r.yaml", max_bytes=10_000).data == {"kind": "RunRecord"}


def test_non_utf8_bytes_are_located(tmp_path: Path) -> None:
    err = load_error(b"kind: RunRecord\nmetadata:\n  name: caf\xe9\n", tmp_path)
    d = err.diagnostics[0]
    assert d.code == "not-utf8" and err.exit_code == ExitCode.USAGE
    assert d.location == Location(3, 12)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(b"\xef\xbb\xbfkind: RunRecord\n")
    assert load_document(path).data == {"kind": "RunRecord"}


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n", "---\n"])
def test_empty_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    err = load_error(text, tmp_path)
    assert err.diagnostics[0].code == "empty" and err.exit_code == ExitCode.USAGE


def test_json_record_loads_with_positions(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"kind": "RunRecord", "seeds": {"global": 1, "note": "caf\u00e9 \U0001f600"}}, indent=2))
    doc = load_document(path)
    assert doc.syntax == "json" and doc.data["seeds"]["note"] == "caf\u00e9 \U0001f600"
    assert doc.locate(("seeds", "global")) == Location(4, 5)


def test_malformed_json_reports_json_position(tmp_path: Path) -> None:
    err = load_error('{\n  "kind": "RunRecord",\n  "seeds": {,}\n}\n', tmp_path, "r.json")
    assert err.diagnostics[0].code == "json-syntax"
    assert err.diagnostics[0].location.line == 3


def test_scalars_follow_yaml_1_2_core_schema() -> None:
    doc = load_text("a: yes\nb: no\nc: on\nd: 2026-01-01\ne: 0o17\nf: 1e3\ng: ~\nh: '1'\ni: True\nj: 010\n", "t")
    assert doc.data == {"a": "yes", "b": "no", "c": "on", "d": "2026-01-01", "e": 15, "f": 1000.0, "g": None, "h": "1", "i": True, "j": 10}


@pytest.mark.parametrize("text", ["a: !!python/object/apply:os.system [true]\n", "a: !custom x\n", "a: !!binary aGk=\n"])
def test_non_standard_tags_are_refused(tmp_path: Path, text: str) -> None:
    assert load_error(text, tmp_path).diagnostics[0].code == "unsupported-tag"


def test_explicit_standard_tags_apply(tmp_path: Path) -> None:
    assert load_text("a: !!str 3\nb: !!float 1\nc: !!int '7'\n", "t").data == {"a": "3", "b": 1.0, "c": 7}
    assert load_error("a: !!int x\n", tmp_path).diagnostics[0].code == "bad-scalar"


def test_several_documents_in_one_file_are_refused(tmp_path: Path) -> None:
    err = load_error("kind: RunRecord\n---\nkind: RunRecord\n", tmp_path)
    assert "more than one YAML document" in err.diagnostics[0].message


def test_complex_keys_are_refused(tmp_path: Path) -> None:
    assert load_error("? [a, b]\n: 1\n", tmp_path).diagnostics[0].code == "complex-key"


def test_unreadable_file_is_exit_2(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root reads any file; a folder named like a record is unreadable as one
        path = tmp_path / "dir.yaml"
        path.mkdir()
        with pytest.raises(DocumentError) as caught:
            load_document(path)
        assert caught.value.exit_code == ExitCode.USAGE
        return
    path = tmp_path / "r.yaml"
    path.write_text("kind: RunRecord\n")
    path.chmod(0)
    with pytest.raises(DocumentError) as caught:
        load_document(path)
    assert caught.value.diagnostics[0].code == "unreadable"
