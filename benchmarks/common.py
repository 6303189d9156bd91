"""Benchmark helpers: timing with repeats, and a results table appended to bench-output/."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench-output")
RESULTS = os.path.join(OUT, "results.jsonl")


def timed(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """Median wall time in seconds of `fn` over `repeats` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def report(name: str, ours: float, reference: float, reference_name: str, **extra: object) -> dict:
    row = {
        "benchmark": name,
        "pydelta_s": round(ours, 4),
        f"{reference_name}_s": round(reference, 4),
        "ratio": round(ours / reference, 3) if reference else None,
        **extra,
    }
    return record(row)


def record(row: dict) -> dict:
    """Append one result row to bench-output/results.jsonl and print it."""
    os.makedirs(OUT, exist_ok=True)
    with open(RESULTS, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    return row


def print_table(rows: list[dict]) -> None:
    """The rows as one aligned text table: benchmark, pydelta, reference, ratio, the rest."""
    lines = [("benchmark", "pydelta", "reference", "ratio", "details")]
    for row in rows:
        ref = next((k for k in row if k.endswith("_s") and k != "pydelta_s"), None)
        rest = {k: v for k, v in row.items() if k not in ("benchmark", "pydelta_s", "ratio", ref)}
        lines.append((
            str(row.get("benchmark", "?")),
            f"{row['pydelta_s']} s" if "pydelta_s" in row else "-",
            f"{ref[:-2]} {row[ref]} s" if ref else "-",
            str(row.get("ratio", "-")),
            ", ".join(f"{k}={v}" for k, v in rest.items()),
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line[:4], widths, strict=True)) + "  " + line[4])
