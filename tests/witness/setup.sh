#!/usr/bin/env bash
# Sets up delta-spark (the reference Delta implementation) as a test witness, outside
# the repository and outside the product's venv. Idempotent; fast when already done.
#   jars: delta-spark and its runtime dependencies, copied with Maven into
#         $PYDELTA_WITNESS_CACHE (default ~/.cache/pydelta/jars/delta-spark-<version>)
#   venv: $PYDELTA_WITNESS_VENV (default ~/.cache/pydelta/witness-venv) with the
#         pyspark that delta-spark supports (delta-spark 4.4.x is built for Spark 4.2), and psycopg.
# Prints the two paths (jars=..., python=...) on its last lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
DELTA_VERSION="${PYDELTA_WITNESS_DELTA_VERSION:-4.4.0}"
DELTA_ARTIFACT="${PYDELTA_WITNESS_DELTA_ARTIFACT:-delta-spark_4.2_2.13}"
PYSPARK_SPEC="${PYDELTA_WITNESS_PYSPARK:-pyspark==4.2.*}"
JARS="${PYDELTA_WITNESS_CACHE:-$HOME/.cache/pydelta/jars/delta-spark-$DELTA_VERSION}"
VENV="${PYDELTA_WITNESS_VENV:-$HOME/.cache/pydelta/witness-venv}"
PYTHON="${PYTHON:-python3}"

jar_stamp="$JARS/.complete-$DELTA_ARTIFACT-$DELTA_VERSION"
if [ ! -e "$jar_stamp" ]; then
  command -v mvn >/dev/null 2>&1 || { echo "setup.sh: mvn not found (Debian: apt-get install -y maven)" >&2; exit 2; }
  tmp="$JARS.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  echo "setup.sh: copying io.delta:$DELTA_ARTIFACT:$DELTA_VERSION and its runtime dependencies into $JARS" >&2
  # Spark itself is a 'provided' dependency of delta-spark, so runtime scope leaves it out.
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
      -Ddelta.artifact="$DELTA_ARTIFACT" -Ddelta.version="$DELTA_VERSION" \
      -DincludeScope=runtime -DoutputDirectory="$tmp" >&2
  ls "$tmp"/"$DELTA_ARTIFACT"-"$DELTA_VERSION".jar >/dev/null
  rm -rf "$JARS"; mkdir -p "$(dirname "$JARS")"; mv "$tmp" "$JARS"
  touch "$jar_stamp"
fi

venv_stamp="$VENV/.complete-$(echo "$PYSPARK_SPEC" | tr -c 'A-Za-z0-9.=' '_')"
if [ ! -e "$venv_stamp" ]; then
  echo "setup.sh: creating $VENV with $PYSPARK_SPEC" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$PYSPARK_SPEC" >&2
  "$VENV/bin/python" -c "import pyspark; print('setup.sh: witness pyspark', pyspark.__version__)" >&2
  touch "$venv_stamp"
fi
# psycopg: the catalog-managed witness's commit coordinator reads pydelta's PostgreSQL catalog.
if ! "$VENV/bin/python" -c "import psycopg" 2>/dev/null; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "psycopg[binary]>=3.1,<4" >&2
fi
echo "jars=$JARS"
echo "python=$VENV/bin/python"
