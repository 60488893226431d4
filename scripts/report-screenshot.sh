#!/usr/bin/env bash
# Renders `pushcamp report --format html` in headless Chromium and saves a screenshot at a desktop
# width (1280 px) and a phone's (390 px), to look at the page and its charts (layout, axes,
# labels, the badge) before and after changing the report's HTML.
#
#   scripts/report-screenshot.sh [RUN] [OUT-PREFIX]    in a project directory (default: the latest run)
#   REHEARSAL=1 scripts/report-screenshot.sh           a rehearsal's run
#   HTML=page.html scripts/report-screenshot.sh        an HTML file already written (reports, Markdown)
#
# Writes OUT-PREFIX-1280.png and OUT-PREFIX-390.png (default prefix: report). Needs Debian's
# chromium (apt-get install chromium) and pushcamp on PATH (or PUSHCAMP=path).
set -euo pipefail
run=${1:-}
prefix=${2:-report}
pushcamp=${PUSHCAMP:-pushcamp}
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "error: no chromium on PATH; apt-get install chromium" >&2
    exit 1
fi
page=${HTML:-}
if [[ -z "$page" ]]; then
    page=$(mktemp --suffix=.html)
    trap 'rm -f "$page"' EXIT
    "$pushcamp" report ${REHEARSAL:+--rehearsal} ${run:+"$run"} --format html --output "$page"
fi
for width in 1280 390; do
    # Tall enough for the whole page; the screenshot's blank bottom is cropped by the viewer.
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,2600" \
        --screenshot="$prefix-$width.png" "file://$(realpath "$page")" 2>/dev/null
    echo "$prefix-$width.png"
done
