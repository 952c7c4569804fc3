#!/usr/bin/env bash
# Fails when a Swift file of the package (Sources, Tests, Benchmarks) would not build, or would
# behave Linux-only, on Apple platforms:
#   - `import Glibc` / `Musl` / `Darwin` / `WinSDK` / `Android` / `Bionic` outside an
#     `#if canImport(<that module>)` (or `#elseif`) branch;
#   - a Linux-only API outside a branch that only Linux compiles: `#if os(Linux)`,
#     `canImport(Glibc)`, `canImport(Musl)`, or the `#else`/`#elseif` after a `canImport(Darwin)`
#     or `os(macOS|iOS|tvOS|watchOS|visionOS)` branch. Linux-only here means: Glibc's
#     `SOCK_STREAM.rawValue`/`SOCK_DGRAM.rawValue` (Darwin's are plain Int32), `MSG_NOSIGNAL`,
#     `Glibc.`/`Musl.` qualified names, /proc paths, siginfo's `_sifields`, epoll, eventfd,
#     inotify, accept4, pipe2, dup3, SOCK_CLOEXEC/SOCK_NONBLOCK, memfd_create, getrandom, prctl,
#     sched_getaffinity, malloc_usable_size, mallinfo, TCP_KEEPIDLE.
# Comments are ignored. Prints every finding as file:line: reason; exit status 1 when any.
# Then every Apple-only file (one whose code sits wholly inside `#if canImport(Network)`,
# `canImport(Security)`, `canImport(Darwin)`, `canImport(SwiftUI)` or `os(macOS|iOS|…)`, and every
# file under a folder named Apple/) is parsed with `swiftc -parse`: Linux cannot type-check
# Apple API, but a syntax error in code only Apple compiles is caught here.
# Usage: scripts/check-portability.sh [DIR…]   (default: Sources Tests Benchmarks)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ "$#" -eq 0 ]; then set -- Sources Tests Benchmarks; fi

python3 - "$@" <<'PY'
import os, re, sys

PLATFORM_MODULES = {"Glibc", "Musl", "Darwin", "WinSDK", "Android", "Bionic"}
APPLE = re.compile(r"canImport\(Darwin\)|os\((macOS|iOS|tvOS|watchOS|visionOS)\)")
LINUX = re.compile(r"os\(Linux\)|canImport\((Glibc|Musl)\)|!\s*canImport\(Darwin\)|!\s*os\(macOS\)")
LINUX_ONLY = [
    (re.compile(r"\bSOCK_(STREAM|DGRAM|RAW|SEQPACKET)\.rawValue\b"), "Glibc's socket type enum (.rawValue)"),
    (re.compile(r"\bMSG_NOSIGNAL\b"), "MSG_NOSIGNAL (Darwin: SO_NOSIGPIPE)"),
    (re.compile(r"\b(Glibc|Musl)\."), "a Glibc/Musl-qualified name"),
    (re.compile(r"\"/proc/|\"/proc\""), "a /proc path"),
    (re.compile(r"\b_sifields\b"), "siginfo_t._sifields (Darwin: si_pid/si_status)"),
    (re.compile(r"\b(epoll_\w+|eventfd|inotify_\w+|accept4|pipe2|dup3|memfd_create|getrandom|prctl|"
                r"sched_getaffinity|malloc_usable_size|mallinfo2?)\b"), "a Linux-only call"),
    (re.compile(r"\b(SOCK_CLOEXEC|SOCK_NONBLOCK|TCP_KEEPIDLE)\b"), "a Linux-only constant"),
]
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*import\s+(?:(?:struct|func|class|enum|var|let|typealias|protocol)\s+)?(\w+)")

def strip_comment(line, in_block):
    """The code part of a line (string literals kept), and whether a /* */ comment stays open."""
    out, i, in_string = [], 0, False
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_block = end + 2, False
            continue
        c = line[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(line):
                out.append(line[i + 1]); i += 2; continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block, i = True, i + 2
            continue
        if c == '"':
            in_string = True
        out.append(c)
        i += 1
    return "".join(out), in_block

def check(path):
    findings = []
    # Stack of branches: (condition of this branch, conditions of the earlier branches of the same #if).
    stack = []
    in_block = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, raw in enumerate(f, 1):
            code, in_block = strip_comment(raw.rstrip("\n"), in_block)
            s = code.strip()
            if s.startswith("#if "):
                stack.append((s[4:], []))
                continue
            if s.startswith("#elseif "):
                if stack:
                    cond, earlier = stack.pop()
                    stack.append((s[8:], earlier + [cond]))
                continue
            if s == "#else" or s.startswith("#else "):
                if stack:
                    cond, earlier = stack.pop()
                    stack.append(("", earlier + [cond]))
                continue
            if s.startswith("#endif"):
                if stack:
                    stack.pop()
                continue
            if not s:
                continue

            def linux_only_branch():
                for cond, earlier in stack:
                    if LINUX.search(cond):
                        return True
                    # An #else/#elseif after an Apple branch is not compiled on Apple platforms.
                    if any(APPLE.search(e) for e in earlier) and not APPLE.search(cond):
                        return True
                return False

            m = IMPORT.match(code)
            if m and m.group(1) in PLATFORM_MODULES:
                module = m.group(1)
                guarded = any(re.search(r"canImport\(%s\)" % module, cond) or re.search(r"\bos\(", cond)
                              for cond, _ in stack)
                if not guarded:
                    findings.append("%s:%d: import %s outside #if canImport(%s)" % (path, number, module, module))
                continue
            for pattern, reason in LINUX_ONLY:
                if pattern.search(code) and not linux_only_branch():
                    findings.append("%s:%d: %s outside #if os(Linux): %s" % (path, number, reason, s))
    return findings

findings = []
for top in sys.argv[1:]:
    for directory, _, files in os.walk(top):
        if "/.build" in directory or directory.startswith(".build"):
            continue
        for name in sorted(files):
            if name.endswith(".swift"):
                findings += check(os.path.join(directory, name))
for line in findings:
    print(line)
if findings:
    print("check-portability: %d finding(s); guard them (see the header of scripts/check-portability.sh)" % len(findings))
    sys.exit(1)
print("check-portability: no unguarded platform import or Linux-only API")
PY

# Apple-only files: the first code line is an Apple-only #if and the file closes it last.
apple_files=()
while IFS= read -r file; do apple_files+=("$file"); done < <(python3 - "$@" <<'PY'
import os, re, sys
APPLE_ONLY = re.compile(r"^#if\s+.*(canImport\((Network|Security|Darwin|SwiftUI|UIKit|AppKit)\)|os\((macOS|iOS|tvOS|watchOS|visionOS)\))")
for top in sys.argv[1:]:
    for directory, _, files in os.walk(top):
        if "/.build" in directory or directory.startswith(".build"):
            continue
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            if "/Apple/" in "/" + path:
                print(path); continue
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = [l.strip() for l in f if l.strip() and not l.strip().startswith("//")]
            if lines and APPLE_ONLY.match(lines[0]) and lines[-1].startswith("#endif"):
                print(path)
PY
)
if [ "${#apple_files[@]}" -eq 0 ]; then
    echo "check-portability: no Apple-only file to parse"
    exit 0
fi
SWIFTC="${SWIFTC:-$(command -v swiftc || true)}"
if [ -z "$SWIFTC" ]; then
    echo "check-portability: swiftc not found: cannot parse the ${#apple_files[@]} Apple-only file(s)" >&2
    exit 1
fi
failed=0
for file in "${apple_files[@]}"; do
    # -parse checks syntax only (no imports resolved); the #if branches Linux does not compile are still parsed.
    if ! "$SWIFTC" -parse "$file"; then
        echo "check-portability: $file does not parse" >&2
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then exit 1; fi
echo "check-portability: ${#apple_files[@]} Apple-only file(s) parse with swiftc -parse: ${apple_files[*]}"
