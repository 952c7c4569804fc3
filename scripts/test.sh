#!/usr/bin/env bash
# Runs the whole test suite. Starts the live test server (pysqlbridge 2.1.3 on 127.0.0.1, see
# scripts/pysqlbridge.sh) when it is not running, and stops it afterwards if it started it.
# Extra arguments go to `swift test` (for example `--filter SQLClientTests`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/deps.sh
sqlclient_install_debian_packages
export SQLCLIENT_TEST_PORT="${SQLCLIENT_TEST_PORT:-14333}"
export SQLCLIENT_DEMO_PASSWORD="${SQLCLIENT_DEMO_PASSWORD:-demo-Passw0rd}"
# The live tests fail (rather than skip) when the server cannot be reached.
export SQLCLIENT_REQUIRE_LIVE="${SQLCLIENT_REQUIRE_LIVE:-1}"

started=0
if ! scripts/pysqlbridge.sh status >/dev/null 2>&1; then
    scripts/pysqlbridge.sh start
    started=1
fi
cleanup() {
    if [ "$started" = 1 ]; then scripts/pysqlbridge.sh stop || true; fi
}
trap cleanup EXIT

swift build --build-tests
swift test --skip-build "$@"
