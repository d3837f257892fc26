#!/usr/bin/env bash
# The test command: fetch the local embedding models once (cached, checksum-verified: MiniLM,
# multilingual-e5-small and the opt-in Chinese m3e-small, whose tests check them against
# reference vectors), then run every
# test of the workspace in the release profile (candle is ~70x slower unoptimized), then the
# Python client's tests against a live `mnemos serve` (clients/python, in its own virtualenv).
set -euo pipefail
cd "$(dirname "$0")/.."
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-2}"
# As the mnemos binary sets for itself: the MiniLM embedder runs its own per-core workers.
export CANDLE_NUM_THREADS="${CANDLE_NUM_THREADS:-1}"
# The PostgreSQL store's tests start throwaway servers themselves: from Debian's `postgresql`
# (no pgvector: the in-process vector path) and from the pinned `pgserver` wheel (pgvector), which
# they fetch with pip. Installing the package also creates the `postgres` account the servers run
# as under root (PostgreSQL refuses to run as root).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
  else
    echo "the tests need a PostgreSQL server: install Debian's postgresql package (as root)" >&2
    exit 1
  fi
fi
# The inspector's browser tests drive headless Chromium through chromedriver, both from Debian,
# and screenshot pages with Chinese text (Chromium brings no fonts; WenQuanYi Micro Hei is 1.6 MB).
if [ ! -x /usr/bin/chromedriver ] || ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-wqy-microhei
  else
    echo "the tests need headless Chromium and a Chinese font: install Debian's chromium, chromium-driver and fonts-wqy-microhei packages (as root)" >&2
    exit 1
  fi
fi
# The house rules types cannot state: import circles, the engine's and the CLI's size, the
# engine's dependencies (see the script's header).
python3 scripts/architecture.py
cargo run --release -q --bin mnemos -- models fetch --embedder bilingual --embed-runtime onnx
# m3e-small, the opt-in non-commercial Chinese half, is no default's; its tests still check it.
cargo run --release -q --bin mnemos -- --config scripts/m3e.toml models fetch
# The OpenAPI test validates the server's document with a real validator.
python3 -m pip install -q openapi-spec-validator 2>/dev/null \
  || python3 -m pip install -q --break-system-packages openapi-spec-validator
cargo test --release --workspace
# Build the criterion benches too (not run: they take minutes), so they cannot rot. Same
# profile as the tests, so only the bench binaries themselves are compiled here.
cargo test --release --workspace --benches --no-run
MNEMOS_BIN="$PWD/target/release/mnemos" clients/python/run_tests.sh
