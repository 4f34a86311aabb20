"""What `finish` prints with: a write per block of lines, and a stream whose encoding cannot
carry a character (PYTHONIOENCODING=ascii, an old LANG=C system) gets an escape in that
encoding: neither a traceback halfway through the report nor bytes of another encoding."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

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


def test_a_report_naming_a_non_ascii_file_prints_whole_on_an_ascii_stdout(project: Path) -> None:
    broken = project / "records" / "entraînement.yaml"
    broken.write_text((project / "records" / "drill.yaml").read_text().replace("level: statistical", "level: nearly"))
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    run = subprocess.run([sys.executable, "-m", "reprogate", "validate", "records"], cwd=project, env=env, capture_output=True, timeout=120)
    assert run.returncode == 1, run.stderr.decode()
    assert b"Traceback" not in run.stderr
    out = run.stdout.decode("ascii")
    assert "records/entra\\xeenement.yaml:" in out and "document(s) checked" in out.splitlines()[-1]
