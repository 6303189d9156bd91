"""Where the golden tables (written by delta-spark and delta-rs, never by pydelta) live.

They ship inside the repository under tests/data/golden (see the README there), so a
fresh clone tests itself with nothing beside it. PYDELTA_GOLDEN may point elsewhere
(a directory with the same delta-spark/ and delta-rs/ layout).
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(os.environ.get("PYDELTA_GOLDEN", Path(__file__).resolve().parent / "data" / "golden")).resolve()
DELTA_SPARK = GOLDEN / "delta-spark"
DELTA_RS = GOLDEN / "delta-rs"
