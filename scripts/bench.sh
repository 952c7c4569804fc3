#!/usr/bin/env bash
# Runs the benchmark (Benchmarks/README.md) with its peers installed: FreeTDS's dev files and
# unixODBC (Debian, as root or through sudo), Microsoft ODBC Driver 18 from PyPI into the
# project's .venv (scripts/msodbc.sh), then `swift run -c release sqlclient-bench ARGS`.
#
#   scripts/bench.sh --smoke            a few seconds, to check that every client works
#   nice -n 19 scripts/bench.sh --json  the full run (see Benchmarks/README.md)
#
# A peer that cannot be installed or built is an error naming it (non-zero exit), unless
# --no-freetds / --no-odbc says to leave it out.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
freetds=1 odbc=1
for a in "$@"; do
    case "$a" in
        --no-freetds) freetds=0 ;;
        --no-odbc) odbc=0 ;;
    esac
done
. scripts/deps.sh
if [ "$freetds" = 1 ]; then
    sqlclient_install_debian_packages || { echo "bench: FreeTDS (freetds-dev) could not be installed" >&2; exit 1; }
fi
if [ "$odbc" = 1 ]; then
    scripts/msodbc.sh install || { echo "bench: Microsoft ODBC Driver 18 could not be installed" >&2; exit 1; }
fi
swift build -c release --product sqlclient-bench
exec swift run -c release --skip-build sqlclient-bench "$@"
