#!/usr/bin/env bash
# Starts and prepares the PostgreSQL server (.ci/run installs it from Debian's packages) that the
# postgres commit-owner tests use: 127.0.0.1:5432, user postgres with password postgres,
# database `test`. Idempotent: safe on a machine where all of it is already done.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

pgver="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$pgver main"; then
  pg_createcluster "$pgver" main
fi
pg_ctlcluster --skip-systemctl-redirect "$pgver" main start 2>/dev/null || true
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p 5432 && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p 5432

su postgres -c "psql -q -v ON_ERROR_STOP=1 -c \"ALTER USER postgres PASSWORD 'postgres'\""
if ! su postgres -c "psql -tAc \"SELECT 1 FROM pg_database WHERE datname = 'test'\"" | grep -q 1; then
  su postgres -c "createdb test"
fi
echo "PostgreSQL $pgver ready on 127.0.0.1:5432 (database test)"
