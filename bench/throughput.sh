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

# The same h2load request: same headers (the default apns-collapse-id, the campaign id, included)
# and payload size, 1 connection x 100 streams.
body='{"aps":{"alert":{"title":"Spring sale","body":"Hello Name123, 20% off everything until Sunday"},"sound":"default"}}'
printf '%s' "$body" > "$out/body.json"
token=$(sed -n '2s/,.*//p' "$out/audience.csv")

# pushcamp_round SIDE LABEL [ARGS...]: one send; appends "rate peak-KB" to $out/SIDE.txt. $bin is
# the binary ($binary unless a round sets it).
pushcamp_round() {
    local side=$1 label=$2
    shift 2
    rm -rf "$out/.pushcamp"  # a fresh journal each round: every send is a new run of `count` recipients
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "${bin:-$binary}" send --quiet "$@" "$out/campaign.yaml" > "$out/report.txt"
    read -r seconds kilobytes < "$out/time.txt"
    delivered=$(sed -n 's/^delivered \([0-9]*\),.*/\1/p' "$out/report.txt")
    rate=$(python3 -c "print($delivered / $seconds)")
    echo "$rate $kilobytes" >> "$out/$side.txt"
    printf '%-6s %-40s %12.0f   (%s delivered in %s s, peak RSS %.1f MB)\n' "$round" "$label" \
        "$rate" "$delivered" "$seconds" "$(python3 -c "print($kilobytes / 1024)")"
}

# Rounds alternate the sides so a noisy neighbour hurts all alike; medians are compared.
printf '%-6s %-40s %12s\n' "round" "" "requests/s"
for round in $(seq 1 "$rounds"); do
    pushcamp_round sqlite "pushcamp send (SQLite journal)"
    pushcamp_round memory "pushcamp send --journal :memory:" --journal :memory:
    if [[ -n "${BASELINE:-}" ]]; then
        bin=$BASELINE pushcamp_round baseline "baseline: \$BASELINE send (SQLite journal)"
    fi

    h2load -n "$count" -c 1 -m 100 -d "$out/body.json" \
        -H "authorization: bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJBQkNERTEyMzQ1IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXBsYWNlaG9sZGVyLW9mLXRoZS1zYW1lLWxlbmd0aC1hcy1hbi1FUzI1Ni1zaWduYXR1cmUtMTIzNDU2Nzg" \
        -H "apns-id: 5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b" -H "apns-topic: com.example.shop" \
        -H "apns-push-type: alert" -H "apns-priority: 10" -H "apns-expiration: 1767225600" \
        -H "apns-collapse-id: throughput-bench" \
        "https://127.0.0.1:$port/3/device/$token" > "$out/h2load.txt"
    h2load_rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$out/h2load.txt")
    h2load_ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$out/h2load.txt")
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
