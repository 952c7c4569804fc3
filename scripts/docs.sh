#!/usr/bin/env bash
# Builds the DocC documentation of SQLClient (Sources/SQLClient/SQLClient.docc and every doc
# comment) without the DocC plugin: the module's symbol graph is extracted from the debug build
# (swift-symbolgraph-extract) and converted with the toolchain's `docc`. Warnings (a broken
# ``symbol`` link, an unknown article) fail the run.
# Output: .build/docs/SQLClient.doccarchive (static hosting layout: open index.html through a web server).
# Usage: scripts/docs.sh [--keep-warnings]   (--keep-warnings: report warnings, do not fail on them)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
strict=(--warnings-as-errors)
if [ "${1:-}" = "--keep-warnings" ]; then strict=(); fi

swift build --target SQLClient >/dev/null
triple="$(swift -print-target-info 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')"
graphs="$ROOT/.build/symbol-graphs/SQLClient"
rm -rf "$graphs"
mkdir -p "$graphs"
swift-symbolgraph-extract -module-name SQLClient -I "$(swift build --show-bin-path)/Modules" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CSQLClientOpenSSL/module.modulemap" \
    -target "$triple" -output-dir "$graphs" -minimum-access-level public >/dev/null
# Only SQLClient's own symbols: the extension graphs (SQLClient@Swift…) document conformances of
# standard types and would add pages for them.
find "$graphs" -name 'SQLClient@*.symbols.json' -delete
mkdir -p .build/docs
docc convert Sources/SQLClient/SQLClient.docc --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name SQLClient --fallback-bundle-identifier org.sqlclient.SQLClient \
    --transform-for-static-hosting --output-path .build/docs/SQLClient.doccarchive "${strict[@]}"
echo "docs: .build/docs/SQLClient.doccarchive"
