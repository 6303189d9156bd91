"""Unity Catalog catalogs of a Spark session, configured as delta-spark users configure them:
`spark.sql.catalog.<name>.uri` (the server) and `spark.sql.catalog.<name>.token` (its bearer token),
the catalog's name in Spark being its name in Unity Catalog. delta-spark needs the unitycatalog-spark
jar for these names; pydelta resolves them itself, so `<name>.schema.table` reaches the table through
the Delta REST API and nothing is loaded on the JVM.
"""

from __future__ import annotations

import threading

from pydelta.errors import DeltaTableNotFoundError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_value
from pydelta.txn.unity_catalog import UnityCatalog, UnityCatalogTable

_CLIENTS: dict[tuple[str, str | None], UnityCatalog] = {}
_LOCK = threading.Lock()


def unity_catalog(spark: SparkSession, catalog_name: str) -> UnityCatalog | None:
    """The Unity Catalog server the session names `catalog_name` for, or None when it names none."""
    if not catalog_name or catalog_name.lower() == "spark_catalog":
        return None
    uri = conf_value(spark, f"spark.sql.catalog.{catalog_name}.uri")
    if not uri:
        return None
    token = conf_value(spark, f"spark.sql.catalog.{catalog_name}.token") or None
    with _LOCK:  # one HTTP client per server and token, shared by the sessions that name it
        client = _CLIENTS.get((uri, token))
        if client is None:
            client = _CLIENTS[(uri, token)] = UnityCatalog(uri, token)
        return client


def unity_catalog_of(spark: SparkSession, name: str | None) -> UnityCatalog | None:
    """The Unity Catalog server holding the table `name` (`catalog.schema.table`), or None."""
    if name is None:
        return None
    parts = [p.strip("`") for p in name.split(".")]
    return unity_catalog(spark, parts[0]) if len(parts) == 3 else None


def unity_table(catalog: UnityCatalog, parts: list[str] | tuple[str, ...]) -> UnityCatalogTable | None:
    """The table `catalog.schema.table` in `catalog` (bound for this process), or None when it does
    not exist."""
    try:
        return catalog.table(".".join("`" + p.replace("`", "") + "`" for p in parts))
    except DeltaTableNotFoundError:
        return None
