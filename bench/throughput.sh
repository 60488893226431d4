#!/usr/bin/env bash
# Send throughput: Pushcamp end to end (planning, rendering, journal, HTTP/2 over TLS) against
# Debian's nginx, the same send with the journal kept in memory, and h2load against the same nginx,
# in one run. Prints the three rates, the ratios and Pushcamp's peak RSS.
# Targets: Pushcamp >= 0.8 x h2load's requests/s over 1 connection x 100 streams and peak RSS
# <= 150 MB (issue #3); the SQLite journal costs at most 10% against the in-memory one (issue #4).
#
#   bench/throughput.sh            # 200,000 pushes, 3 rounds
#   bench/throughput.sh 50000 1    # a quicker look: 50,000 pushes, 1 round
#   BASELINE=/path/to/old/pushcamp bench/throughput.sh 200000 5
#                                  # also sends with an older build each round (SQLite journal) and
#                                  # prints this build's median against it: before/after in one run
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-3}
port=${BENCH_PORT:-18443}

out=$PWD/bench/out/throughput
bench_setup "$out"
bench_nginx "$out" "$port"
bench_audience "$count" "$out/audience.csv"
bench_project "$out" "$port"
bench_campaign "$out/campaign.yaml" throughput-bench 10000000/s

# pushcamp_round SIDE LABEL [ARGS...]: one send; appends "rate peak-KB" to $out/SIDE.txt. $bin is
# the binary ($binary unless a round sets it).
pushcamp_round() {
    local side=$1 label=$2
    shift 2
    bench_send "$out" campaign.yaml "${bin:-$binary}" "$@"
    rate=$(python3 -c "print($send_delivered / $send_seconds)")
    echo "$rate $send_kilobytes" >> "$out/$side.txt"
    printf '%-6s %-40s %12.0f   (%s delivered in %s s, peak RSS %.1f MB)\n' "$round" "$label" \
        "$rate" "$send_delivered" "$send_seconds" "$(python3 -c "print($send_kilobytes / 1024)")"
}

# Rounds alternate the sides so a noisy neighbour hurts all alike; medians are compared.
printf '%-6s %-40s %12s\n' "round" "" "requests/s"
for round in $(seq 1 "$rounds"); do
    pushcamp_round sqlite "pushcamp send (SQLite journal)"
    pushcamp_round memory "pushcamp send --journal :memory:" --journal :memory:
    if [[ -n "${BASELINE:-}" ]]; then
        bin=$BASELINE pushcamp_round baseline "baseline: \$BASELINE send (SQLite journal)"
    fi

    # The same request: the same headers (the default apns-collapse-id, the campaign id, included)
    # and payload size, 1 connection x 100 streams.
    bench_h2load "$out" "$port" "$count" 1 throughput-bench
    echo "$h2load_rate" >> "$out/h2load-rates.txt"
    printf '%-6s %-40s %12.0f   (%s 2xx)\n' "$round" "h2load -c 1 -m 100" "$h2load_rate" "$h2load_ok"
done

python3 - "$out/sqlite.txt" "$out/memory.txt" "$out/h2load-rates.txt" "$out/baseline.txt" <<'PY'
import os, statistics, sys
def side(path):
    rows = [line.split() for line in open(path)]
    return statistics.median(float(rate) for rate, _ in rows), max(int(kb) for _, kb in rows) / 1024
sqlite, sqlite_peak = side(sys.argv[1])
memory, memory_peak = side(sys.argv[2])
h2load = statistics.median(float(line) for line in open(sys.argv[3]))
print("median pushcamp send, SQLite journal:    %.0f req/s (peak RSS %.1f MB)" % (sqlite, sqlite_peak))
print("median pushcamp send, in-memory journal: %.0f req/s (peak RSS %.1f MB)" % (memory, memory_peak))
print("median h2load:                           %.0f req/s" % h2load)
print("ratio pushcamp (SQLite) / h2load: %.2f" % (sqlite / h2load))
print("ratio SQLite / in-memory journal: %.2f (journal cost %.1f%%)" % (sqlite / memory, 100 * (1 - sqlite / memory)))
if os.path.exists(sys.argv[4]):
    baseline, baseline_peak = side(sys.argv[4])
    print("median baseline send, SQLite journal:    %.0f req/s (peak RSS %.1f MB)" % (baseline, baseline_peak))
    print("ratio this build / baseline: %.2f (peak RSS %.2f)" % (sqlite / baseline, sqlite_peak / baseline_peak))
PY
