"""UniForm: Iceberg metadata beside a Delta table, so Iceberg engines read it too.

A floor of its own between the log core and transactions (protocol < log < uniform < txn):
it reads the Delta log and writes Iceberg metadata files with pyiceberg's writers, and the
transaction calls it after a commit on a table whose `delta.universalFormat.enabledFormats`
names `iceberg`. Nothing here imports Spark.

- `iceberg_schema`: the Delta schema, partitioning and file statistics in Iceberg's terms.
- `storage_io`: pyiceberg's FileIO over pydelta's storage, so the metadata goes where the log goes.
- `iceberg_converter`: the conversion itself, incremental from the last converted Delta version.
"""
