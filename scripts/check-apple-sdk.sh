#!/usr/bin/env bash
# Compiles every module of the package for Apple platforms on Linux, against real Apple SDKs, with
# the toolchain's own Swift compiler, clang and ld64.lld (issue 38):
#   macOS 15.5 SDK (Xcode 16.4; Swift 6.1.2 module interfaces), target arm64-apple-macos15.0
#   iOS 26.2 SDK  (Xcode 26.2; Swift 6.2.3 module interfaces), target arm64-apple-ios18.0
# Each Swift module (TDS, TDSCapture, SQLClient, SQLClientTesting, SQLClientObjC; the sqlclient CLI
# for macOS) is compiled whole-module to an object (type check, SILGen and the mandatory SIL
# diagnostics: definite initialization, exclusivity, missing returns), the Objective-C constants
# with clang. Then the objects are linked with ld64.lld against the SDK's .tbd stubs: a dynamic
# library of the library products (TDS, SQLClient, SQLClientObjC and its constants) and, on macOS,
# the sqlclient executable. An undefined symbol (a Network.framework, Security or GSS function the
# code names that the SDK does not export) fails the link. Nothing runs: Linux cannot run Apple code.
#
# Where the SDKs come from: a bare git copy of the public repository seayou2468-web/maciOS (its tree
# holds MacOSX15.5.sdk and iPhoneOS26.2.sdk, ~1 GB unpacked), looked for at
# ../.mirror/seayou2468-web+maciOS/repo beside the project (where the search tool's `fetch` puts it)
# or named by APPLE_SDK_MIRROR; unpacked once into APPLE_SDK_DIR (default ~/.cache/apple-sdk). An
# SDK already unpacked there is used without the mirror.
#
# Usage: scripts/check-apple-sdk.sh [--if-available]
#   --if-available   no SDK anywhere: say so and exit 0 (what .ci/run uses); without it, exit 1.
# Env: APPLE_TC_PLATFORMS="macos ios" (default both), APPLE_TC_WARNINGS=1 (list warnings),
#      APPLE_TC_KEEP=1 (keep the work folder), APPLE_TC_LINK=0 (type check only).
# Last line: 'apple typecheck: macOS N errors, iOS M errors' (exit 0 iff both 0 and every link
# succeeded); the link results are the lines before it. About 4 minutes on 2 quiet cores.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MIRROR=${APPLE_SDK_MIRROR:-$ROOT/../.mirror/seayou2468-web+maciOS/repo}
SDKDIR=${APPLE_SDK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/apple-sdk}
SWIFTC=${SWIFTC:-$(command -v swiftc)}
BIN=$(dirname "$(readlink -f "$SWIFTC")")
TOOLCHAIN_LIB=$(cd "$BIN/../lib/swift" && pwd)
CLANG=$BIN/clang
# An upstream LLVM ld64.lld (Debian's lld-19): the Swift toolchain's own refuses every object built
# for an Apple platform on Linux ("This version of lld does not support linking for platform").
LD64=$(command -v ld64.lld-19 || ls /usr/lib/llvm-*/bin/ld64.lld 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$LD64" ] && [ "${APPLE_TC_LINK:-1}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lld-19 >/dev/null 2>&1 || true
    LD64=$(command -v ld64.lld-19 || true)
fi
PLATFORMS=${APPLE_TC_PLATFORMS:-macos ios}
LINK=${APPLE_TC_LINK:-1}
NICE="nice -n 10"
# The SDK's modules built from their interfaces, kept beside the SDKs (a first run builds them).
MC=${APPLE_TC_MODULE_CACHE:-$SDKDIR/module-cache}
W=$(mktemp -d)
[ "${APPLE_TC_KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT

unpacked() { [ -f "$SDKDIR/$1/SDKSettings.json" ] && [ -e "$SDKDIR/$1/.unpacked" ]; }

if [ "${1:-}" = "--if-available" ] && [ ! -d "$MIRROR" ] \
    && ! unpacked MacOSX15.5.sdk && ! unpacked iPhoneOS26.2.sdk; then
    echo "apple typecheck: skipped (no Apple SDK: neither a mirror at $MIRROR nor an unpacked SDK in $SDKDIR;"
    echo "  fetch the public repository seayou2468-web/maciOS as a bare git copy there, see README 'Apple platforms')"
    exit 0
fi

# ---- 1. the SDKs (unpacked from the bare git copy once) --------------------------------------------
unpack() {  # $1 = the SDK's folder name inside the repository
    local sdk=$1
    unpacked "$sdk" && return 0
    if [ ! -d "$MIRROR" ]; then
        echo "no SDK mirror at $MIRROR (a bare git copy of seayou2468-web/maciOS is needed)" >&2; return 1
    fi
    mkdir -p "$SDKDIR"
    python3 - "$MIRROR" "$SDKDIR" "$sdk/" <<'PY' || return 1
import os, subprocess, sys
repo, dest, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
listing = subprocess.run(['git', '-C', repo, 'ls-tree', '-r', '-z', 'HEAD', '--', prefix],
                         capture_output=True, check=True).stdout.split(b'\0')
blobs = []
for entry in listing:
    if not entry: continue
    meta, path = entry.split(b'\t', 1)
    mode, kind, sha = meta.split()
    if kind == b'blob': blobs.append((mode.decode(), sha.decode(), path.decode()))
cat = subprocess.Popen(['git', '-C', repo, 'cat-file', '--batch'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
absent = 0
for mode, sha, path in blobs:
    cat.stdin.write((sha + '\n').encode()); cat.stdin.flush()
    header = cat.stdout.readline().split()
    if header[1] == b'missing': absent += 1; continue
    data = cat.stdout.read(int(header[2])); cat.stdout.read(1)
    out = os.path.join(dest, path); os.makedirs(os.path.dirname(out), exist_ok=True)
    if mode == '120000':
        if os.path.lexists(out): os.remove(out)
        os.symlink(data.decode(), out)
    else:
        with open(out, 'wb') as f: f.write(data)
# The snapshot keeps no symbolic links: a macOS framework's Versions/Current and top-level links.
for folder, subfolders, _ in os.walk(os.path.join(dest, prefix)):
    if folder.endswith('.framework') and 'Versions' in subfolders:
        versions = os.path.join(folder, 'Versions')
        names = [v for v in os.listdir(versions) if v != 'Current' and os.path.isdir(os.path.join(versions, v))]
        if len(names) != 1: continue
        current = os.path.join(versions, 'Current')
        if not os.path.lexists(current): os.symlink(names[0], current)
        for name in os.listdir(os.path.join(versions, names[0])):
            top = os.path.join(folder, name)
            if not os.path.lexists(top): os.symlink(os.path.join('Versions', 'Current', name), top)
print(f'{prefix}: {len(blobs)} files, {absent} absent from the snapshot', file=sys.stderr)
PY
    # Interface builds do not see -Xcc -I: the SDK's SwiftShims where its usr/include looks.
    ln -sfn ../lib/swift/shims "$SDKDIR/$sdk/usr/include/SwiftShims"
    touch "$SDKDIR/$sdk/.unpacked"
}

# A clean resource folder (clang's builtin headers and the SDK's SwiftShims), so that the Linux
# toolchain's own CoreFoundation, Dispatch and os module maps do not shadow the SDK's.
resource_dir() {
    local rd="$SDKDIR/resource-dir-${1%.sdk}"
    mkdir -p "$rd"
    ln -sfn "$TOOLCHAIN_LIB/clang" "$rd/clang"; ln -sfn "$TOOLCHAIN_LIB/host" "$rd/host"
    ln -sfn "$SDKDIR/$1/usr/lib/swift/shims" "$rd/shims"
    echo "$rd"
}

# ---- 2. the package, module by module --------------------------------------------------------------
sources() { find "$ROOT/Sources/$1" -name '*.swift' | LC_ALL=C sort; }

LINK_RESULTS=()
check() {  # $1 label, $2 SDK folder, $3 target triple, $4 ld64 platform, $5 minimum version
    local label=$1 sdk=$2 triple=$3 platform=$4 minimum=$5
    local S="$SDKDIR/$sdk" RD O="$W/$label"
    RD=$(resource_dir "$sdk")
    mkdir -p "$O/mods" "$O/objs"
    local common=(-target "$triple" -sdk "$S" -resource-dir "$RD" -module-cache-path "$MC-$label"
                  -swift-version 6 -package-name "$(basename "$ROOT" | tr 'A-Z' 'a-z')" -DSWIFT_PACKAGE -DDEBUG
                  -Onone -I "$O/mods")
    local log="$O/diagnostics.txt"; : > "$log"
    local modules=(TDS TDSCapture SQLClient SQLClientTesting SQLClientObjC)
    [ "$label" = macOS ] && modules+=(sqlclient)   # the CLI: a Mac tool (iOS has no command line)
    local m failed=()
    for m in "${modules[@]}"; do
        mapfile -t files < <(sources "$m")
        local kind=(-parse-as-library)
        [ "$m" = sqlclient ] && kind=()   # main.swift is its top-level code
        # Whole module to an object: every body type-checked, SILGen and the SIL diagnostics run,
        # machine code emitted for the link below; the module interface for the modules above it.
        if $NICE "$SWIFTC" -c -wmo -module-name "$m" "${common[@]}" "${kind[@]}" \
            -emit-module -emit-module-path "$O/mods/$m.swiftmodule" -o "$O/objs/$m.o" "${files[@]}" >>"$log" 2>&1; then
            :
        else
            failed+=("$m")
            # Its errors are in the log; emit the module without non-inlinable bodies so that the
            # modules above it are still checked.
            $NICE "$SWIFTC" -emit-module -wmo -module-name "$m" "${common[@]}" "${kind[@]}" \
                -Xfrontend -experimental-skip-non-inlinable-function-bodies \
                -emit-module-path "$O/mods/$m.swiftmodule" "${files[@]}" >"$O/$m.fallback.txt" 2>&1 \
              || echo "note: [$label] module $m could not be emitted even without bodies (see $O/$m.fallback.txt)" >>"$log"
        fi
    done
    # The Objective-C constants (Apple platforms compile the .m; elsewhere it is empty).
    local c constants=()
    for c in "$ROOT"/Sources/SQLClientObjCConstants/*.m; do
        [ -e "$c" ] || continue
        local obj="$O/objs/$(basename "$c" .m).o"
        if $NICE "$CLANG" -c -target "$triple" -isysroot "$S" -fobjc-arc -fmodules -fmodules-cache-path="$MC-$label" \
            -I "$ROOT/Sources/SQLClientObjCConstants/include" "$c" -o "$obj" >>"$log" 2>&1; then
            constants+=("$obj")
        else
            failed+=("$(basename "$c")")
        fi
    done
    local n; n=$(grep -cE '(^|: )error: ' "$log")
    grep -E '(^|: )error: ' "$log" | sed "s|$ROOT/||" | LC_ALL=C sort -u | sed "s/^/[$label] /"
    if [ "${APPLE_TC_WARNINGS:-0}" = 1 ]; then
        grep -E '(^|: )warning: ' "$log" | sed "s|$ROOT/||" | LC_ALL=C sort -u | sed "s/^/[$label] /"
    else
        echo "[$label] $(grep -cE '(^|: )warning: ' "$log") warnings (APPLE_TC_WARNINGS=1 lists them)"
    fi
    echo "$n" > "$O/count"

    # ---- 3. the link against the SDK's stubs --------------------------------------------------------
    [ "$LINK" = 1 ] || return 0
    if [ -z "$LD64" ]; then
        LINK_RESULTS+=("[$label] link: skipped (no upstream ld64.lld: apt-get install lld-19; the Swift toolchain's own refuses Apple platforms on Linux)")
        return 0
    fi
    if [ "${#failed[@]}" -gt 0 ]; then
        LINK_RESULTS+=("[$label] link: not tried (${failed[*]} did not compile)"); echo 1 > "$O/linkfailed"; return 0
    fi
    # The objects name the frameworks and Swift libraries they use (auto-link load commands); an
    # undefined symbol is an error. A stub absent from the SDK copy (the macOS copy lacks
    # Foundation.tbd) cannot vouch for its symbols: it is left out of the link, and the symbols
    # only it would export are counted apart, by name; every other symbol must resolve.
    local ldflags=(-arch arm64 -platform_version "$platform" "$minimum" "$minimum" -syslibroot "$S"
                   -L "$S/usr/lib/swift" -L "$S/usr/lib" -lSystem -undefined error --error-limit=0)
    local foundation_absent=0
    if [ ! -e "$S/System/Library/Frameworks/Foundation.framework/Foundation.tbd" ] \
        && [ ! -e "$S/System/Library/Frameworks/Foundation.framework/Versions/C/Foundation.tbd" ]; then
        foundation_absent=1
        ldflags+=(--ignore-auto-link-option=swiftFoundation --ignore-auto-link-option=Foundation)
    fi
    link() {  # $1 what, $2 output, rest: objects and flags
        local what=$1 out=$2; shift 2
        local txt="$O/link-$what.txt"
        $NICE "$LD64" "${ldflags[@]}" "$@" -o "$out" >"$txt" 2>&1
        # The Network.framework, Security and GSS functions the objects call.
        local apple f
        apple=$(for f in "$@"; do case $f in *.o) "$BIN/llvm-nm" -u "$f" 2>/dev/null ;; esac; done \
            | grep -oE '^ *_(_?nw_|sec_|Sec|gss_)[A-Za-z0-9_]+$' | LC_ALL=C sort -u | grep -c .)
        local verdict
        verdict=$(python3 - "$txt" "$S" "$apple" <<'PY'
# Sorts the link's undefined symbols: a symbol no stub of the SDK copy can vouch for (the stub is
# absent or holds no such symbol, for a reason of the copy or of the cross setup, named) is counted
# apart by reason; any other undefined symbol, or any other error, fails the link.
import os, re, sys
txt, sdk, apple = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(txt, errors='replace').read().splitlines()
undefined = sorted({l.split('undefined symbol: ', 1)[1].strip() for l in lines if 'undefined symbol: ' in l})
errors = [l for l in lines if 'error:' in l and 'undefined symbol' not in l]
def stub_has(path, name):
    try: return name in open(os.path.join(sdk, path), errors='replace').read()
    except OSError: return False
fw = 'System/Library/Frameworks/Foundation.framework'
foundation_absent = not (os.path.exists(os.path.join(sdk, fw, 'Foundation.tbd'))
                         or os.path.exists(os.path.join(sdk, fw, 'Versions/C/Foundation.tbd')))
reasons = {}
rest = []
for sym in undefined:
    if foundation_absent and re.search(r'10Foundation|^_NS|^_OBJC_(META)?CLASS_\$_NS|swiftFoundation', sym):
        why = "Foundation's (Foundation.tbd absent from the SDK copy)"
    elif sym.startswith('_$s6Darwin') and not stub_has('usr/lib/swift/libswiftDarwin.tbd', sym[1:]):
        why = "the Darwin overlay's (the copy's libswiftDarwin.tbd lists none)"
    elif sym.startswith('_swift_') and not stub_has('usr/lib/swift/libswiftCore.tbd', sym):
        why = 'Swift runtime entries the copy\'s libswiftCore.tbd lacks (' + sym[1:] + ')'
    elif sym.startswith('___isPlatformVersionAtLeast') or sym.startswith('___isOSVersionAtLeast'):
        why = "compiler-rt's (#available; Xcode links libclang_rt, which a Linux toolchain lacks)"
    else:
        rest.append(sym); continue
    reasons.setdefault(why, []).append(sym)
notes = ''.join(f'; {len(v)} unverified: {k}' for k, v in sorted(reasons.items()))
if not rest and not errors:
    print(f'OK: every other symbol resolved, {apple} Network/Security/GSS functions among them{notes}')
else:
    print(f'FAILED: {len(rest)} undefined symbols, {len(errors)} other errors{notes}')
    for l in (rest[:20] + errors[:5]): print('  ' + l)
PY
)
        LINK_RESULTS+=("[$label] link: $what $(head -n 1 <<<"$verdict")")
        if [[ "$verdict" != OK:* ]]; then
            tail -n +2 <<<"$verdict" | sed "s/^/[$label] /" >&2
            echo 1 > "$O/linkfailed"
        fi
    }
    link library "$O/libSQLClient.dylib" -dylib -install_name @rpath/libSQLClient.dylib \
        "$O/objs/TDS.o" "$O/objs/SQLClient.o" "$O/objs/SQLClientObjC.o" "${constants[@]}"
    if [ "$label" = macOS ]; then
        link sqlclient "$O/sqlclient" -execute \
            "$O/objs/TDS.o" "$O/objs/TDSCapture.o" "$O/objs/SQLClient.o" "$O/objs/SQLClientTesting.o" "$O/objs/sqlclient.o"
    fi
}

mac=skipped; ios=skipped
for p in $PLATFORMS; do
    case $p in
        macos) if unpack MacOSX15.5.sdk; then check macOS MacOSX15.5.sdk arm64-apple-macos15.0 macos 15.0
                   mac=$(cat "$W/macOS/count"); else mac=unavailable; fi ;;
        ios)   if unpack iPhoneOS26.2.sdk; then check iOS iPhoneOS26.2.sdk arm64-apple-ios18.0 ios 18.0
                   ios=$(cat "$W/iOS/count"); else ios=unavailable; fi ;;
    esac
done
rc=0
[ "$mac" = 0 ] || [ "$mac" = skipped ] || rc=1
[ "$ios" = 0 ] || [ "$ios" = skipped ] || rc=1
[ "$mac" = skipped ] && [ "$ios" = skipped ] && rc=1
for r in "${LINK_RESULTS[@]+"${LINK_RESULTS[@]}"}"; do echo "$r"; done
ls "$W"/*/linkfailed >/dev/null 2>&1 && rc=1
[ "${APPLE_TC_KEEP:-0}" = 1 ] && echo "work dir: $W"
echo "apple typecheck: macOS $mac errors, iOS $ios errors"
exit $rc
