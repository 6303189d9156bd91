"""The DeltaTable API's clone and table builders, DESCRIBE and SHOW TBLPROPERTIES on a Spark
Connect session: the classic suite's tests verbatim (the `spark` fixture here is the Connect
session)."""

from __future__ import annotations

from tests.spark.test_api_parity import test_builder_details_and_errors  # noqa: F401
from tests.spark.test_catalog import (  # noqa: F401
    test_builder_managed_table_lives_in_warehouse_and_drop_removes_it,
    test_builder_name_with_location_resolves_by_name,
    test_failed_create_leaves_no_catalog_entry,
    test_list_tables_reports_type_and_comment_of_delta_tables,
)
from tests.spark.test_clone import (  # noqa: F401
    source,
    test_argument_checks,
    test_clone_at_timestamp,
    test_clone_keeps_deletion_vectors,
    test_clone_to_a_catalog_name,
    test_deep_clone_at_version_copies_data,
    test_replace_and_existing_target,
    test_shallow_clone_references_source_files,
)
from tests.spark.test_sql_describe import (  # noqa: F401
    db,
    test_describe_column,
    test_describe_column_mapped_table_shows_logical_names,
    test_describe_extended_external_table_and_path,
    test_describe_extended_managed_table,
    test_describe_lists_columns_then_partition_information,
    test_describe_reads_the_log_not_the_catalog_copy,
    test_other_tables_views_and_unknown_names_go_to_spark,
    test_path_without_a_delta_table,
    test_show_columns,
    test_show_create_table_external_recreates_at_a_new_location,
    test_show_create_table_managed_recreates_the_table,
    test_show_create_table_of_a_path,
    test_show_tblproperties,
    test_show_tblproperties_legacy_protocol_and_path,
)

# DESCRIBE [EXTENDED] (of a table or a column), SHOW COLUMNS / TBLPROPERTIES / PARTITIONS and SHOW
# CREATE TABLE are answered from the log over Connect too (sql/connect_describe.py).
from tests.spark.test_sql_parity import (  # noqa: F401
    partitioned,
    test_show_partitions,
    test_show_partitions_with_column_mapping,
)


def test_describe_of_anything_but_a_table_is_sparks(spark):
    assert {r[0] for r in spark.sql("DESCRIBE DATABASE default").collect()} >= {"Catalog Name", "Namespace Name"}
    assert any("abs" in r[0] for r in spark.sql("DESCRIBE FUNCTION abs").collect())
    assert [r.col_name for r in spark.sql("DESCRIBE QUERY SELECT 1 AS one").collect()] == ["one"]
