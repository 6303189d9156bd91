#!/usr/bin/env bash
# Sets up Spark with Apache Iceberg's runtime as a second, independent reader of the Iceberg
# metadata pydelta's UniForm writes (tests/witness/iceberg_spark.py). Idempotent; fast when done.
#   jar:  iceberg-spark-runtime (one shaded jar) copied with Maven into $PYDELTA_ICEBERG_JARS
#         (default ~/.cache/pydelta/jars/iceberg-spark-runtime-<version>)
#   venv: $PYDELTA_ICEBERG_VENV (default ~/.cache/pydelta/pyspark-4.1, the venv the 4.1 cross-version
#         subset uses) with the pyspark that runtime is built for.
# Prints jar=... and python=... on its last lines.
set -euo pipefail
ICEBERG_VERSION="${PYDELTA_ICEBERG_VERSION:-1.12.0}"
SPARK_LINE="${PYDELTA_ICEBERG_SPARK:-4.1}"
ARTIFACT="iceberg-spark-runtime-${SPARK_LINE}_2.13"
JARS="${PYDELTA_ICEBERG_JARS:-$HOME/.cache/pydelta/jars/$ARTIFACT-$ICEBERG_VERSION}"
VENV="${PYDELTA_ICEBERG_VENV:-$HOME/.cache/pydelta/pyspark-$SPARK_LINE}"
PYTHON="${PYTHON:-python3}"
jar="$JARS/$ARTIFACT-$ICEBERG_VERSION.jar"

if [ ! -e "$jar" ]; then
  command -v mvn >/dev/null 2>&1 || { echo "setup_iceberg.sh: mvn not found (Debian: apt-get install -y maven)" >&2; exit 2; }
  echo "setup_iceberg.sh: copying org.apache.iceberg:$ARTIFACT:$ICEBERG_VERSION into $JARS" >&2
  tmp="$JARS.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  mvn -q -B dependency:copy -Dartifact="org.apache.iceberg:$ARTIFACT:$ICEBERG_VERSION" -DoutputDirectory="$tmp" >&2
  rm -rf "$JARS"; mkdir -p "$(dirname "$JARS")"; mv "$tmp" "$JARS"
fi
if ! "$VENV/bin/python" -c "import pyspark, sys; sys.exit(not pyspark.__version__.startswith('$SPARK_LINE.'))" 2>/dev/null; then
  echo "setup_iceberg.sh: creating $VENV with pyspark==$SPARK_LINE.*" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "pyspark==$SPARK_LINE.*" >&2
fi
echo "jar=$jar"
echo "python=$VENV/bin/python"
