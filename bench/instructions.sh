#!/usr/bin/env bash
# Instructions per push: a fixed 20,000-push `pushcamp send` (SQLite journal, 1 connection, the
# throughput benchmark's campaign and nginx) run under qemu-user with a counting plugin
# (bench/insn-count.c), so every later change can be compared by a figure that does not depend on
# what else the machine is doing. Prints the whole process's instructions per push, and the
# marginal cost (a 20,000-push send minus a 1,000-push send, over 19,000 pushes), which leaves out
# process start, the TLS handshake and creating the journal.
#
# h2load is counted the same way (the same request, 1 connection x 100 streams, 20,000 minus 1,000
# requests): the wire codec's own work per request, and Pushcamp's marginal count against it. CPU
# time per push moves with the machine (2-3x between days here); this ratio does not. Both counts
# are user-space instructions only: the kernel's share (TCP, about 18% of Pushcamp's samples in
# perf) is outside either.
#
# Why not valgrind: valgrind 3.19 (Debian 12) dies with an internal SIGSEGV as soon as a Swift
# program starts its concurrency runtime, so callgrind cannot run Pushcamp here. QEMU's TCG plugin
# counts the same thing, executed guest instructions, in every thread.
#
#   bench/instructions.sh            # 20,000 pushes, twice (the two counts show the spread)
#   bench/instructions.sh 50000 1
#   BASELINE=/path/to/old/pushcamp bench/instructions.sh
#                                    # also counts an older build, for before/after in one run
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-20000}
runs=${2:-2}
small=1000
port=${BENCH_PORT:-18445}

command -v qemu-x86_64 >/dev/null && command -v gcc >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user gcc
}
out=$PWD/bench/out/instructions
bench_setup "$out"
gcc -O2 -shared -fPIC -o "$out/insn-count.so" bench/insn-count.c
bench_nginx "$out" "$port"
bench_audience "$count" "$out/all.csv"
head -n $((small + 1)) "$out/all.csv" > "$out/small.csv"
bench_project "$out" "$port"

# instructions AUDIENCE: one send of AUDIENCE (a fresh journal) by ${bin:-$binary}, counted; prints
# the count.
instructions() {
    rm -rf "$out/.pushcamp"
    cp "$out/$1" "$out/audience.csv"
    bench_campaign "$out/campaign.yaml" "instructions-$1" 10000000/s 1
    (cd "$out" && qemu-x86_64 -plugin "$out/insn-count.so,out=$out/count.txt" "${bin:-$binary}" send --quiet campaign.yaml > report.txt)
    grep -q "^delivered $(($(wc -l < "$out/audience.csv") - 1)), failed 0" "$out/report.txt" || {
        echo "the send did not deliver everything:" >&2
        cat "$out/report.txt" >&2
        exit 1
    }
    sed -n 's/^instructions //p' "$out/count.txt"
}

# row LABEL: counts both sends and prints a row.
row() {
    big=$(instructions all.csv)
    little=$(instructions small.csv)
    printf '%-10s %16s %16s %14.0f %14.0f\n' "$1" "$big" "$little" \
        "$(python3 -c "print($big / $count)")" "$(python3 -c "print(($big - $little) / ($count - $small))")"
}

# h2load_instructions COUNT: h2load's COUNT requests, counted; prints the count.
h2load_instructions() {
    bench_h2load_command "$out" "$port" "$1" 1 "instructions-all.csv"
    # qemu-user takes a path, not a name to look up.
    qemu-x86_64 -plugin "$out/insn-count.so,out=$out/count.txt" "$(command -v h2load)" "${h2load_command[@]:1}" \
        > "$out/h2load.txt"
    grep -q "^status codes: $1 2xx" "$out/h2load.txt" || {
        echo "h2load did not get $1 answers of 200:" >&2
        cat "$out/h2load.txt" >&2
        exit 1
    }
    sed -n 's/^instructions //p' "$out/count.txt"
}

printf '%-10s %16s %16s %14s %14s\n' run "$count pushes" "$small pushes" "per push" marginal
for run in $(seq 1 "$runs"); do
    row "$run"
    marginal=$(( (big - little) / (count - small) ))
    if [[ -n "${BASELINE:-}" ]]; then bin=$BASELINE row "baseline"; fi
done
h2big=$(h2load_instructions "$count")
h2little=$(h2load_instructions "$small")
h2marginal=$(( (h2big - h2little) / (count - small) ))
printf '%-10s %16s %16s %14.0f %14.0f\n' h2load "$h2big" "$h2little" \
    "$(python3 -c "print($h2big / $count)")" "$h2marginal"
printf 'pushcamp / h2load, marginal instructions per push: %.2f\n' "$(python3 -c "print($marginal / $h2marginal)")"
