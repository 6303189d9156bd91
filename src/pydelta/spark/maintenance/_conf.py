"""Moved to pydelta.spark.conf (kept while the remaining importers move)."""

from pydelta.spark.conf import conf_bool, conf_bytes, conf_value

__all__ = ["conf_bool", "conf_bytes", "conf_value"]
