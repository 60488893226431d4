#!/usr/bin/env bash
# Renders `pushcamp report --format html` in headless Chromium and saves a screenshot, to check the
# page and its charts look right (layout, axes, labels) before changing the report's HTML.
#
#   scripts/report-screenshot.sh [RUN] [OUT.png]     run in a project directory (default: latest run)
#
# Needs Debian's chromium (apt-get install chromium) and pushcamp on PATH (or PUSHCAMP=path).
set -euo pipefail
run=${1:-}
out=${2:-report.png}
pushcamp=${PUSHCAMP:-pushcamp}
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "error: no chromium on PATH; apt-get install chromium" >&2
    exit 1
fi
page=$(mktemp --suffix=.html)
trap 'rm -f "$page"' EXIT
"$pushcamp" report ${run:+"$run"} --format html --output "$page"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1500 \
    --screenshot="$out" "file://$page" 2>/dev/null
echo "$out"
