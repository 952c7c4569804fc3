#!/usr/bin/env bash
# Runs the live test server (pysqlbridge 2.1.3) on 127.0.0.1 with the demo tables.
#
#   scripts/pysqlbridge.sh install   create .venv and install pysqlbridge==2.1.3 and pyspnego==0.12.4 if missing
#   scripts/pysqlbridge.sh start     install if needed, start in the background, wait for the port
#   scripts/pysqlbridge.sh stop      stop the server started by `start`
#   scripts/pysqlbridge.sh status    exit 0 when it is running
#
# Environment: SQLCLIENT_TEST_PORT (default 14333), SQLCLIENT_DEMO_PASSWORD (default demo-Passw0rd),
# SQLCLIENT_PYTHON (default python3). The pid file and the log are under .run/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${SQLCLIENT_TEST_PORT:-14333}"
HOST=127.0.0.1
VENV="$ROOT/.venv"
RUN="$ROOT/.run"
PIDFILE="$RUN/pysqlbridge-$PORT.pid"
LOG="$RUN/pysqlbridge-$PORT.log"
CONFIG="$ROOT/Fixtures/demo/config.json"
PYTHON="${SQLCLIENT_PYTHON:-python3}"
export SQLCLIENT_DEMO_PASSWORD="${SQLCLIENT_DEMO_PASSWORD:-demo-Passw0rd}"

port_open() {
    "$PYTHON" - "$HOST" "$PORT" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket()
s.settimeout(0.5)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

install() {
    if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("pysqlbridge") != "2.1.3")' 2>/dev/null; then
        install_pyspnego
        return 0
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        echo "creating $VENV" >&2
        "$PYTHON" -m venv "$VENV"
    fi
    echo "installing pysqlbridge==2.1.3 into $VENV" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "pysqlbridge==2.1.3"
    install_pyspnego
}

# pyspnego 0.12.4: the NTLM acceptor of the NTLM tests (scripts/pysqlbridge_ntlm.py).
install_pyspnego() {
    if "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("pyspnego") != "0.12.4")' 2>/dev/null; then
        return 0
    fi
    echo "installing pyspnego==0.12.4 into $VENV" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "pyspnego==0.12.4"
}

running() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start() {
    install
    mkdir -p "$RUN"
    if running && port_open; then
        echo "pysqlbridge already running on $HOST:$PORT (pid $(cat "$PIDFILE"))" >&2
        return 0
    fi
    if port_open; then
        echo "something else already listens on $HOST:$PORT; set SQLCLIENT_TEST_PORT" >&2
        return 1
    fi
    # Through a small wrapper that unblocks SIGTERM/SIGINT first: a parent that starts us from a
    # thread with signals blocked (a test runner's Dispatch thread) would otherwise leave the
    # server deaf to `stop`.
    nohup "$VENV/bin/python" -c '
import runpy, signal, sys
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
sys.argv[0] = "pysqlbridge"
runpy.run_module("pysqlbridge.server", run_name="__main__", alter_sys=True)
' --config "$CONFIG" --host "$HOST" --port "$PORT" >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 150); do
        if port_open; then
            echo "pysqlbridge listening on $HOST:$PORT (pid $(cat "$PIDFILE"), log $LOG)" >&2
            return 0
        fi
        if ! running; then
            echo "pysqlbridge exited; its log:" >&2
            cat "$LOG" >&2 || true
            rm -f "$PIDFILE"
            return 1
        fi
        sleep 0.2
    done
    echo "pysqlbridge did not open $HOST:$PORT within 30 s; its log:" >&2
    cat "$LOG" >&2 || true
    return 1
}

stop() {
    if running; then
        local pid
        pid="$(cat "$PIDFILE")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
        echo "pysqlbridge stopped (pid $pid)" >&2
    fi
    rm -f "$PIDFILE"
}

case "${1:-status}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status)
        if running && port_open; then echo "running on $HOST:$PORT (pid $(cat "$PIDFILE"))"; else echo "not running"; exit 1; fi ;;
    *) echo "usage: $0 install|start|stop|restart|status" >&2; exit 2 ;;
esac
