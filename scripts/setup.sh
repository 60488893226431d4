#!/usr/bin/env bash
# The README's first command: installs what this machine lacks, builds pushcamp once (release:
# 8 to 10 minutes the first time on two cores, as SwiftNIO, BoringSSL and the other dependencies
# are compiled; seconds after that), then rehearses the example campaign against the built-in
# APNs simulator and writes its report to reports/spring-sale.html. Nothing leaves the machine.
#
#   scripts/setup.sh            install, build, rehearse, report
#   scripts/setup.sh --build    install and build only
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

install_missing
started=$SECONDS
echo "building pushcamp (release; the first build compiles every dependency: 8 to 10 minutes on 2 cores)…"
swift build "${BUILD_FLAGS[@]}" --product pushcamp
bin=$(bin_path)
echo "built in $((SECONDS - started)) s: $bin/pushcamp"
[[ "${1:-}" == --build ]] && exit 0

"$bin/pushcamp" rehearse campaigns/spring-sale.yaml
mkdir -p reports
"$bin/pushcamp" report --rehearsal --format html --output reports/spring-sale.html
echo
echo "The rehearsal's report: reports/spring-sale.html"
echo "To use pushcamp from anywhere: export PATH=\"$bin:\$PATH\""
echo "Tests (reusing this build): scripts/test.sh"
