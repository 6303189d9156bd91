#!/usr/bin/env bash
# Fetches Spark's s3a:// connector for the s3a tests (tests/s3a), outside the repository:
# org.apache.hadoop:hadoop-aws:<hadoop version> and its runtime dependencies (the AWS SDK v2
# bundle hadoop-aws's pom declares, ...), copied with Maven into
# $PYDELTA_S3A_CACHE (default ~/.cache/pydelta/jars/hadoop-aws-<hadoop version>).
# Idempotent; fast when already done.
#
#   bash tests/s3a/setup.sh [HADOOP_VERSION ...]
#
# Without arguments: the Hadoop version of each pyspark it finds (the repository's .venv and
# the delta-spark witness venv, from their jars/hadoop-client-api-<version>.jar). Prints
# `jars=<dir>` (and `jars-<version>=<dir>` for each version) on its last lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CACHE="${PYDELTA_S3A_CACHE:-$HOME/.cache/pydelta/jars}"
WITNESS_VENV="${PYDELTA_WITNESS_VENV:-$HOME/.cache/pydelta/witness-venv}"

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  for jar in "$repo"/.venv/lib/python*/site-packages/pyspark/jars/hadoop-client-api-*.jar \
             "$WITNESS_VENV"/lib/python*/site-packages/pyspark/jars/hadoop-client-api-*.jar; do
    [ -e "$jar" ] || continue
    v="$(basename "$jar" .jar)"; v="${v#hadoop-client-api-}"
    case " ${versions[*]-} " in *" $v "*) ;; *) versions+=("$v") ;; esac
  done
  [ ${#versions[@]} -gt 0 ] || { echo "setup.sh: no pyspark found (.venv, $WITNESS_VENV): give the Hadoop version, e.g. bash tests/s3a/setup.sh 3.5.0" >&2; exit 2; }
fi

last=""
for v in "${versions[@]}"; do
  case "$v" in *[!0-9A-Za-z.-]*|"") echo "setup.sh: not a Hadoop version: '$v'" >&2; exit 2 ;; esac
  jars="$CACHE/hadoop-aws-$v"
  stamp="$jars/.complete-hadoop-aws-$v"
  if [ ! -e "$stamp" ]; then
    command -v mvn >/dev/null 2>&1 || { echo "setup.sh: mvn not found (Debian: apt-get install -y maven)" >&2; exit 2; }
    tmp="$jars.tmp.$$"
    rm -rf "$tmp"; mkdir -p "$tmp"
    echo "setup.sh: copying org.apache.hadoop:hadoop-aws:$v and its runtime dependencies into $jars" >&2
    # hadoop-common and the rest of Hadoop are 'provided' (pyspark ships them): runtime scope
    # leaves them out and keeps the AWS SDK bundle hadoop-aws declares.
    mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
        -Dhadoop.version="$v" -DincludeScope=runtime -DoutputDirectory="$tmp" >&2
    ls "$tmp"/hadoop-aws-"$v".jar "$tmp"/bundle-*.jar >/dev/null
    rm -rf "$jars"; mkdir -p "$CACHE"; mv "$tmp" "$jars"
    touch "$stamp"
  fi
  echo "jars-$v=$jars"
  last="$jars"
done
echo "jars=$last"
