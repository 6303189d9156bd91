"""The DeltaTable API and its builders (one front; sql/ is the other, and neither imports the other).

`pydelta.tables` re-exports these under delta-spark's names: `delta_table` (DeltaTable's
class methods and clone/convert), `table_operations` (what a table object does),
`table_builder` (DeltaTableBuilder and DeltaColumnBuilder's option checks).
"""
