#!/usr/bin/env bash
# The send with a PostgreSQL journal against the same send with the SQLite journal, in one run:
# 200,000 pushes to Debian's nginx answering like APNs, rounds alternating the two sides (a new
# database, and a new SQLite file, each round). Prints each rate, the medians and their ratio,
# and what each journal weighs after its send, per million recipients (the SQLite file with its
# WAL and shared memory; PostgreSQL's database, less an empty one's), and again once the run is
# pruned (`pushcamp journal prune --older-than 0s`): the whole journal then, not per million
# (SQLite's pages in use, less its free list; PostgreSQL's tables with their indexes, after VACUUM
# FULL).
# Target (issue #28): PostgreSQL >= 0.85 x SQLite.
#
# PostgreSQL is a throwaway cluster (scripts/postgres.sh: Debian's server, a free loopback port,
# removed at the end), on the same two cores as everything else, reached over TCP on loopback
# without TLS: the commit is what is measured, not the network.
#
#   bench/postgres.sh              # 200,000 pushes, 3 rounds, 1 connection (the default)
#   bench/postgres.sh 50000 1      # a quicker look
#   bench/postgres.sh 200000 3 4   # over 4 connections: a commit carries a batch for each
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-3}
connections=${3:-1}
port=${BENCH_PORT:-18443}

out=$PWD/bench/out/postgres
bench_setup "$out"
bench_nginx "$out" "$port"
bench_audience "$count" "$out/audience.csv"
bench_project "$out" "$port"
bench_campaign "$out/campaign.yaml" postgres-bench 10000000/s "$connections"

# The cluster (scripts/postgres.sh runs it as the postgres user when this runs as root); stopped
# with nginx when the script exits.
bench_postgres
trap "nginx -c '$out/nginx/nginx.conf' -s stop 2>/dev/null || true; scripts/postgres.sh stop '$pgdir/pg' >/dev/null 2>&1 || true; rm -rf '$pgdir'" EXIT

round_side() {
    local side=$1 label=$2
    shift 2
    bench_send "$out" campaign.yaml "$binary" "$@"
    rate=$(python3 -c "print($send_delivered / $send_seconds)")
    echo "$rate $send_cpu" >> "$out/$side.txt"
    printf '%-6s %-34s %10.0f   (%s delivered in %s s, %.1f s CPU, peak RSS %.1f MB)\n' "$round" "$label" "$rate" \
        "$send_delivered" "$send_seconds" "$send_cpu" "$(python3 -c "print($send_kilobytes / 1024)")"
}

# An empty database's size: what a journal's own tables add is measured above it.
psql -X -q "$server" -c "CREATE DATABASE bench_empty" >/dev/null
empty=$(psql -X -q -A -t "$server" -c "SELECT pg_database_size('bench_empty')")

printf '%-6s %-34s %10s\n' "round" "" "pushes/s"
for round in $(seq 1 "$rounds"); do
    round_side sqlite "pushcamp send (SQLite journal)"
    echo "$(du -cb "$out"/.pushcamp/journal.sqlite* | tail -1 | cut -f1) $(stat -c %s "$out/.pushcamp/journal.sqlite")" \
        >> "$out/sqlite-bytes.txt"
    (cd "$out" && "$binary" journal prune --older-than 0s >/dev/null)
    python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); q = lambda p: db.execute('PRAGMA ' + p).fetchone()[0]; print((q('page_count') - q('freelist_count')) * q('page_size'), 0)" \
        "$out/.pushcamp/journal.sqlite" >> "$out/sqlite-pruned-bytes.txt"
    psql -X -q "$server" -c "CREATE DATABASE bench_$round" >/dev/null
    url=${server/\/postgres\?/\/bench_$round?}
    round_side postgres "pushcamp send (PostgreSQL journal)" --journal "$url"
    psql -X -q -A -t "${url}" -c \
        "SELECT 'journal rows: ' || (SELECT count(*) FROM dispatch) || ' dispatch ranges, ' || (SELECT count(*) FROM delivery) || ' delivered ranges, ' || (SELECT count(*) FROM recipient) || ' recipient rows'"
    echo "$(psql -X -q -A -t "$server" -c "SELECT pg_database_size('bench_$round') - $empty")" 0 \
        >> "$out/postgres-bytes.txt"
    (cd "$out" && "$binary" journal prune --older-than 0s --journal "$url" >/dev/null)
    psql -X -q "$url" -c "VACUUM FULL" >/dev/null
    echo "$(psql -X -q -A -t "$url" -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'")" 0 \
        >> "$out/postgres-pruned-bytes.txt"
done

python3 - "$out" "$count" <<'PY'
import statistics, sys
out, count = sys.argv[1], int(sys.argv[2])
def rates(path):
    rows = [line.split() for line in open(path)]
    return statistics.median(float(r) for r, _ in rows), statistics.median(float(c) for _, c in rows)
def per_million(name, column=0):
    return statistics.median(int(line.split()[column]) for line in open(f"{out}/{name}-bytes.txt")) / count * 1e6 / 2**20
sqlite, sqlite_cpu = rates(f"{out}/sqlite.txt")
postgres, postgres_cpu = rates(f"{out}/postgres.txt")
print(f"median: SQLite {sqlite:,.0f}/s ({sqlite_cpu:.1f} s CPU), PostgreSQL {postgres:,.0f}/s ({postgres_cpu:.1f} s CPU)")
print(f"PostgreSQL / SQLite: {postgres / sqlite:.2f} (target >= 0.85)")
print(f"journal per million recipients: SQLite {per_million('sqlite'):.1f} MiB ({per_million('sqlite', 1):.1f} MiB "
      f"without its WAL), PostgreSQL {per_million('postgres'):.1f} MiB")
def kib(name):
    return statistics.median(int(line.split()[0]) for line in open(f"{out}/{name}-bytes.txt")) / 1024
print(f"once its run is pruned, the whole journal: SQLite {kib('sqlite-pruned'):.0f} KiB in use, "
      f"PostgreSQL {kib('postgres-pruned'):.0f} KiB (its schema, the run, its statistics)")
PY
