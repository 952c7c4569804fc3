#!/usr/bin/env bash
# Instruction counts of one lease of a healthy pooled connection (issue 44: the socket check at
# lease), by valgrind's callgrind: `sqlclient-bench pool-lease --only MODE --repeat 1` at N and at
# 2N leases; the difference of the two process totals divided by N is one lease (start-up, login
# and the fixed costs cancel). The replay server (`pool-serve`) runs outside valgrind, started here.
#
#   Benchmarks/callgrind-pool-lease.sh BENCH [N] [MODE]
#     BENCH: a release sqlclient-bench binary; N: leases (default 5000); MODE: lease (default) or query
# Prints: mode Ir@N Ir@2N Ir-per-lease.
set -euo pipefail
bench=$1; n=${2:-5000}; mode=${3:-lease}
dir=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# As in callgrind-paths.sh: libdispatch's main thread calls sigsuspend() with a mask in read-only
# memory, which valgrind 3.19 writes to and crashes; a preloaded sigsuspend copies it first.
cat > "$dir/shim.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
C
cc -shared -fPIC -O2 -o "$dir/shim.so" "$dir/shim.c"
# The server serves until its standard input closes: a FIFO this script holds open.
mkfifo "$dir/in"
"$bench" pool-serve < "$dir/in" > "$dir/serve" 2>/dev/null &
server=$!
exec 8> "$dir/in"
for _ in $(seq 1 100); do grep -q PORT "$dir/serve" 2>/dev/null && break; sleep 0.1; done
port=$(awk '$1 == "PORT" { print $2 }' "$dir/serve")
ir=()
for leases in "$n" "$((2 * n))"; do
  LD_PRELOAD="$dir/shim.so" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
    "$bench" pool-lease --only "$mode" --leases "$leases" --repeat 1 --port "$port" > "$dir/out" 2> "$dir/vg.err"
  grep -q "ns per lease" "$dir/out" || { cat "$dir/vg.err" >&2; exit 1; }
  ir+=($(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/vg.err" | tail -1))
done
echo "$mode ${ir[0]} ${ir[1]} $(( (ir[1] - ir[0]) / n ))"
