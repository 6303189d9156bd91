"""Writing with Spark: DataFrames into a table's files and one commit, the write options,
conforming data to the table schema, constraints, optimized writes."""
