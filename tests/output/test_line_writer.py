"""What `finish` prints with: a write per block of lines, and a stream whose encoding cannot
carry a character (PYTHONIOENCODING=ascii, an old LANG=C system) gets an escape in that
encoding: neither a traceback halfway through the report nor bytes of another encoding."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprogate.output.emit import LineWriter


def test_a_character_the_stream_cannot_encode_is_escaped() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    write = LineWriter(stream, block=2)
    write("café ✓")
    assert raw.getvalue() == b""  # held until a block is full
    write("plain")
    write("third")
    assert raw.getvalue() == b"caf\\xe9 \\u2713\nplain\n"
    write.flush()
    assert raw.getvalue() == b"caf\\xe9 \\u2713\nplain\nthird\n"


@pytest.mark.parametrize("encoding", ["ascii", "ascii:surrogateescape"])  # the second: LC_ALL=C without UTF-8 mode
def test_a_report_naming_a_non_ascii_file_prints_whole_on_an_ascii_stdout(project: Path, encoding: str) -> None:
    broken = project / "records" / "entraînement.yaml"
    broken.write_text((project / "records" / "drill.yaml").read_text().replace("level: statistical", "level: nearly"))
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    run = subprocess.run([sys.executable, "-m", "reprogate", "validate", "records"], cwd=project, env=env, capture_output=True, timeout=120)
    assert run.returncode == 1, run.stderr.decode()
    assert b"Traceback" not in run.stderr
    out = run.stdout.decode("ascii")
    assert "records/entra\\xeenement.yaml:" in out and "document(s) checked" in out.splitlines()[-1]


def reprogate(project: Path, *args: str, env: dict[str, str] | None = None, shell_suffix: str = "") -> subprocess.CompletedProcess[bytes]:
    command = " ".join([sys.executable, "-m", "reprogate", *args]) + shell_suffix
    return subprocess.run(["sh", "-c", command], cwd=project, env={**os.environ, **(env or {})}, capture_output=True, timeout=120)


def test_a_closed_stdout_prints_nothing_and_keeps_the_exit_code(project: Path) -> None:
    run = reprogate(project, "validate", "records/drill.yaml", shell_suffix=' >&- ; echo "code $?"')
    assert run.stdout.decode().strip() == "code 0" and b"Traceback" not in run.stderr
    (project / "records" / "drill.yaml").write_text("kind: RunRecord\napiVersion: reprogate/v1\n")
    run = reprogate(project, "validate", "records/drill.yaml", shell_suffix=' >&- 2>&- ; echo "code $?"')
    assert run.stdout.decode().strip() == "code 1"


def test_what_was_printed_before_the_step_outputs_failed_still_reaches_the_log(project: Path) -> None:
    run = reprogate(project, "validate", "records", "--format", "github", env={"GITHUB_OUTPUT": "/dev/full"})
    assert run.returncode == 3, run.stderr
    annotations = [line for line in run.stdout.decode().splitlines() if line.startswith("::warning ")]
    assert annotations and b"could not write the results: /dev/full: No space left on device" in run.stderr


def test_a_non_blocking_stdout_that_fills_is_waited_on_not_cut(project: Path) -> None:
    """A runner may hand over a pipe it set non-blocking; once the pipe's 64 KiB are full, a plain
    write would fail with EAGAIN and the rest of the report would be lost."""
    from support import record_copies

    many = record_copies(project, 600, invalid=set(range(0, 600, 2)))
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with subprocess.Popen([sys.executable, "-m", "reprogate", "validate", str(many)], cwd=project, stdout=write_end, stderr=subprocess.PIPE) as run:
        os.close(write_end)
        time.sleep(1.0)  # the reader starts late on purpose: the pipe fills first
        with os.fdopen(read_end, "rb") as reader:
            out = reader.read()
        stderr = run.stderr.read() if run.stderr else b""
        assert run.wait(timeout=120) == 1, stderr.decode()
    assert b"Traceback" not in stderr and len(out) > 128 * 1024
    lines = out.decode().splitlines()
    assert lines[-1].startswith("600 document(s) checked, 300 valid, 300 invalid")
    named = {line.split(":", 1)[0] for line in lines if line.startswith("many/run-")}
    assert named == {f"many/run-{i:03d}.yaml" for i in range(600)}, "every record's findings, none lost to a full pipe"
