"""The JVM-free command line, run as a subprocess the way a user runs it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pydelta.cli import COMMANDS
from tests.golden_paths import DELTA_RS as DRS
from tests.golden_paths import DELTA_SPARK as DS

CLI = [sys.executable, "-m", "pydelta.cli"]
WIDE = {**os.environ, "COLUMNS": "200"}  # keep argparse from wrapping help lines


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=WIDE)


def write_table(root: Path, num_files: int) -> Path:
    """A minimal table written by hand: protocol, metaData and `num_files` add actions in commit 0."""
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "cli-test", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                      "createdTime": 0}},
        *({"add": {"path": f"part-{i:05d}-cli-test.snappy.parquet", "partitionValues": {}, "size": 1000 + i,
                   "modificationTime": 0, "dataChange": True, "stats": json.dumps({"numRecords": 1})}}
          for i in range(num_files)),
    ]
    log = root / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return root


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


def test_negative_limit_is_rejected():
    out = run("history", str(DS / "checkpoint" / "delta"), "--limit", "-1")
    assert out.returncode == 2 and "--limit" in out.stderr and "Traceback" not in out.stderr


def test_version_and_timestamp_are_exclusive():
    out = run("describe", str(DS / "checkpoint" / "delta"), "--version", "1", "--timestamp", "2024-01-01")
    assert out.returncode == 2 and "not allowed with" in out.stderr


def test_errors_are_clear():
    out = run("describe", str(DS / "versions-not-contiguous" / "delta"))
    assert out.returncode == 2 and "LogNotContiguousError" in out.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_missing_path_is_one_line_error(tmp_path, command):
    out = run(command, str(tmp_path / "no-such-table"))
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "no-such-table" in lines[0], out.stderr


def test_not_a_delta_table_is_one_line_error(tmp_path):
    out = run("files", str(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: DeltaTableNotFoundError"), out.stderr


def test_help_lists_every_subcommand():
    out = run("--help")
    assert out.returncode == 0, out.stderr
    assert "no Spark, no JVM" in out.stdout
    for name, (_, short, _) in COMMANDS.items():
        assert short, name
        assert any(line.split()[:1] == [name] and short in line for line in out.stdout.splitlines()), (name, out.stdout)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_subcommand_help_has_description(command):
    out = run(command, "--help")
    assert out.returncode == 0, out.stderr
    assert " ".join(COMMANDS[command][2].split()) in " ".join(out.stdout.split())
    assert "table root directory" in out.stdout


def test_history_help_explains_options():
    out = run("history", "--help")
    assert out.returncode == 0, out.stderr
    assert "--limit N" in out.stdout and "show at most N commits" in out.stdout


def test_checkpoint_help_explains_options():
    out = run("checkpoint", "--help")
    assert "--parts N" in out.stdout and "multi-part checkpoint" in out.stdout
    assert "--v2" in out.stdout and "v2Checkpoint" in out.stdout


def test_hand_written_table(tmp_path):
    table = write_table(tmp_path / "t", 5)
    out = run("files", str(table))
    assert out.returncode == 0, out.stderr
    assert [f["size"] for f in json.loads(out.stdout)] == [1000, 1001, 1002, 1003, 1004]


def test_pipe_into_head_is_quiet(tmp_path):
    table = write_table(tmp_path / "t", 3000)
    assert len(run("files", str(table)).stdout) > 256 * 1024  # far more than a pipe buffer holds
    cli = shlex.join([*CLI, "files", str(table)])
    out = subprocess.run(["bash", "-c", f"{cli} | head -c 10; exit ${{PIPESTATUS[0]}}"],
                         capture_output=True, text=True, env=WIDE)
    assert out.stdout == "[\n  {\n    "[:10]
    assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, out.stderr
    assert out.stderr == ""
    assert out.returncode == 1  # the documented BrokenPipeError idiom exits 1


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


def _deltalake_count(path: Path) -> int:
    """Live rows as delta-rs counts them (its SQL engine applies deletion vectors)."""
    from deltalake import DeltaTable, QueryBuilder

    batch = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT count(*) AS n FROM t").read_all()
    return int(batch.to_pydict()["n"][0]) if hasattr(batch, "to_pydict") else int(batch["n"][0].as_py())


def test_row_counts_apply_deletion_vectors():
    table = DRS / "table-with-dv-small"
    live = _deltalake_count(table)
    info = json.loads(run("describe", str(table)).stdout)
    assert info["numRecords"] == live == 8
    assert info["numDeletedRecords"] == 2 and info["numFilesWithDeletionVectors"] == 1
    (f,) = json.loads(run("files", str(table)).stdout)
    assert (f["num_records"], f["deleted_records"], f["live_records"]) == (10, 2, live)


def test_describe_shows_protocol_and_features():
    info = json.loads(run("describe", str(DRS / "table-with-dv-small")).stdout)
    log = (DRS / "table-with-dv-small" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    protocol = next(json.loads(line)["protocol"] for line in log if '"protocol"' in line)
    assert info["protocol"]["minReaderVersion"] == protocol["minReaderVersion"]
    assert info["tableFeatures"] == sorted(set(protocol["readerFeatures"]) | set(protocol["writerFeatures"]))
    # legacy protocol versions imply their features
    legacy = json.loads(run("describe", str(DS / "checkpoint" / "delta")).stdout)
    assert legacy["protocol"]["minWriterVersion"] >= 2 and "appendOnly" in legacy["tableFeatures"]


def _tty_run(*args: str) -> str:
    """Run the CLI with stdout on a pseudo-terminal, as a person at a shell does."""
    import pty

    controller, worker = pty.openpty()
    proc = subprocess.Popen([*CLI, *args], stdout=worker, stderr=subprocess.PIPE, env=WIDE)
    os.close(worker)
    chunks = []
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(controller)
    assert proc.returncode == 0, proc.stderr.read()
    return b"".join(chunks).decode()


def test_tables_on_a_terminal_json_when_piped():
    table = str(DRS / "table-with-dv-small")
    screen = _tty_run("describe", table)
    assert "table features" in screen and "deletionVectors" in screen and "8 live" in screen
    with pytest.raises(json.JSONDecodeError):
        json.loads(screen)
    assert json.loads(_tty_run("describe", table, "--json"))["numRecords"] == 8
    files = run("files", table, "--table").stdout
    assert "deleted (DV)" in files and "part-00000-fae5310a" in files


def test_vacuum_dry_run_lists_untracked_files(tmp_path):
    table = write_table(tmp_path / "t", 2)
    old, new = table / "orphan-old.parquet", table / "orphan-new.parquet"
    for p in (old, new):
        p.write_bytes(b"x" * 10)
    week_ago = os.stat(old).st_mtime - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    out = run("vacuum", str(table), "--dry-run")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert [f["path"] for f in plan["files"]] == [str(old)] and plan["sizeOfDataToDelete"] == 10
    assert old.exists()  # a dry run deletes nothing
    short = run("vacuum", str(table), "--dry-run", "--retention-hours", "0")
    assert short.returncode == 2 and "retention" in short.stderr.lower()
    both = json.loads(run("vacuum", str(table), "--dry-run", "--retention-hours", "0", "--no-retention-check").stdout)
    assert sorted(f["path"] for f in both["files"]) == sorted([str(old), str(new)])
    refused = run("vacuum", str(table))
    assert refused.returncode == 2 and "--dry-run" in refused.stderr and old.exists()


def test_the_command_never_imports_pandas(tmp_path):
    """pyarrow would import pandas (0.2 s) for the first array built from Python objects; the CLI
    tells it pandas is missing, and still answers (the commit is parsed into Arrow arrays)."""
    table = write_table(tmp_path / "t", 3)
    program = ("import sys; from pydelta.cli import console; rc = console(); "
               "print('loaded:', sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules), file=sys.stderr); "
               "sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", program, "describe", str(table), "--json"],
                         capture_output=True, text=True, env=WIDE)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["numFiles"] == 3
    assert "loaded: ['pyarrow']" in out.stderr
