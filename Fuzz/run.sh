#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Fuzz/Harnesses and runs each for a bounded time.
#
#   Fuzz/run.sh [seconds-per-harness] [harness ...]     (default: 30 s, every harness)
#
# The harnesses are built with swiftc directly (libFuzzer's main collides with SwiftPM's test
# runner), with -sanitize=fuzzer,address, over the module sources they exercise: Sources/TDS,
# Sources/TDSCapture and Sources/SQLClient. Seed corpora are written at run time from
# ../shared/captures (never copied into the repository) and from Fixtures/ (Fuzz/seeds.py).
# Each run stops at the first crash, hang (-timeout, seconds per input), allocation over
# -malloc_limit_mb or RSS over -rss_limit_mb; the failing input is kept in
# $FUZZ_BUILD/artifacts/<harness>-crash-… (turn it into a Fixtures/bad/ file with a test).
# The script exits non-zero when any harness failed, after running all of them.
#
# Environment: FUZZ_BUILD (default /tmp/sqlclient-fuzz) build and corpus directory;
# FUZZ_OPT (default -O) optimisation; CAPTURES (default ../shared/captures).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${1:-30}"
shift || true
B="${FUZZ_BUILD:-/tmp/sqlclient-fuzz}"
OPT="${FUZZ_OPT:--O}"
CAPTURES="${CAPTURES:-$ROOT/../shared/captures}"
H="$ROOT/Fuzz/Harnesses"

ALL=(PacketFraming Prelogin Login7 ClientRequests TokenStream TokenStreamInResult TypeInfoValues Capture ConnectionString SSRP Client)
if [ "$#" -gt 0 ]; then SELECTED=("$@"); else SELECTED=("${ALL[@]}"); fi

SAN=(-sanitize=fuzzer,address)
mkdir -p "$B/mods" "$B/bin" "$B/corpus" "$B/artifacts" "$B/seeds" "$B/logs"

# A module object is rebuilt when any of its sources (or this script) is newer than it, and a
# module that imports TDS when TDS.o is newer (a stale object would disagree on type layouts).
stale() {  # stale OBJECT DIR...
    local obj="$1"; shift
    [ ! -f "$obj" ] && return 0
    [ "$obj" != "$B/mods/TDS.o" ] && [ "$B/mods/TDS.o" -nt "$obj" ] && return 0
    [ -n "$(find "$@" "$ROOT/Fuzz/run.sh" -name '*.swift' -newer "$obj" -print -quit 2>/dev/null)" ] && return 0
    [ "$ROOT/Fuzz/run.sh" -nt "$obj" ] && return 0
    return 1
}

build_module() {  # build_module NAME SOURCE-DIR [extra swiftc args]
    local name="$1" dir="$2"; shift 2
    if stale "$B/mods/$name.o" "$dir"; then
        echo "fuzz: building module $name ($OPT)"
        # shellcheck disable=SC2046
        swiftc -parse-as-library -module-name "$name" -package-name SQLClient -emit-module -emit-module-path "$B/mods/$name.swiftmodule" \
            -wmo "$OPT" "${SAN[@]}" -I "$B/mods" "$@" -c $(find "$dir" -name '*.swift' | sort) \
            -o "$B/mods/$name.o" 2> >(grep -v 'warning' >&2) || { echo "fuzz: module $name failed to build" >&2; exit 2; }
    fi
}

need_capture=0; need_client=0
for h in "${SELECTED[@]}"; do
    case "$h" in
        Capture) need_capture=1 ;;
        ConnectionString|SSRP|Client) need_client=1 ;;
    esac
done

build_module TDS "$ROOT/Sources/TDS"
[ "$need_capture" = 1 ] && build_module TDSCapture "$ROOT/Sources/TDSCapture"
[ "$need_client" = 1 ] && build_module SQLClient "$ROOT/Sources/SQLClient" -I "$ROOT/Sources/CSQLClientOpenSSL"

build_harness() {  # build_harness NAME
    local h="$1" extra=() objs=("$B/mods/TDS.o") srcs=("$H/FuzzSupport.swift" "$H/$1.swift")
    case "$h" in
        TokenStream|TokenStreamInResult) srcs+=("$H/TokenStreamSupport.swift") ;;
        Capture) objs+=("$B/mods/TDSCapture.o") ;;
        ConnectionString|SSRP|Client) objs+=("$B/mods/SQLClient.o"); extra=(-I "$ROOT/Sources/CSQLClientOpenSSL" -lssl -lcrypto) ;;
    esac
    local bin="$B/bin/$h"
    if [ ! -x "$bin" ] || [ -n "$(find "${srcs[@]}" "${objs[@]}" -newer "$bin" -print -quit)" ]; then
        echo "fuzz: building harness $h"
        swiftc -parse-as-library -package-name SQLClient "$OPT" "${SAN[@]}" -I "$B/mods" "${extra[@]}" "${srcs[@]}" "${objs[@]}" -o "$bin" \
            2> >(grep -v -e 'warning' -e 'Cannot export local symbol' >&2) || { echo "fuzz: harness $h failed to build" >&2; return 1; }
    fi
}

# Seeds: regenerated each run (captures are read, never copied into the repository).
rm -rf "$B/seeds"
python3 "$ROOT/Fuzz/seeds.py" "$ROOT" "$CAPTURES" "$B/seeds" || { echo "fuzz: seeding failed" >&2; exit 2; }

failed=()
summary="$B/summary.txt"
: > "$summary"
for h in "${SELECTED[@]}"; do
    if ! build_harness "$h"; then failed+=("$h(build)"); continue; fi
    mkdir -p "$B/corpus/$h" "$B/seeds/$h"
    log="$B/logs/$h.log"
    "$B/bin/$h" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
        -max_len=20000 -print_final_stats=1 -artifact_prefix="$B/artifacts/$h-" \
        "$B/corpus/$h" "$B/seeds/$h" > "$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    if [ "$rc" -eq 0 ]; then
        line="$h: ok, ${execs:-?} executions in ${SECONDS_EACH}s, coverage ${cov:-?} edges, corpus $(ls "$B/corpus/$h" | wc -l)"
    else
        line="$h: FAILED (exit $rc) after ${execs:-?} executions; see $log and $B/artifacts/"
        failed+=("$h")
        grep -m5 -e 'ERROR: ' -e 'Fatal error' -e 'invariant violated' -e 'SUMMARY' "$log" | sed 's/^/    /'
    fi
    echo "fuzz: $line"
    echo "$line" >> "$summary"
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: ${#failed[@]} harness(es) failed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: every harness ran ${SECONDS_EACH}s without a crash"
