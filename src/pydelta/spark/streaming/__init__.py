"""Structured Streaming with Delta tables: the sink (`sink.py`) and the source (`source.py`).

Nothing is imported here eagerly; `pydelta.spark.session` installs the hooks.
"""
