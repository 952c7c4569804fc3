#!/usr/bin/env bash
# Runs the whole test suite. Starts the live test server (pysqlbridge 2.1.3 on 127.0.0.1, see
# scripts/pysqlbridge.sh) when it is not running, and stops it afterwards if it started it.
# Extra arguments go to `swift test` (for example `--filter SQLClientTests`).
#
#   scripts/test.sh --without-captures   the suite as a clone without ../shared sees it: the
#                                         capture tests skip (SQLCLIENT_CAPTURES names no folder)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/deps.sh
sqlclient_install_debian_packages
# What .ci/run installs for the tests, so that a user's run skips no more than CI's: Microsoft
# ODBC Driver 18 (the second conformance oracle) and MIT Kerberos (the Kerberos tests' throwaway
# realm). Each may fail (no root, no network): its tests then skip and the closing line says so.
scripts/msodbc.sh install || echo "Microsoft ODBC Driver 18 not installed: its oracle tests will skip" >&2
scripts/kdc.sh install || echo "MIT Kerberos KDC not installed: the Kerberos tests will skip" >&2
export SQLCLIENT_TEST_PORT="${SQLCLIENT_TEST_PORT:-14333}"
export SQLCLIENT_DEMO_PASSWORD="${SQLCLIENT_DEMO_PASSWORD:-demo-Passw0rd}"
# The live tests fail (rather than skip) when the server cannot be reached.
export SQLCLIENT_REQUIRE_LIVE="${SQLCLIENT_REQUIRE_LIVE:-1}"
if [ "${1:-}" = "--without-captures" ]; then
    shift
    export SQLCLIENT_CAPTURES="$ROOT/.run/captures-hidden"   # never created
    rm -rf "$SQLCLIENT_CAPTURES"
    echo "running without captures (SQLCLIENT_CAPTURES=$SQLCLIENT_CAPTURES, absent): capture tests skip" >&2
fi

started=0
if ! scripts/pysqlbridge.sh status >/dev/null 2>&1; then
    scripts/pysqlbridge.sh start
    started=1
fi
cleanup() {
    if [ "$started" = 1 ]; then scripts/pysqlbridge.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

swift build --build-tests
# XCTest only (no test uses swift-testing, whose empty run would print "0 tests" last).
log="$(mktemp)"
status=0
swift test --skip-build --disable-swift-testing "$@" 2>&1 | tee "$log" || status=$?
# A plain closing line with XCTest's own totals ("Executed N tests, with S tests skipped and F failures").
summary="$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with" "$log" | tail -n 1 || true)"
# The skipped tests by group (test class) and why (XCTSkip's message: "<file>:<line>: Class.test :
# Test skipped - why"), for the closing line.
skips="$(python3 - "$log" <<'PY'
import re, sys, collections
groups = collections.OrderedDict()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r": ([A-Za-z0-9_]+)\.[A-Za-z0-9_]+ : Test skipped(?: - (.*))?$", line.rstrip())
    if m:
        why = (m.group(2) or "no reason given").strip()
        why = why if len(why) <= 110 else why[:107] + "..."
        groups[(m.group(1), why)] = groups.get((m.group(1), why), 0) + 1
print("; ".join(f"{cls} {n} ({why})" for (cls, why), n in groups.items()))
PY
)" || skips=""
rm -f "$log"
if [ -n "$summary" ]; then
    executed="$(echo "$summary" | sed -E 's/.*Executed ([0-9]+) tests?.*/\1/')"
    failures="$(echo "$summary" | sed -E 's/.* ([0-9]+) failures?.*/\1/')"
    skipped=0
    if echo "$summary" | grep -q "skipped"; then
        skipped="$(echo "$summary" | sed -E 's/.*with ([0-9]+) tests? skipped.*/\1/')"
    fi
    # The closing line: the totals, then each group that skipped and why.
    # Each group that skipped and why, then the totals alone on the last line (the plain
    # 'N passed, N failed, N skipped' line that CI reads).
    if [ -n "$skips" ]; then echo "skipped by group: $skips"; fi
    echo "xctest: $((executed - skipped - failures)) passed, $failures failed, $skipped skipped"
fi
exit "$status"
