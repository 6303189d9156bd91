"""The Spark layer's ground floor: what every room above needs and nothing of theirs.

JVM access and plan building (`jvm`, `jplan`), SQL tokens, session conf access, the error
boundary to PySpark's exceptions, the Hadoop file system bridge, the session catalog, and
how a transaction is opened from Spark. Nothing here imports read/, write/ or above.
"""
