"""ALTER TABLE ... CLUSTER BY (cols) | NONE: change a table's clustering columns (rules in
pydelta.protocol.clustering). Metadata only: files are reclustered by later OPTIMIZE runs."""

from __future__ import annotations

from typing import Any

from pydelta.protocol import clustering
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn.commit_info import Operation


def alter_cluster_by(table: Any, columns: list[str]) -> int | None:
    """Set the clustering columns (an unpartitioned table becomes clustered); returns the version."""
    from pydelta.spark.base.transactions import open_transaction

    snapshot = table.snapshot()
    old = clustering.columns_of(snapshot.domain_metadata)
    if old is None and not columns:
        return None  # CLUSTER BY NONE on a table that was never clustered: nothing to record
    physical = clustering.resolve(snapshot.schema, snapshot.partition_columns, snapshot.configuration, columns)
    txn = open_transaction(table._spark, snapshot)
    if clustering.FEATURE not in pu.all_features(snapshot.protocol):
        txn.update_protocol(
            pu.merge(snapshot.protocol, pu.features_protocol(1, {clustering.FEATURE, "domainMetadata"})))
    txn.add_domain_metadata(clustering.DOMAIN, clustering.domain_configuration(physical))
    before = clustering.logical_names(snapshot.schema, snapshot.configuration, old or [])
    operation = Operation("CLUSTER BY", {"oldClusteringColumns": ",".join(before),
                                         "newClusteringColumns": ",".join(columns)})
    return txn.commit([], operation)
