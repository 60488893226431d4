#!/usr/bin/env bash
# What cutting a run into slices costs, on one machine (issue #29; 2 cores here, so this measures
# cost, not scale), against Debian's nginx answering like APNs and a throwaway PostgreSQL
# (scripts/postgres.sh) on the same cores:
#   1. one run of COUNT pushes sent by 1 worker (`pushcamp send` alone) against the same run sent by
#      3 (`send` while two `pushcamp serve` nodes join its slices), a new database each round, rounds
#      alternating; each side's rate is the planned pushes over the send's wall time (the send waits
#      for the run to end), and the 3-worker median over the 1-worker median is printed
#      (target >= 0.9). The campaign's rate (RATE, default 60,000/s) holds both sides below the
#      wire's limit, and `journal.slice: 1s` cuts the run into slices of RATE/3 pushes;
#   2. the journal's commits per second during the 1-worker send (pg_stat_database.xact_commit);
#   3. the snapshot of SNAPSHOT recipients (`send --detach`): seconds and peak memory.
#
#   bench/slices.sh                    # 200,000 pushes, 3 rounds, a 1,000,000-recipient snapshot
#   bench/slices.sh 100000 1 200000    # a quicker look
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-3}
snapshot=${3:-1000000}
rate=${RATE:-60000}
port=${BENCH_PORT:-18443}

out=$PWD/bench/out/slices
bench_setup "$out"
bench_nginx "$out" "$port"
bench_audience "$count" "$out/audience.csv"
bench_project "$out" "$port"
bench_campaign "$out/campaign.yaml" slices-bench "$rate/s" 1

bench_postgres
nodes=()
stop_nodes() {
    for pid in "${nodes[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${nodes[@]}"; do wait "$pid" 2>/dev/null || true; done
    nodes=()
}
trap "stop_nodes; nginx -c '$out/nginx/nginx.conf' -s stop 2>/dev/null || true; scripts/postgres.sh stop '$pgdir/pg' >/dev/null 2>&1 || true; rm -rf '$pgdir'" EXIT

# database NAME: a new database; sets url, and journal.slice 1s in pushcamp.yaml for it.
database() {
    psql -X -q "$server" -c "CREATE DATABASE $1" >/dev/null
    url=${server/\/postgres\?/\/$1?}
    bench_project "$out" "$port"
    printf 'journal: { url: "%s", slice: 1s }\n' "$url" >> "$out/pushcamp.yaml"
}

# start_nodes N: N `serve` nodes on the project's journal, each ready (listening) before it returns.
start_nodes() {
    local i
    for i in $(seq 1 "$1"); do
        (cd "$out" && exec "$binary" serve --listen 127.0.0.1:0 2> "$out/node-$i.log") &
        nodes+=($!)
        for _ in $(seq 1 300); do grep -q "listening on" "$out/node-$i.log" 2>/dev/null && break; sleep 0.1; done
    done
}

# timed_send LABEL: one `send` of the campaign; prints and appends its rate to $out/LABEL.txt.
timed_send() {
    local label=$1 seconds status delivered
    (cd "$out" && /usr/bin/time -f '%e' -o time.txt "$binary" send --quiet campaign.yaml > report.txt)
    seconds=$(cat "$out/time.txt")
    status=$(psql -X -q -A -t "$url" -c "SELECT status FROM run")
    delivered=$(psql -X -q -A -t "$url" -c \
        "SELECT (SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM delivery) + (SELECT count(*) FROM recipient WHERE state = 'delivered')")
    [[ $status == finished && $delivered == "$count" ]] || {
        echo "$label: run $status, $delivered of $count delivered" >&2
        exit 1
    }
    python3 -c "print($count / $seconds)" >> "$out/$label.txt"
    printf '%-6s %-40s %10.0f pushes/s   (%s s)\n' "$round" "$label" "$(python3 -c "print($count / $seconds)")" "$seconds"
}

rm -f "$out"/one.txt "$out"/three.txt
for round in $(seq 1 "$rounds"); do
    database "one_$round"
    before=$(psql -X -q -A -t "$url" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    timed_send one
    after=$(psql -X -q -A -t "$url" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    took=$(cat "$out/time.txt")
    per_second=$(python3 -c "print(round(($after - $before) / $took))")
    echo "       journal commits: $((after - before)) in $took s ($per_second/s)"
    database "three_$round"
    start_nodes 2
    timed_send three
    held=$(psql -X -q -A -t "$url" -c \
        "SELECT string_agg(n::text, ' ' ORDER BY n) FROM (SELECT count(*) AS n FROM lease WHERE resource LIKE 'run:%/slice:%' GROUP BY split_part(owner, '/', 2)) AS w")
    echo "       slices last held per worker: $held"
    stop_nodes
done

python3 - "$out/one.txt" "$out/three.txt" <<'PY'
import statistics, sys
one = statistics.median(float(line) for line in open(sys.argv[1]))
three = statistics.median(float(line) for line in open(sys.argv[2]))
print(f"median: 1 worker {one:,.0f}/s, 3 workers {three:,.0f}/s; 3 / 1: {three / one:.2f} (target >= 0.9)")
PY

bench_audience "$snapshot" "$out/audience.csv"
database snapshot
(cd "$out" && /usr/bin/time -f '%e %M' -o time.txt "$binary" send --detach campaign.yaml > detach.txt)
read -r seconds kilobytes < "$out/time.txt"
echo "snapshot of $snapshot recipients (send --detach): $seconds s, peak RSS $((kilobytes / 1024)) MB; $(cat "$out/detach.txt")"
