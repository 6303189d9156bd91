"""Delta SQL through `spark.sql`: pydelta's statement router (see router.py)."""
