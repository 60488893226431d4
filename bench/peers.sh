#!/usr/bin/env bash
# Pushcamp against its peers on the same APNs-shaped nginx, in one run (issue #14):
#   - `pushcamp send` end to end (plan + render + SQLite journal + HTTP/2 + report) over 1 connection
#     against `h2load -c 1 -m 100` with the same headers and body (target: ratio >= 0.9);
#   - the same over 4 connections against `h2load -c 4 -m 100` (target >= 0.9);
#   - Pushcamp's CPU per push, user + sys of the whole process over the pushes (target <= 9 us);
#   - aioapns, the best-known Python client (Debian's python3-aioapns), over 1 connection with 100
#     requests in flight (target: Pushcamp >= 40x). It sends AIO_COUNT pushes (default 20,000: it
#     manages ~2,500/s), so its rate, not its time, is compared.
# Rounds alternate the sides so a noisy neighbour hurts all alike; medians are compared.
#
# With BASELINE naming another build's binary (an older commit's), it is a side of its own, over 1
# connection, and the change is given as this build against it: a before/after in one run.
#
#   bench/peers.sh                 # 200,000 pushes, 5 rounds
#   bench/peers.sh 50000 1         # a quicker look
#   BASELINE=../old/.build/release/pushcamp bench/peers.sh 200000 5   # ../old: a worktree, built
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-5}
aio_count=${AIO_COUNT:-20000}
baseline=${BASELINE:+$(realpath "$BASELINE")}
port=${BENCH_PORT:-18444}

out=$PWD/bench/out/peers
bench_setup "$out"
bench_nginx "$out" "$port"
bench_audience "$count" "$out/audience.csv"
bench_project "$out" "$port"
bench_campaign "$out/one.yaml" peers-bench 10000000/s 1
bench_campaign "$out/four.yaml" peers-bench 10000000/s 4

# pushcamp_side SIDE CAMPAIGN LABEL: one send with a fresh journal; appends "rate cpu-seconds peak-KB".
pushcamp_side() { bench_pushcamp_side "$out" "$@"; }

# h2load_side SIDE CONNECTIONS: the same request, 100 streams per connection.
h2load_side() {
    local side=$1 connections=$2
    bench_h2load "$out" "$port" "$count" "$connections" peers-bench
    echo "$h2load_rate $h2load_cpu" >> "$out/$side.txt"
    printf '%-6s %-36s %10.0f req/s   (%s 2xx, CPU %.2f s = %.1f us/request)\n' "$round" "h2load -c $connections -m 100" \
        "$h2load_rate" "$h2load_ok" "$h2load_cpu" "$(python3 -c "print($h2load_cpu / $count * 1e6)")"
}

aioapns_side() {
    /usr/bin/python3 bench/aioapns-send.py "$port" "$out/ca.pem" "$out/key.p8" "$aio_count" > "$out/aioapns-out.txt"
    rate=$(sed -n 's/.* s, \([0-9]*\) req\/s$/\1/p' "$out/aioapns-out.txt")
    echo "$rate" >> "$out/aioapns.txt"
    printf '%-6s %-36s %10.0f req/s   (%s)\n' "$round" "aioapns, 1 connection" "$rate" "$(cat "$out/aioapns-out.txt")"
}

printf '%-6s %-36s %16s\n' round side rate
for round in $(seq 1 "$rounds"); do
    pushcamp_side one one.yaml "1 connection"
    if [[ -n $baseline ]]; then
        (binary=$baseline && pushcamp_side baseline one.yaml "1 connection (BASELINE)")
    fi
    h2load_side h2load-one 1
    pushcamp_side four four.yaml "4 connections"
    h2load_side h2load-four 4
    aioapns_side
done

python3 - "$out" "$count" <<'PY'
import statistics, sys
out, count = sys.argv[1], int(sys.argv[2])
def rows(name): return [[float(x) for x in line.split()] for line in open(f"{out}/{name}.txt")]
def median(name, column=0): return statistics.median(row[column] for row in rows(name))
one, four = median("one"), median("four")
h1, h4, aio = median("h2load-one"), median("h2load-four"), median("aioapns")
cpu1, cpu4 = median("one", 1) / count * 1e6, median("four", 1) / count * 1e6
peak = max(row[2] for row in rows("one") + rows("four")) / 1024
print()
print("median pushcamp send, 1 connection:  %7.0f req/s, %.1f us CPU/push" % (one, cpu1))
print("median h2load -c 1 -m 100:           %7.0f req/s, %.1f us CPU/request" % (h1, median("h2load-one", 1) / count * 1e6))
print("median pushcamp send, 4 connections: %7.0f req/s, %.1f us CPU/push" % (four, cpu4))
print("median h2load -c 4 -m 100:           %7.0f req/s, %.1f us CPU/request" % (h4, median("h2load-four", 1) / count * 1e6))
print("median aioapns, 1 connection:        %7.0f req/s" % aio)
print("peak RSS of pushcamp send:           %7.1f MB" % peak)
print("ratio pushcamp / h2load, 1 connection:  %.2f   (target >= 0.9)" % (one / h1))
print("ratio pushcamp / h2load, 4 connections: %.2f   (target >= 0.9)" % (four / h4))
print("CPU per push, 1 connection:             %.1f us (target <= 9)" % cpu1)
print("pushcamp / aioapns:                     %.0fx  (target >= 40x)" % (one / aio))
try:
    base = median("baseline")
except FileNotFoundError:
    sys.exit()
print("median BASELINE, 1 connection:       %7.0f req/s, %.1f us CPU/push" % (base, median("baseline", 1) / count * 1e6))
print("this build / BASELINE, 1 connection:    %.2f rate, %.2f CPU per push" % (one / base, median("one", 1) / median("baseline", 1)))
PY
