"""Benchmark helpers: timing with repeats, and a results table appended to bench-output/."""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Callable

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench-output")


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
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "results.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row))
    return row
