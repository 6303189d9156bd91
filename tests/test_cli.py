"""The JVM-free command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

DS = Path(__file__).resolve().parents[1].parent / "shared" / "golden" / "delta-spark"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pydelta.cli", *args], capture_output=True, text=True)


def test_describe_and_files():
    out = run("describe", str(DS / "checkpoint" / "delta"))
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["version"] == 14 and info["numFiles"] == 1
    files = json.loads(run("files", str(DS / "basic-with-inserts-updates" / "delta")).stdout)
    assert len(files) == 2 and all(f["num_records"] == 50 for f in files)


def test_history_limit():
    hist = json.loads(run("history", str(DS / "checkpoint" / "delta"), "--limit", "3").stdout)
    assert [h["version"] for h in hist] == [14, 13, 12]


def test_errors_are_clear():
    out = run("describe", str(DS / "versions-not-contiguous" / "delta"))
    assert out.returncode == 2 and "LogNotContiguousError" in out.stderr


def test_checkpoint_command(tmp_path):
    table = tmp_path / "t"
    shutil.copytree(DS / "basic-with-inserts-updates" / "delta", table)
    assert run("checkpoint", str(table)).returncode == 0
    assert list((table / "_delta_log").glob("*.checkpoint.parquet"))
    assert json.loads(run("describe", str(table)).stdout)["numFiles"] == 2


def test_multipart_checkpoint_on_request(tmp_path):
    table = tmp_path / "t"
    shutil.copytree(DS / "basic-with-inserts-updates" / "delta", table)
    assert run("checkpoint", str(table), "--parts", "2").returncode == 0
    parts = sorted((table / "_delta_log").glob("*.checkpoint.*.*.parquet"))
    assert len(parts) == 2
    last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
    assert last["parts"] == 2
    assert json.loads(run("describe", str(table)).stdout)["numFiles"] == 2
