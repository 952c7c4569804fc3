#!/usr/bin/env bash
# Instruction counts per 100,000 rows of SQLClient's read paths, by valgrind's callgrind (they do
# not move with the machine's load). Each (workload, path) is run end to end against the bench's
# replay server at 100,000 and at 200,000 rows; the difference of the two totals is the cost of
# 100,000 rows (login, start-up and the fixed costs cancel).
#
#   Benchmarks/callgrind-paths.sh BENCH [WORKLOAD...]
#     BENCH: a release sqlclient-bench binary (.build/release/sqlclient-bench)
#     APIS="rows decodable typed blocks" (default: rows decodable typed) the --client-api values;
#       `msodbc` runs Microsoft's ODBC driver instead (Benchmarks/msodbc/bench.c, as the bench
#       builds it into $TMPDIR/sqlclient-bench-$UID by a run of the bench; the driver found as
#       the bench finds it, or $SQLCLIENT_MSODBC_DRIVER), in one context
#     CONTEXTS="task main" (default: task)
#     ROWS="N1 N2" (default: 100000 200000) the two row counts; the last column is then the cost
#       of N2-N1 rows (the vector workload holds at most 10,000 rows: ROWS="2000 4000")
#     BLOB_MB="M1 M2" (default: the bench's 100, both runs) the varbinary value's size in each
#       run: BLOB_MB="10 20" makes the last column the cost of 10 MB of one value
# Prints one line per measurement: workload api context Ir@100k Ir@200k Ir-per-100k-rows.
set -euo pipefail
bench=$1; shift
workloads=("$@"); [ ${#workloads[@]} -gt 0 ] || workloads=(narrow wide strings exact)
apis=(${APIS:-rows decodable typed})
contexts=(${CONTEXTS:-task})
counts=(${ROWS:-100000 200000})
blobs=(${BLOB_MB:-})
# The extra arguments of run k (0 or 1): its --blob-mb when BLOB_MB is set.
extra() { if [ ${#blobs[@]} -eq 2 ]; then echo "--blob-mb ${blobs[$1]}"; fi; }
dir=$(mktemp -d)
# Microsoft's ODBC driver library, where the bench looks for it (Driver.msodbcDriver).
msodbc_driver() {
  if [ -n "${SQLCLIENT_MSODBC_DRIVER:-}" ]; then echo "$SQLCLIENT_MSODBC_DRIVER"; return; fi
  ls "$(dirname "$0")"/../.venv/lib/python3*/site-packages/mssql_python_odbc/libs/linux/debian_ubuntu/x86_64/lib/libmsodbcsql-18* 2>/dev/null | sort | tail -1
}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
# libdispatch's main thread (Swift's async main) calls sigsuspend() with a mask in read-only
# memory, which valgrind 3.19 writes to and crashes: a preloaded sigsuspend copies it first.
cat > "$dir/shim.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
C
cc -shared -fPIC -O2 -o "$dir/shim.so" "$dir/shim.c"
declare -A port
for k in 0 1; do
  rows=${counts[$k]}
  args=(serve --rows "$rows" $(extra $k)); for w in "${workloads[@]}"; do args+=(--workload "$w"); done
  # The server runs until its standard input closes: a FIFO this script holds open.
  mkfifo "$dir/in.$k"
  "$bench" "${args[@]}" < "$dir/in.$k" > "$dir/serve.$k" 2>/dev/null &
  pids+=($!)
  if [ "$k" = 0 ]; then exec 8> "$dir/in.$k"; else exec 9> "$dir/in.$k"; fi
  for _ in $(seq 1 600); do grep -q READY "$dir/serve.$k" 2>/dev/null && break; sleep 0.5; done
  port[$k]=$(awk '$1 == "PORT" { print $2 }' "$dir/serve.$k")
done
for w in "${workloads[@]}"; do
  for api in "${apis[@]}"; do
    for context in "${contexts[@]}"; do
      if [ "$api" = msodbc ] && [ "$context" != "${contexts[0]}" ]; then continue; fi   # no context of its own
      ir=()
      for k in 0 1; do
        rows=${counts[$k]}
        if [ "$api" = msodbc ]; then
          client=("${TMPDIR:-/tmp}/sqlclient-bench-$(id -u)/msodbc-bench" "$(msodbc_driver)" "127.0.0.1:${port[$k]}"
                  "SELECT /* sqlclient-bench */ * FROM $w" 32767)
        else
          client=("$bench" client --workload "$w" --rows "$rows" $(extra $k) --port "${port[$k]}" --client-api "$api" --context "$context")
        fi
        if LD_PRELOAD="$dir/shim.so" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "${client[@]}" > "$dir/client.out" 2> "$dir/vg.err"; then
          ir+=($(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/vg.err" | tail -1))
        else
          ir+=(failed)
        fi
      done
      if [[ ${ir[0]} =~ ^[0-9]+$ && ${ir[1]} =~ ^[0-9]+$ ]]; then
        echo "$w $api $context ${ir[0]} ${ir[1]} $(( ir[1] - ir[0] ))"
      else
        echo "$w $api $context ${ir[0]} ${ir[1]} -"
      fi
    done
  done
done
