#!/usr/bin/env bash
# Ten million recipients from a PostgreSQL query, sent by one worker and then by three on one
# PostgreSQL journal, against `pushcamp sim` (issue #48), all on this machine (2 cores here: this
# measures what each step costs and what three workers make of shared cores, not a cluster):
#   1. the audience: a table of COUNT rows (id, token, first_name) made by SQL in a database of its
#      own on a throwaway cluster (scripts/postgres.sh);
#   2. `pushcamp plan` of the campaign (the query read through its cursor, planned, nothing
#      written): seconds and peak memory;
#   3. for 1 worker, then 3, a new journal database: `pushcamp send --detach` plans the query into
#      the run's snapshot and seals it (seconds, peak memory); then that many `pushcamp serve`
#      nodes send it: seconds from the first node's start to the run's end, the rate, the nodes'
#      peak memory; the journal's size after the run, and once pruned (`journal prune`, then
#      VACUUM FULL);
#   4. what the simulator received, per side: every token answered 200 once, none twice.
# Prints the three-worker rate over the one-worker rate.
#
#   bench/ten-million.sh              # 10,000,000 recipients, slices of 20 s (100,000 pushes)
#   bench/ten-million.sh 1000000      # a quicker look
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-10000000}
port=${BENCH_PORT:-18543}
out=$PWD/bench/out/ten-million
bench_install
swift build -c release --product pushcamp >/dev/null
binary=$PWD/.build/release/pushcamp
rm -rf "$out" && mkdir -p "$out/campaigns" "$out/sim"

bench_postgres
sim_pid=""
nodes=()
stop_nodes() {
    for pid in "${nodes[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${nodes[@]}"; do wait "$pid" 2>/dev/null || true; done
    nodes=()
}
trap "stop_nodes; [[ -n \$sim_pid ]] && kill -TERM \$sim_pid 2>/dev/null; scripts/postgres.sh stop '$pgdir/pg' >/dev/null 2>&1 || true; rm -rf '$pgdir'" EXIT
sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$1" -c "$2"; }
database() { # NAME: a new database; prints its URL
    sql "$server" "CREATE DATABASE $1" >/dev/null
    echo "${server/\/postgres\?/\/$1?}"
}
# peak RSS in MB of a process still running
peak() { awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$1/status"; }

empty=$(database empty)
empty=$(sql "$empty" "SELECT pg_database_size(current_database())")
audience_url=$(database audience)
started=$(date +%s.%N)
sql "$audience_url" "CREATE TABLE audience AS
    SELECT i AS id, encode(sha256(int8send(i)), 'hex') AS token, 'Name' || (i % 1000) AS first_name
    FROM generate_series(1, $count) AS i;
    ALTER TABLE audience ADD PRIMARY KEY (id)"
echo "audience: $count rows made in $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s" \
    "($(sql "$audience_url" "SELECT pg_size_pretty(pg_total_relation_size('audience'))"))"
export AUDIENCE_URL=$audience_url

# The campaign every bench sends, its audience the query (read with AUDIENCE_URL from the environment).
bench_campaign "$out/campaigns/ten-million.yaml" ten-million 10000000/s 2 \
    '{ postgres: "${env:AUDIENCE_URL}", query: "SELECT token, first_name FROM audience ORDER BY id" }'

# sim SIDE: a simulator recording what it receives to received-SIDE.csv (written when it stops).
start_sim() {
    "$binary" sim --port "$port" --state-dir "$out/sim" --team-id ABCDE12345 --topic com.example.shop \
        --record "$out/received-$1.csv" > "$out/sim-$1.out" 2>&1 &
    sim_pid=$!
    for _ in $(seq 1 100); do grep -q "listening on" "$out/sim-$1.out" && break; sleep 0.1; done
}

project() { # JOURNAL_URL
    cat > "$out/pushcamp.yaml" <<YAML
apps:
  bench:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: sim/key.p8
    endpoint: https://127.0.0.1:$port
    ca_file: sim/ca.pem
journal: { url: "$1", slice: 20s }
YAML
}

start_sim plan
project "$(database plan_only)"
(cd "$out" && "$binary" journal migrate > /dev/null)
(cd "$out" && /usr/bin/time -f '%e %M' -o time.txt "$binary" plan campaigns/ten-million.yaml > plan.txt)
read -r seconds kilobytes < "$out/time.txt"
echo "plan: $seconds s, peak RSS $((kilobytes / 1024)) MB ($(grep -m1 -i 'planned' "$out/plan.txt" | sed 's/^ *//'))"
kill -TERM "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""

for workers in 1 3; do
    side=w$workers
    start_sim "$side"
    url=$(database "journal_$side")
    project "$url"
    (cd "$out" && /usr/bin/time -f '%e %M' -o time.txt "$binary" send --detach campaigns/ten-million.yaml > detach.txt)
    read -r seconds kilobytes < "$out/time.txt"
    slices=$(sql "$url" "SELECT count(*) FROM slice")
    echo "$side: snapshot (send --detach): $seconds s, peak RSS $((kilobytes / 1024)) MB, $slices slices;" \
        "$(tr '\n' ' ' < "$out/detach.txt" | cut -c1-160)"
    sent_from=$(date +%s.%N)
    for i in $(seq 1 "$workers"); do
        (cd "$out" && exec "$binary" serve --listen 127.0.0.1:0 2> "$out/node-$side-$i.log") &
        nodes+=($!)
    done
    while [[ $(sql "$url" "SELECT status FROM run") == running ]]; do sleep 0.5; done
    sent_to=$(date +%s.%N)
    peaks=""
    for pid in "${nodes[@]}"; do peaks+="$(peak "$pid") "; done
    stop_nodes
    status=$(sql "$url" "SELECT status FROM run")
    planned=$(sql "$url" "SELECT planned FROM run")
    delivered=$(sql "$url" "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM delivery")
    rate=$(python3 -c "print(round($planned / ($sent_to - $sent_from)))")
    echo "$rate" > "$out/rate-$side.txt"
    echo "$side: run $status, $delivered of $planned delivered in $(python3 -c "print(round($sent_to - $sent_from, 1))") s:" \
        "$rate/s; nodes' peak RSS (MB): $peaks"
    # The journal's own bytes: the database less an empty one's; once pruned, its tables and
    # indexes after VACUUM FULL.
    bytes=$(($(sql "$url" "SELECT pg_database_size(current_database())") - empty))
    snapshot=$(sql "$url" "SELECT pg_total_relation_size('snapshot_page')")
    (cd "$out" && "$binary" journal prune --older-than 0s > /dev/null)
    sql "$url" "VACUUM FULL" > /dev/null
    pruned=$(sql "$url" "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'")
    mib() { python3 -c "print(round($1 / 2**20, 1))"; }
    echo "$side: journal $(mib "$bytes") MiB after the run ($(mib "$bytes * 1e6 / $planned") MiB per million," \
        "of which the snapshot $(mib "$snapshot"));" "$(python3 -c "print(round($pruned / 1024))") KiB once pruned"
    kill -TERM "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
    python3 - "$out/received-$side.csv" "$planned" "$side" <<'PY'
import sys
path, planned, side = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen, twice, answered = set(), 0, 0
with open(path) as received:
    next(received, None)
    for line in received:
        token, status = line.split(",", 2)[:2]
        if status != "200":
            continue
        answered += 1
        if token in seen:
            twice += 1
        seen.add(token)
print(f"{side}: the simulator answered 200 to {answered} requests, {len(seen)} tokens, {twice} twice")
if len(seen) != planned or twice:
    sys.exit(f"{side}: expected each of {planned} tokens once")
PY
    rm -f "$out/received-$side.csv"
done
python3 -c "import sys; one, three = (float(open(f'$out/rate-w{n}.txt').read()) for n in (1, 3)); print(f'3 workers / 1: {three / one:.2f}')"
