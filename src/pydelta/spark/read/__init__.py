"""Reading Delta tables with Spark: scans of a snapshot's files (deletion vectors, column
mapping, row tracking), plan-level file pruning, reader options, time travel, change data feed."""
