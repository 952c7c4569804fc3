#!/usr/bin/env bash
# Counts the public symbols of a module that have no doc comment of their own, from the symbol
# graph of the module as built (swift-symbolgraph-extract on .build/debug/Modules, so nothing is
# rebuilt with other flags). Fails when a module has more than its allowed number.
#
# A symbol counts when it is declared in Sources/<Module> (synthesized members do not count)
# and has no doc comment, or only one inherited from a protocol of another module (the
# `description` of CustomStringConvertible, `==`, `makeAsyncIterator()`…: DocC shows the
# protocol's text for those, so they are listed with --inherited but never counted).
#
# Usage: scripts/doc-coverage.sh [--list] [--inherited] [Module[=max]…]   (default: SQLClient=0)
#   --list       print every counted symbol (file:line kind path)
#   --inherited  also print the members that rely on a protocol's documentation
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
list=0
inherited=0
modules=()
for arg in "$@"; do
    case "$arg" in
        --list) list=1 ;;
        --inherited) inherited=1 ;;
        *) modules+=("$arg") ;;
    esac
done
if [ "${#modules[@]}" -eq 0 ]; then modules=("SQLClient=0"); fi

triple="$(swift -print-target-info 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for spec in "${modules[@]}"; do
    module="${spec%%=*}"
    max=0
    if [ "$spec" != "$module" ]; then max="${spec#*=}"; fi
    swift build --target "$module" >/dev/null
    modules_dir="$(swift build --show-bin-path)/Modules"
    mkdir -p "$out/$module"
    swift-symbolgraph-extract -module-name "$module" -I "$modules_dir" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CSQLClientOpenSSL/module.modulemap" \
        -target "$triple" -output-dir "$out/$module" -minimum-access-level public >/dev/null
    python3 - "$out/$module" "$module" "$max" "$list" "$inherited" "$ROOT" <<'PY' || status=1
import glob, json, os, sys
directory, module, limit, show, show_inherited, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1", sys.argv[6]
source_prefix = "file://" + os.path.join(root, "Sources", module) + "/"
seen, missing, inherited, total = set(), [], [], 0
for path in sorted(glob.glob(os.path.join(directory, "*.symbols.json"))):
    for s in json.load(open(path))["symbols"]:
        precise = s["identifier"]["precise"]
        if "::SYNTHESIZED::" in precise or precise in seen:
            continue
        location = s.get("location", {}).get("uri", "")
        if not location.startswith(source_prefix):
            continue
        seen.add(precise)
        total += 1
        doc = s.get("docComment")
        where = "%s:%d" % (location[len("file://" + root) + 1:], s["location"]["position"]["line"] + 1)
        entry = "%s %s %s" % (where, s["kind"]["identifier"], ".".join(s["pathComponents"]))
        if doc is None or not any(l.get("text", "").strip() for l in doc.get("lines", [])):
            missing.append(entry)
        elif doc.get("module") not in (None, module):
            inherited.append(entry)
if show:
    for e in missing: print("undocumented: " + e)
if show_inherited:
    for e in inherited: print("inherits its protocol's doc: " + e)
documented = total - len(missing)
print("doc-coverage: %s: %d public symbols, %d with a doc comment of their own, %d relying on a protocol's, %d without (allowed %d)"
      % (module, total, documented - len(inherited), len(inherited), len(missing), limit))
sys.exit(1 if len(missing) > limit else 0)
PY
done
exit "$status"
