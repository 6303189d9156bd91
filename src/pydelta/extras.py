"""The optional dependencies behind pip extras, imported on first use with a clear error.

`pip install pydelta-spark` is the log core (pyarrow, no JVM). Object stores (obstore), the
PostgreSQL commit owner (psycopg) and Spark (pyspark) come with the extras
`object-store`, `postgres` and `spark`; a missing one is named with the command that adds it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pydelta.errors import DeltaMissingDependencyError


def import_extra(module: str, extra: str, feature: str) -> ModuleType:
    """`import module`, or DeltaMissingDependencyError naming `pip install 'pydelta-spark[extra]'`."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if e.name is not None and module.split(".")[0] != e.name.split(".")[0]:
            raise  # the package is there but broken: its own error says more
        raise DeltaMissingDependencyError(
            f"{feature} needs the Python package {module.split('.')[0]!r}: "
            f"pip install 'pydelta-spark[{extra}]'") from None
