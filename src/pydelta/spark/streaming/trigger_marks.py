"""How a Delta streaming source on PySpark 4.0/4.1 learns that its query runs Trigger.Once or
Trigger.AvailableNow.

Before PySpark 4.2 Spark tells a Python streaming source neither its read limit nor its trigger,
so the source paces maxFilesPerTrigger / maxBytesPerTrigger itself (source_paced.py). Under Once
and AvailableNow Spark asks such a source for one end and runs one batch to it: a paced answer
would end the run after one paced batch. delta-spark takes everything there (Once ignores the rate
limits; AvailableNow drains everything, in paced batches).

So on those versions `DataStreamReader.load` of a Delta table tags the source with a token (a
reader option), and `DataStreamWriter.start` / `toTable` on a classic session, which know the
trigger, leave a marker file named by the token in the driver's temporary directory (Spark runs
the source in a Python process on the driver's machine). A source whose marker is there takes all
there is in its one batch. Any other trigger removes the marker. A Spark Connect client cannot
reach the server's files: there the combination is refused with the PySpark it needs.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from pydelta.errors import DeltaNotImplementedError
from pydelta.spark.base.option_keys import option_value
from pydelta.spark.base.pyspark_compat import pyspark_before

# The reader option carrying a Delta source's token.
TOKEN_OPTION = "pydelta.sourceToken"
# The triggers that run to the end of what is there (PySpark's keyword names).
RUN_TO_END = ("once", "availableNow")
_RATE_LIMITS = ("maxfilespertrigger", "maxbytespertrigger")


def needed() -> bool:
    """Whether this PySpark lacks admission control for Python streaming sources."""
    return pyspark_before(4, 2)


def new_token() -> str:
    return uuid.uuid4().hex


def trigger_kind(kwargs: Mapping[str, Any]) -> str:
    """The trigger `DataStreamWriter.trigger(**kwargs)` sets: "once", "availableNow" or "other"."""
    return next((name for name in RUN_TO_END if kwargs.get(name)), "other")


def mark(df: Any, trigger: str | None) -> None:
    """Before a classic query over `df` starts: tell its Delta sources whether `trigger` runs to the end."""
    if not needed():
        return
    for token in _tokens(df):
        marker = _marker(token)
        if trigger in RUN_TO_END:
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            with open(marker, "w") as f:
                f.write(str(trigger))
        elif os.path.exists(marker):
            os.remove(marker)


def runs_to_end(options: Mapping[str, Any]) -> bool:
    """In the source's process: whether the query reading it runs Once or AvailableNow."""
    token = option_value(options, TOKEN_OPTION)
    return token is not None and os.path.exists(_marker(str(token)))


def refuse_over_connect(plan: Any, trigger: str | None) -> None:
    """A Connect query with `trigger` over rate-limited Delta sources, on PySpark < 4.2: refused."""
    if not needed() or trigger not in RUN_TO_END or not reads_rate_limited_delta(plan):
        return
    import pyspark

    raise DeltaNotImplementedError(
        f"Trigger.{'Once' if trigger == 'once' else 'AvailableNow'} over a Delta streaming source with "
        "maxFilesPerTrigger or maxBytesPerTrigger needs PySpark 4.2 or newer over Spark Connect (this is PySpark "
        f"{pyspark.__version__}): drop the rate limit (the run then reads everything in one batch) or use a "
        "processingTime trigger")


def _marker(token: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"pydelta-stream-triggers-{os.getuid()}", token)


def _tokens(df: Any) -> list[str]:
    """The tokens of the Delta sources in a classic streaming DataFrame's plan."""
    leaves = df._jdf.queryExecution().analyzed().collectLeaves().iterator()
    tokens = []
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.getClass().getSimpleName() == "StreamingRelationV2":
            token = leaf.extraOptions().get(TOKEN_OPTION)
            if token is not None:
                tokens.append(str(token))
    return tokens


def reads_rate_limited_delta(plan: Any, seen: set[int] | None = None) -> bool:
    """Whether a Spark Connect client plan reads a Delta stream with a rate limit."""
    seen = set() if seen is None else seen
    if id(plan) in seen:
        return False
    seen.add(id(plan))
    if type(plan).__name__ == "DataSource" and str(getattr(plan, "_format", "") or "").lower() == "delta":
        options = getattr(plan, "_options", None) or {}
        if any(str(k).lower() in _RATE_LIMITS for k in options):
            return True
    from pyspark.sql.connect.plan import LogicalPlan

    children = [v for v in vars(plan).values() if isinstance(v, LogicalPlan)]
    children += [c for v in vars(plan).values() if isinstance(v, (list, tuple))
                 for c in v if isinstance(c, LogicalPlan)]
    return any(reads_rate_limited_delta(c, seen) for c in children)
