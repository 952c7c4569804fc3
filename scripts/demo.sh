#!/usr/bin/env bash
# The main job in one command: install pysqlbridge 2.1.3 into .venv if missing, start it on
# 127.0.0.1 with the demo tables (Fixtures/demo), build sqlclient, and run a query over TLS,
# trusting the server's self-signed certificate. Arguments replace the default query.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/deps.sh
sqlclient_install_debian_packages
export SQLCLIENT_TEST_PORT="${SQLCLIENT_TEST_PORT:-14333}"
export SQLCLIENT_DEMO_PASSWORD="${SQLCLIENT_DEMO_PASSWORD:-demo-Passw0rd}"

scripts/pysqlbridge.sh start
swift build --product sqlclient 2>&1 | tail -n 3
BIN="$(swift build --product sqlclient --show-bin-path)/sqlclient"

QUERY="${*:-SELECT id, name, score, city FROM people ORDER BY id; SELECT COUNT(*) AS people FROM people}"
echo "+ sqlclient -S 127.0.0.1,$SQLCLIENT_TEST_PORT -U demo --trust-server-certificate -Q \"$QUERY\"" >&2
SQLCMDPASSWORD="$SQLCLIENT_DEMO_PASSWORD" "$BIN" -S "127.0.0.1,$SQLCLIENT_TEST_PORT" -U demo \
    --trust-server-certificate -Q "$QUERY"
