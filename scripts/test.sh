#!/usr/bin/env bash
# The README's second command: the whole test suite, on the build scripts/setup.sh made (the
# same configuration, so only the test targets are compiled: about 2 minutes the first time),
# then a few minutes of tests. The PostgreSQL tests run against a throwaway cluster started here
# (scripts/postgres.sh, on a free loopback port) and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

install_missing
install_test_missing
swift build "${BUILD_FLAGS[@]}" --build-tests
cluster=$(mktemp -d "${TMPDIR:-/tmp}/pushcamp-postgres.XXXXXX")
chmod 755 "$cluster"
trap 'scripts/postgres.sh stop "$cluster/pg"; rmdir "$cluster" 2>/dev/null || true' EXIT
PUSHCAMP_TEST_POSTGRES=$(scripts/postgres.sh start "$cluster/pg")
export PUSHCAMP_TEST_POSTGRES
swift test "${BUILD_FLAGS[@]}" --skip-build "$@"
