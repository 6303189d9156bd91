"""The Spark physical plans pydelta and delta-spark execute for the same DML and DV scan.

    python -m benchmarks.vs_delta_spark.plans [--rows 10000000] [workload ...]

The timing table says how long each engine takes, not why. Here the same workers as `run.py`
(same pyspark, same settings, plus the Spark UI: BENCH_UI=1) run each workload once as a
warm-up and once more while the worker lists, from the UI's REST API, every SQL execution and
job of the timed part with its physical plan. Written to bench-output/plans/: the plans
(<workload>-<engine>.txt) and summary.md, per engine the executions, jobs, time and the plan
nodes by kind (Parquet scans, shuffles, joins by strategy, ...). The UI only lists the plans:
the seconds here are one run with the UI on, not figures to quote against the timing table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections import Counter
from typing import Any

from benchmarks.common import OUT
from benchmarks.vs_delta_spark.run import Engine, _witness

PLANS = os.path.join(OUT, "plans")
DEFAULT = ["merge_upsert", "merge_upsert_dv", "update_1pct", "update_1pct_dv", "delete_01pct_dv", "scan_with_dvs"]
NODE = re.compile(r"^[\s:|+*-]*(.+?) \((\d+)\)(, Statistics\(.*\))?$")  # a tree line: "+- * Sort (7)"
PYTHON = ("BatchEvalPython", "ArrowEvalPython", "MapInArrow", "MapInPandas", "PythonMapInArrow",
          "FlatMapGroupsInPandas", "FlatMapGroupsInArrow", "FlatMapCoGroupsInPandas", "AggregateInPandas")
KINDS = ["Parquet scan", "Delta log scan", "other scan", "Exchange", "BroadcastExchange", "ReusedExchange",
         "BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin", "Sort",
         "HashAggregate", "ObjectHashAggregate", "SortAggregate", "Filter", "Project", "Python", "WriteFiles",
         "Generate", "Window", "Union", "Expand", "MapPartitions", "InMemoryRelation"]
WRAPPERS = {"AdaptiveSparkPlan", "ResultQueryStage", "ShuffleQueryStage", "BroadcastQueryStage",
            "TableCacheQueryStage", "ColumnarToRow", "InputAdapter", "WholeStageCodegen", "AQEShuffleRead"}


def nodes(plan: str) -> Counter[str]:
    """Plan nodes by name, from the tree(s) of a formatted plan: the main plan and any subquery,
    of an adaptive plan its final plan only. Scans of data files are "Parquet scan", scans of a
    table's log (its JSON, checkpoints or delta-spark's cached log state) "Delta log scan"."""
    locations = dict(re.findall(r"^\((\d+)\) .*\n(?:.+\n)*?Location: (.*)$", plan, re.MULTILINE))
    counts: Counter[str] = Counter()
    in_tree, skip_from = False, -1
    for line in plan.splitlines():
        if line.startswith(("== Physical Plan ==", "Subquery:")):
            in_tree = True
            continue
        if not line.strip():
            in_tree, skip_from = False, -1
            continue
        if not in_tree:
            continue
        column = len(line) - len(line.lstrip(" :|+-*"))
        if skip_from >= 0 and column >= skip_from:
            continue  # inside "== Initial Plan ==": the plan AQE replaced
        skip_from = line.index("==") if "== Initial Plan ==" in line else -1
        if match := NODE.match(line):
            name = match.group(1).split(" [")[0].strip()
            if "_delta_log" in name + locations.get(match.group(2), "") or "Delta Table State" in name:
                name = "Delta log scan"
            elif re.match(r"(Scan|FileScan|BatchScan) .*parquet", name, re.IGNORECASE):
                name = "Parquet scan"
            counts[name] += 1
    return counts


def _kind(name: str) -> str:
    """The summary's row for a node name: joins by strategy, scans and Python operators grouped."""
    if re.match(r"(Scan|FileScan|BatchScan) |LocalTableScan|InMemoryTableScan|Range$", name):
        return "other scan"
    if name.startswith(PYTHON):
        return "Python"
    return name.split()[0] if name.split()[0] in KINDS else name


def _capture(engine: Engine, workload: str) -> dict[str, Any]:
    assert engine.proc.stdin is not None
    engine.proc.stdin.write(json.dumps({"plans": workload}) + "\n")
    engine.proc.stdin.flush()
    reply: dict[str, Any] = json.loads(engine._readline())
    if "error" in reply:
        raise RuntimeError(f"{engine.name} {workload}: {reply['error']}\n{reply.get('traceback', '')}")
    return reply


def _write_plans(path: str, reply: dict[str, Any]) -> None:
    with open(path, "w") as f:
        f.write(f"timed part {reply['seconds']:.3f} s, {len(reply['executions'])} SQL executions, "
                f"{len(reply['jobs'])} jobs {reply['jobs']}\n\n")
        for e in reply["executions"]:
            f.write(f"===== execution {e['id']} (root {e['root']}), {e['status']}, {e['duration_ms']} ms, "
                    f"jobs {e['jobs']}: {e['description']}\n")
            f.writelines(f"scan metrics: {scan}\n" for scan in e["scans"])
            f.write(f"{e['plan']}\n")


def _counts(counts: Counter[str]) -> str:
    """"Project 3, Exchange 1, ...", the AQE and codegen wrappers left out."""
    shown = [(k, n) for k, n in counts.items() if k not in WRAPPERS]
    return ", ".join(f"{k} {n}" for k, n in sorted(shown, key=lambda kv: (-kv[1], kv[0])))


def _parquet_read(execution: dict[str, Any]) -> tuple[int, int]:
    """Files and rows the Parquet scans of an execution read (its UI metrics; a checkpoint's
    Parquet would count too: the UI's node names carry no path)."""
    scans = [s for s in execution["scans"] if s["node"].lower().startswith("scan parquet")]
    return (sum(int(s.get("number of files read", "0").replace(",", "")) for s in scans),
            sum(int(s.get("number of output rows", "0").replace(",", "")) for s in scans))


def _section(workload: str, replies: dict[str, dict[str, Any]]) -> list[str]:
    engines = list(replies)
    per_exec = {name: [nodes(e["plan"]) for e in r["executions"]] for name, r in replies.items()}
    total = {name: Counter({kind: 0 for kind in KINDS}) for name in engines}
    for name, executions in per_exec.items():
        for counts in executions:
            for node, n in counts.items():
                total[name][_kind(node)] += n
    same = len({json.dumps(r["check"]) for r in replies.values()}) == 1
    lines = [f"## {workload}", "", f"Same table on both engines: {'yes' if same else 'NO'}.", "",
             "| | " + " | ".join(engines) + " |", "|---|" + "---|" * len(engines)]

    def row(label: str, values: list[Any]) -> None:
        lines.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")

    row("timed part, this run (UI on)", [f"{replies[n]['seconds']:.3f} s" for n in engines])
    row("SQL executions (nested in another)",
        [f"{len(r['executions'])} ({sum(e['root'] != e['id'] for e in r['executions'])})" for r in replies.values()])
    row("Spark jobs (outside any SQL execution)",
        [f"{len(r['jobs'])} ({len(set(r['jobs']) - {j for e in r['executions'] for j in e['jobs']})})"
         for r in replies.values()])
    row("execution time, top-level executions", [
        f"{sum(e['duration_ms'] for e in r['executions'] if e['root'] == e['id']) / 1000:.3f} s"
        for r in replies.values()])
    row("**Parquet scans** (of data files)", [f"**{total[n]['Parquet scan']}**" for n in engines])
    read = {n: [_parquet_read(e) for e in replies[n]["executions"]] for n in engines}
    row("Parquet files read, rows read", [f"{sum(f for f, _ in read[n])}, {sum(r for _, r in read[n]):,}"
                                          for n in engines])
    row("**shuffles (Exchange)**", [f"**{total[n]['Exchange']}**" for n in engines])
    for kind in KINDS[1:]:  # the rows some engine has
        if kind != "Exchange" and any(total[n][kind] for n in engines):
            row(kind, [total[n][kind] for n in engines])
    row("other nodes", [_counts(Counter({k: n for k, n in total[e].items() if k not in KINDS})) or "-"
                        for e in engines])
    for name in engines:
        lines += ["", f"{name}, per execution (id, ms, jobs: description; nodes):", ""]
        for e, counts, (files, rows) in zip(replies[name]["executions"], per_exec[name], read[name], strict=True):
            nested = "" if e["root"] == e["id"] else f" in {e['root']}"
            description = " ".join(e["description"].split())[:100]
            reads = f" (Parquet: {files} files, {rows:,} rows)" if files else ""
            lines.append(f"- {e['id']}{nested}, {e['duration_ms']} ms, {len(e['jobs'])} jobs: `{description}`; "
                         f"{_counts(counts) or 'no plan nodes'}{reads}")
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--pydelta-python", default=os.path.expanduser("~/.cache/pydelta/pyspark-4.2/bin/python"))
    ap.add_argument("workloads", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    jars, witness_python = _witness()
    scratch = tempfile.mkdtemp(prefix="pydelta-vs-delta-spark-plans-")
    os.environ["BENCH_UI"] = "1"  # the workers' Spark UI, for its REST API
    os.makedirs(PLANS, exist_ok=True)
    engines = [Engine("pydelta", args.pydelta_python, scratch, None, args.rows),
               Engine("delta-spark", witness_python, scratch, jars, args.rows)]
    assert engines[0].pyspark == engines[1].pyspark, "both engines must run the same Spark"
    print(f"pyspark {engines[0].pyspark}, {args.rows} rows; logs in {scratch}", flush=True)
    summary = [f"# Physical plans, pydelta and delta-spark (pyspark {engines[0].pyspark}, {args.rows} rows)", "",
               "One run per engine after a warm-up, the Spark UI on; nodes counted in the final (adaptive) plans",
               "of every SQL execution of the timed part. Plans: `<workload>-<engine>.txt`.", ""]
    try:
        for workload in args.workloads:
            replies: dict[str, dict[str, Any]] = {}
            for engine in engines:
                engine.run(workload)  # warm-up (and builds the tables the workload copies)
                replies[engine.name] = _capture(engine, workload)
                _write_plans(os.path.join(PLANS, f"{workload}-{engine.name}.txt"), replies[engine.name])
                print(f"{workload} {engine.name}: {replies[engine.name]['seconds']:.3f} s, "
                      f"{len(replies[engine.name]['executions'])} SQL executions", flush=True)
            summary += _section(workload, replies)
            with open(os.path.join(PLANS, "summary.md"), "w") as f:  # after every workload: a partial run counts
                f.write("\n".join(summary))
    finally:
        for engine in engines:
            engine.stop()
    print(f"wrote {PLANS}/summary.md", flush=True)


if __name__ == "__main__":
    main()
