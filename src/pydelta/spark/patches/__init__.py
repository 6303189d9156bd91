"""What pydelta installs into PySpark: the DataFrameReader / DataFrameWriter /
DataFrameWriterV2 / SparkSession.table hooks that send format("delta") to pydelta."""
