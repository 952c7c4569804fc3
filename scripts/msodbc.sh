#!/usr/bin/env bash
# Microsoft ODBC Driver 18 for SQL Server, the second conformance oracle and a benchmark peer
# (see ../shared/MSODBC.md): the driver from PyPI (mssql-python pulls mssql-python-odbc) in the
# project's .venv, and Debian's unixodbc-dev (the driver manager for the C programs).
#
#   scripts/msodbc.sh install   install what is missing (apt as root or through sudo; pip into .venv)
#   scripts/msodbc.sh driver    print the driver library's path (exit 1 when it is not installed)
#
# Environment: SQLCLIENT_PYTHON (default python3), SQLCLIENT_NO_APT=1 to skip apt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${SQLCLIENT_PYTHON:-python3}"
MSSQL_PYTHON_VERSION=1.16.0
MSSQL_PYTHON_ODBC_VERSION=18.6.2.2

driver() {
    local lib
    for lib in "$VENV"/lib/python3*/site-packages/mssql_python_odbc/libs/linux/debian_ubuntu/x86_64/lib/libmsodbcsql-18*.so*; do
        if [ -f "$lib" ]; then echo "$lib"; return 0; fi
    done
    return 1
}

install() {
    . "$ROOT/scripts/deps.sh"
    if [ ! -f /usr/include/sql.h ]; then
        sqlclient_install_debian_packages unixodbc-dev
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        echo "creating $VENV" >&2
        "$PYTHON" -m venv "$VENV"
    fi
    if ! driver >/dev/null; then
        echo "installing mssql-python==$MSSQL_PYTHON_VERSION (Microsoft ODBC Driver 18) into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            "mssql-python==$MSSQL_PYTHON_VERSION" "mssql-python-odbc==$MSSQL_PYTHON_ODBC_VERSION"
    fi
    driver >/dev/null || { echo "Microsoft ODBC Driver 18 not found in $VENV after install" >&2; return 1; }
    [ -f /usr/include/sql.h ] || { echo "unixodbc-dev (sql.h) is missing" >&2; return 1; }
}

case "${1:-}" in
    install) install ;;
    driver) driver || { echo "Microsoft ODBC Driver 18 is not installed: scripts/msodbc.sh install" >&2; exit 1; } ;;
    *) echo "usage: $0 install|driver" >&2; exit 2 ;;
esac
