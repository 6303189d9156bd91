"""pydelta against delta-spark on the same Spark, same machine, same generated data (issue 26)."""
