# pydelta: `make demo` sets up from nothing and runs the end-to-end demo on local Spark;
# `make test` sets up from nothing and runs the whole test suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.pydelta-installed

.PHONY: setup demo dist lint typecheck docs test test-connect test-slow test-all test-fast test-versions test-witness witness s3a test-s3a bench bench-vs-delta-spark bench-snapshot-vs-deltalake bench-plans bench-connect java clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory java
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || [ -x "$$JAVA_HOME/bin/java" ] || { \
	  echo "pydelta needs Java 17 for Spark: install it (Debian/Ubuntu: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME" >&2; exit 1; }

demo: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pydelta.demo

# The sdist and the wheel of the distribution pydelta-spark, into dist/ (tests/test_wheel.py installs
# the wheel into a fresh venv).
dist: setup
	$(PY) -m build --outdir dist .

# The default suite leaves out the tests marked slow (multi-process, crash);
# .ci/run runs them too with `make test-slow`.
lint: setup
	$(PY) -m ruff check src tests benchmarks

# mypy as pyproject.toml configures it: strict on protocol/, log/, txn/ and spark/.
typecheck: setup
	$(PY) -m mypy

# The API reference (mkdocs + mkdocstrings), warnings as errors, into site/.
docs: setup
	$(PY) -m mkdocs build --strict --site-dir site

# Two pytest workers (pytest-xdist), each with its own local Spark; a test file stays on one
# worker (its module fixtures are built once). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
test: setup lint typecheck docs
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q -m "not slow" -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10
	$(MAKE) --no-print-directory test-connect

# pydelta over Spark Connect (tests/connect): a real Connect server from pyspark's distribution;
# a pytest process of its own, since a Connect session switches PySpark's functions to Connect.
test-connect: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q -m "not slow" tests/connect

# Two workers here too: the multi-process tests wait on their processes (measured: 21m -> 15m).
test-slow: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q -m slow -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10

# The cross-version subset on the older PySparks pydelta supports (own venvs, ~/.cache/pydelta);
# .ci/run runs it; one version: `make test-versions PYSPARK_VERSIONS=4.1`.
PYSPARK_VERSIONS ?= 4.0 4.1 4.2
test-versions: setup
	bash tests/pyspark_versions.sh $(PYSPARK_VERSIONS)

test-all: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q

# delta-spark in its own process as a witness (tests/witness): jars by Maven, its own venv.
# `make test` runs these tests too (set up on first use, or skipped loudly without mvn).
witness:
	bash tests/witness/setup.sh

# Spark's s3a:// connector for tests/s3a (hadoop-aws + its AWS SDK bundle, by Maven into ~/.cache/pydelta/jars);
# `make test` runs the s3a tests too (fetched on first use, or skipped loudly without mvn).
s3a:
	bash tests/s3a/setup.sh

test-s3a: setup witness s3a
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q tests/s3a

test-witness: setup witness
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q tests/witness

test-fast: setup
	$(PY) -m pytest -q -m "not spark and not slow"

bench: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m benchmarks.run_all

# pydelta against delta-spark on delta-spark's pyspark (benchmarks/README.md); needs the
# witness (Maven) and the pyspark-4.2 venv that `make test-versions` makes.
bench-vs-delta-spark: setup witness
	$(PY) -m benchmarks.vs_delta_spark.run

# Snapshot load without Spark: pydelta's log core against deltalake (benchmarks/README.md).
bench-snapshot-vs-deltalake: setup
	$(PY) -m benchmarks.snapshot_vs_deltalake

# The physical plans pydelta and delta-spark run for MERGE, UPDATE, DELETE and the DV scan.
bench-plans: setup witness
	$(PY) -m benchmarks.vs_delta_spark.plans

# pydelta over Spark Connect against a classic session, same Spark, same work (issue 27).
bench-connect: setup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m benchmarks.connect_overhead

clean:
	rm -rf $(VENV) site build dist src/*.egg-info .pytest_cache spark-warehouse
