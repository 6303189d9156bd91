"""Every public method of delta-spark's `python/delta/tables.py`, with its parameters, exists in pydelta.

The expected surface below was read from delta-spark's source (master, 2026): class,
method, whether it is a classmethod, and the parameters in order ("name=" has a default,
"*name" collects positional arguments). A user changing `from delta.tables import ...` to
`from pydelta.tables import ...` calls these by position and by keyword, so names, order
and defaults must match; a method pydelta lacks fails here.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from pydelta.spark.dml.merge import DeltaMergeBuilder
from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder
from pydelta.tables import DeltaTable, DeltaTableBuilder, IdentityGenerator

DELTA_SPARK_SURFACE: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "DeltaTable": {
        "toDF": ("method", ()),
        "alias": ("method", ("aliasName",)),
        "generate": ("method", ("mode",)),
        "delete": ("method", ("condition=",)),
        "update": ("method", ("condition=", "set=")),
        "merge": ("method", ("source", "condition")),
        "vacuum": ("method", ("retentionHours=",)),
        "history": ("method", ("limit=",)),
        "detail": ("method", ()),
        "convertToDelta": ("classmethod", ("sparkSession", "identifier", "partitionSchema=")),
        "forPath": ("classmethod", ("sparkSession", "path", "hadoopConf=")),
        "forName": ("classmethod", ("sparkSession", "tableOrViewName")),
        "create": ("classmethod", ("sparkSession=",)),
        "createIfNotExists": ("classmethod", ("sparkSession=",)),
        "replace": ("classmethod", ("sparkSession=",)),
        "createOrReplace": ("classmethod", ("sparkSession=",)),
        "isDeltaTable": ("classmethod", ("sparkSession", "identifier")),
        "upgradeTableProtocol": ("method", ("readerVersion", "writerVersion")),
        "addFeatureSupport": ("method", ("featureName",)),
        "dropFeatureSupport": ("method", ("featureName", "truncateHistory=")),
        "restoreToVersion": ("method", ("version",)),
        "restoreToTimestamp": ("method", ("timestamp",)),
        "optimize": ("method", ()),
        "clone": ("method", ("target", "isShallow=", "replace=", "properties=")),
        "cloneAtVersion": ("method", ("version", "target", "isShallow=", "replace=", "properties=")),
        "cloneAtTimestamp": ("method", ("timestamp", "target", "isShallow=", "replace=", "properties=")),
    },
    "DeltaMergeBuilder": {
        "whenMatchedUpdate": ("method", ("condition=", "set=")),
        "whenMatchedUpdateAll": ("method", ("condition=",)),
        "whenMatchedDelete": ("method", ("condition=",)),
        "whenNotMatchedInsert": ("method", ("condition=", "values=")),
        "whenNotMatchedInsertAll": ("method", ("condition=",)),
        "whenNotMatchedBySourceUpdate": ("method", ("condition=", "set=")),
        "whenNotMatchedBySourceDelete": ("method", ("condition=",)),
        "withSchemaEvolution": ("method", ()),
        "execute": ("method", ()),
    },
    "DeltaTableBuilder": {
        "tableName": ("method", ("identifier",)),
        "location": ("method", ("location",)),
        "comment": ("method", ("comment",)),
        "addColumn": ("method", ("colName", "dataType", "nullable=", "generatedAlwaysAs=", "generatedByDefaultAs=",
                                 "comment=")),
        "addColumns": ("method", ("cols",)),
        "partitionedBy": ("method", ("*cols",)),
        "clusterBy": ("method", ("*cols",)),
        "property": ("method", ("key", "value")),
        "execute": ("method", ()),
    },
    "DeltaOptimizeBuilder": {
        "where": ("method", ("partitionFilter",)),
        "executeCompaction": ("method", ()),
        "executeZOrderBy": ("method", ("*cols",)),
    },
}

CLASSES = {
    "DeltaTable": DeltaTable,
    "DeltaMergeBuilder": DeltaMergeBuilder,
    "DeltaTableBuilder": DeltaTableBuilder,
    "DeltaOptimizeBuilder": DeltaOptimizeBuilder,
}


def _shape(fn: object) -> tuple[str, ...]:
    """The parameters of `fn` in the surface notation (self/cls left out)."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            continue
        else:
            out.append(p.name + ("=" if p.default is not p.empty else ""))
    return tuple(out)


CASES = [(c, m, kind, params) for c, methods in DELTA_SPARK_SURFACE.items() for m, (kind, params) in methods.items()]


@pytest.mark.parametrize(("cls_name", "method", "kind", "params"), CASES, ids=[f"{c}.{m}" for c, m, _, _ in CASES])
def test_method_matches_delta_spark(cls_name: str, method: str, kind: str, params: tuple[str, ...]) -> None:
    cls = CLASSES[cls_name]
    assert hasattr(cls, method), f"pydelta's {cls_name} lacks delta-spark's {method}"
    raw = inspect.getattr_static(cls, method)
    assert isinstance(raw, classmethod) == (kind == "classmethod"), f"{cls_name}.{method} should be a {kind}"
    bound = getattr(cls, method)
    shape = _shape(bound)
    if kind == "method":
        assert shape[:1] == ("self",), f"{cls_name}.{method} is not an instance method"
        shape = shape[1:]
    assert shape == params, f"{cls_name}.{method}{shape} differs from delta-spark's {params}"


def test_no_public_method_is_missing_from_the_list() -> None:
    """The list above is delta-spark's whole public surface; pydelta may add methods, not lose them."""
    for cls_name, methods in DELTA_SPARK_SURFACE.items():
        missing = [m for m in methods if not callable(getattr(CLASSES[cls_name], m, None))]
        assert not missing, f"{cls_name} lacks {missing}"


def test_identity_generator_is_delta_sparks_dataclass() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(IdentityGenerator)}
    assert fields == {"start": 1, "step": 1}
    assert IdentityGenerator(5, -2) == IdentityGenerator(start=5, step=-2)
