"""Table definitions: CREATE/REPLACE (AS SELECT), ALTER TABLE (columns, properties, constraints,
column mapping), identity columns and column defaults."""
