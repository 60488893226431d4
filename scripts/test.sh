#!/usr/bin/env bash
# The README's second command: the whole test suite, on the build scripts/setup.sh made (the
# same configuration, so only the test targets are compiled: about 2 minutes the first time),
# then about a minute of tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

install_missing
swift build "${BUILD_FLAGS[@]}" --build-tests
swift test "${BUILD_FLAGS[@]}" --skip-build "$@"
