#!/usr/bin/env bash
# Installs a Unity Catalog server for tests/uc: olai-uc-server (an independent Rust implementation
# of Unity Catalog's REST API, including the Delta REST API /delta/v1) from crates.io, built once
# into $PYDELTA_UC_SERVER_ROOT (default ~/.cache/pydelta/uc-server-<version>, outside the clone);
# later runs find the binary there and build nothing. Installs Rust from Debian's packages when
# cargo is missing. Prints the binary's path (uc_server=...) on its last line.
set -euo pipefail
VERSION="${PYDELTA_UC_SERVER_VERSION:-0.0.11}"
ROOT="${PYDELTA_UC_SERVER_ROOT:-$HOME/.cache/pydelta/uc-server-$VERSION}"
BIN="$ROOT/bin/uc-server"

if [ ! -x "$BIN" ]; then
  if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "setup.sh: cargo not found: installing Rust from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q cargo >&2
  fi
  # olai-uc-server 0.0.11 declares rust-version 1.95 (edition 2024): Debian 12's rustc (1.63) is too
  # old for it, so a machine without rustup's toolchain stops here with the reason.
  have="$(rustc --version | awk '{print $2}')"
  if [ "$(printf '%s\n' 1.95.0 "$have" | sort -V | head -1)" != 1.95.0 ]; then
    echo "setup.sh: rustc $have is older than 1.95, which olai-uc-server $VERSION needs: install Rust with rustup" >&2
    exit 2
  fi
  echo "setup.sh: building olai-uc-server $VERSION from crates.io into $ROOT (about 12 minutes on 2 cores)" >&2
  tmp="$ROOT.tmp.$$"
  rm -rf "$tmp"
  cargo install -q olai-uc-server --version "$VERSION" --features bin --locked --root "$tmp" >&2
  "$tmp/bin/uc-server" --help >/dev/null
  rm -rf "$ROOT"; mkdir -p "$(dirname "$ROOT")"; mv "$tmp" "$ROOT"
fi
echo "uc_server=$BIN"
