"""A client with only PySpark's thin Connect client (`pyspark-client`: no JVM, no jars, no
classic PySpark) and pydelta: it writes, reads with skipping, deletes and lists history on the
Connect server. The client venv is built once under ~/.cache/pydelta (outside the clone)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SPEC = os.environ.get("PYDELTA_CONNECT_CLIENT", "pyspark-client>=4.0,<4.4")

pytestmark = pytest.mark.spark


def _client_python() -> str:
    venv = Path(os.environ.get("PYDELTA_CACHE", Path.home() / ".cache" / "pydelta")) / "connect-client-venv"
    python = venv / "bin" / "python"
    stamp = venv / ".complete"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        # pydelta's own dependencies, without its `spark` extra (that is classic PySpark, jars and all).
        subprocess.run([str(python), "-m", "pip", "install", "-q", CLIENT_SPEC, "pandas<3", "pyarrow>=16,<30",
                        "pyroaring>=1.0,<2", "numpy>=1.26", "rich>=13,<15"], check=True)
        stamp.touch()
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
    return str(python)


SCRIPT = textwrap.dedent("""
    import json, os, sys
    import pyspark
    assert not os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "jars")), "a thin client has no jars"
    try:
        import pyspark.sql.classic  # noqa: F401
        raise SystemExit("classic PySpark is installed: not a thin client")
    except ImportError:
        pass
    import pydelta
    from pydelta import DeltaTable
    url, path = sys.argv[1], sys.argv[2]
    spark = pydelta.remote_session(url)
    spark.range(0, 40, 1, 4).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    t = spark.read.format("delta").load(path)
    odd = t.filter("p = 1")
    DeltaTable.forPath(spark, path).delete("id < 10")
    children = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            children.append(open(f"/proc/{pid}/cmdline").read().replace("\\0", " "))
    print(json.dumps({"pyspark": pyspark.__version__, "files": t._pydelta_files.num_rows,
                      "odd_files": odd._pydelta_files.num_rows, "odd_rows": odd.count(),
                      "after_delete": spark.read.format("delta").load(path).count(),
                      "history": [r.operation for r in DeltaTable.forPath(spark, path).history().collect()],
                      "java_children": [c for c in children if "java" in c]}))
""")


def test_pyspark_client_only(connect_server, tmp_path):
    import json

    python = _client_python()
    script = tmp_path / "client.py"
    script.write_text(SCRIPT)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home())}  # no JAVA_HOME, no SPARK_HOME
    out = subprocess.run([python, str(script), connect_server.url, str(tmp_path / "t")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["java_children"] == []
    assert result["odd_files"] * 2 == result["files"] and result["odd_rows"] == 20
    assert result["after_delete"] == 30
    assert result["history"] == ["DELETE", "WRITE"]
