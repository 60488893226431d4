#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/Package.swift) with libFuzzer and runs one, or all, for a while.
#
#   scripts/fuzz.sh campaign 60        # one target for 60 s
#   scripts/fuzz.sh all 5              # every target for 5 s each (what CI runs)
#   scripts/fuzz.sh csv 3600 -jobs=2   # longer, with extra libFuzzer options
#
# Targets: campaign (campaign and project readers), filter (where:), template (parser and
# renderer), csv, jsonl (readers and the JSON parser), run-stats (the journal's stored statistics).
# Each input must give a value or located errors: a trap, an input taking more than 10 s, or more
# than 2 GB of memory is a finding, its input saved in fuzz/findings/ (crash-*, timeout-*, oom-*).
# The committed corpus (fuzz/corpus/TARGET) seeds each run and is never modified; new inputs go
# to .build-fuzz/corpus/TARGET. Add a finding's input to the committed corpus once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
all=(campaign filter template csv jsonl run-stats)
target=${1:?"usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer options] (targets: ${all[*]})"}
seconds=${2:-10}
shift 2 || shift $#

swift build --package-path fuzz --build-path .build-fuzz --sanitize=fuzzer
binaries=$(swift build --package-path fuzz --build-path .build-fuzz --sanitize=fuzzer --show-bin-path)

targets=("$target")
[[ $target == all ]] && targets=("${all[@]}")
for name in "${targets[@]}"; do
    [[ -x "$binaries/fuzz-$name" ]] || { echo "no fuzz target '$name' (targets: ${all[*]})" >&2; exit 2; }
    scratch=.build-fuzz/corpus/$name
    mkdir -p "$scratch" fuzz/findings
    log=.build-fuzz/fuzz-$name.log
    # The Swift runtime's backtracer would take the crash signal before libFuzzer saves the input.
    if ! SWIFT_BACKTRACE=enable=no "$binaries/fuzz-$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=fuzz/findings/ "$@" "$scratch" "fuzz/corpus/$name" > "$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzz-$name: a finding (its input is in fuzz/findings/); full log: $log" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz-$name: $seconds s, ${runs:-?} inputs, no finding"
done
