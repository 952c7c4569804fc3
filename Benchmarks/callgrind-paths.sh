#!/usr/bin/env bash
# Instruction counts per 100,000 rows of SQLClient's read paths, by valgrind's callgrind (they do
# not move with the machine's load). Each (workload, path) is run end to end against the bench's
# replay server at 100,000 and at 200,000 rows; the difference of the two totals is the cost of
# 100,000 rows (login, start-up and the fixed costs cancel).
#
#   Benchmarks/callgrind-paths.sh BENCH [WORKLOAD...]
#     BENCH: a release sqlclient-bench binary (.build/release/sqlclient-bench)
#     APIS="rows decodable typed blocks" (default: rows decodable typed) the --client-api values
#     CONTEXTS="task main" (default: task)
# Prints one line per measurement: workload api context Ir@100k Ir@200k Ir-per-100k-rows.
set -euo pipefail
bench=$1; shift
workloads=("$@"); [ ${#workloads[@]} -gt 0 ] || workloads=(narrow wide strings exact)
apis=(${APIS:-rows decodable typed})
contexts=(${CONTEXTS:-task})
dir=$(mktemp -d)
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
for rows in 100000 200000; do
  args=(serve --rows "$rows"); for w in "${workloads[@]}"; do args+=(--workload "$w"); done
  # The server runs until its standard input closes: a FIFO this script holds open.
  mkfifo "$dir/in.$rows"
  "$bench" "${args[@]}" < "$dir/in.$rows" > "$dir/serve.$rows" 2>/dev/null &
  pids+=($!)
  if [ "$rows" = 100000 ]; then exec 8> "$dir/in.$rows"; else exec 9> "$dir/in.$rows"; fi
  for _ in $(seq 1 600); do grep -q READY "$dir/serve.$rows" 2>/dev/null && break; sleep 0.5; done
  port[$rows]=$(awk '$1 == "PORT" { print $2 }' "$dir/serve.$rows")
done
for w in "${workloads[@]}"; do
  for api in "${apis[@]}"; do
    for context in "${contexts[@]}"; do
      ir=()
      for rows in 100000 200000; do
        if LD_PRELOAD="$dir/shim.so" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$bench" client --workload "$w" --rows "$rows" \
             --port "${port[$rows]}" --client-api "$api" --context "$context" > "$dir/client.out" 2> "$dir/vg.err"; then
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
