#!/usr/bin/env bash
# What cutting a run into slices costs one worker (issue #48: slicing becomes the default on
# PostgreSQL only when it costs no more than 5%): the same `pushcamp send` of COUNT pushes to
# Debian's nginx answering like APNs, on a throwaway PostgreSQL journal (a new database each
# round), sent whole (no `journal.slice`) and cut into slices (`journal.slice: SLICE`, 20s unless
# given), rounds alternating. The sliced send plans into the run's snapshot, then sends it back
# from the journal; the whole send plans while it sends. A third side, joined, is a worker that
# joins a run whose snapshot is already written and sealed (`send --detach` first, untimed): what
# reading the plan back costs, without writing it meanwhile. Prints each rate, the medians,
# sliced / whole (target >= 0.95) and joined / whole.
#
# Then the snapshot alone (`send --detach`: plan, write, seal) of SNAPSHOT recipients: seconds and
# peak memory. With BASELINE=<a pushcamp binary>, the sliced send and the snapshot are measured
# with it too, in the same rounds, and the ratios printed.
#
#   bench/slice-cost.sh                    # 200,000 pushes, 3 rounds, a 1,000,000-recipient snapshot
#   bench/slice-cost.sh 50000 1 100000     # a quicker look
#   BASELINE=/tmp/base/.build/release/pushcamp bench/slice-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-3}
snapshot=${3:-1000000}
slice=${SLICE:-20s}
port=${BENCH_PORT:-18443}

out=$PWD/bench/out/slice-cost
bench_setup "$out"
bench_nginx "$out" "$port"
bench_audience "$count" "$out/audience.csv"
bench_campaign "$out/campaign.yaml" slice-cost-bench 10000000/s 1
bench_postgres
trap "nginx -c '$out/nginx/nginx.conf' -s stop 2>/dev/null || true; scripts/postgres.sh stop '$pgdir/pg' >/dev/null 2>&1 || true; rm -rf '$pgdir'" EXIT
sides=(whole sliced joined)
[[ -n ${BASELINE:-} ]] && sides+=(baseline)

# journal SIDE NAME: a new database NAME, and pushcamp.yaml naming it (cut into slices unless SIDE
# is whole).
journal() {
    psql -X -q "$server" -c "CREATE DATABASE $2" >/dev/null
    url=${server/\/postgres\?/\/$2?}
    bench_project "$out" "$port"
    if [[ $1 == whole ]]; then
        printf 'journal: { url: "%s" }\n' "$url" >> "$out/pushcamp.yaml"
    else
        printf 'journal: { url: "%s", slice: %s }\n' "$url" "$slice" >> "$out/pushcamp.yaml"
    fi
}

side_binary() { [[ $1 == baseline ]] && echo "$BASELINE" || echo "$binary"; }

rm -f "$out"/*.txt
printf '%-6s %-28s %10s\n' round side pushes/s
for round in $(seq 1 "$rounds"); do
    for side in "${sides[@]}"; do
        journal "$side" "${side}_$round"
        if [[ $side == joined ]]; then
            (cd "$out" && rm -rf .pushcamp && "$binary" send --detach campaign.yaml > detach.txt)
        fi
        bench_send "$out" campaign.yaml "$(side_binary "$side")"
        slices=$(psql -X -q -A -t "$url" -c "SELECT count(*) FROM slice")
        rate=$(python3 -c "print($send_delivered / $send_seconds)")
        echo "$rate $send_cpu" >> "$out/$side.txt"
        printf '%-6s %-28s %10.0f   (%s s, %.1f s CPU, peak RSS %.1f MB, %s slices)\n' "$round" "$side" "$rate" \
            "$send_seconds" "$send_cpu" "$(python3 -c "print($send_kilobytes / 1024)")" "$slices"
    done
done

python3 - "$out" "${sides[@]}" <<'PY'
import statistics, sys
out, sides = sys.argv[1], sys.argv[2:]
rounds = {side: [line.split() for line in open(f"{out}/{side}.txt")] for side in sides}
median = {side: statistics.median(float(rate) for rate, _ in rows) for side, rows in rounds.items()}
cpu = {side: statistics.median(float(seconds) for _, seconds in rows) for side, rows in rounds.items()}
print("median: " + ", ".join(f"{side} {rate:,.0f}/s ({cpu[side]:.1f} s CPU)" for side, rate in median.items()))
print(f"sliced / whole: {median['sliced'] / median['whole']:.2f} (target >= 0.95)")
print(f"joined / whole: {median['joined'] / median['whole']:.2f} (the plan read back from a sealed snapshot)")
if "baseline" in median:
    print(f"sliced / the baseline's sliced: {median['sliced'] / median['baseline']:.2f}")
PY

bench_audience "$snapshot" "$out/audience.csv"
for side in "${sides[@]}"; do
    [[ $side == whole || $side == joined ]] && continue
    journal "$side" "snapshot_$side"
    (cd "$out" && /usr/bin/time -f '%e %M' -o time.txt "$(side_binary "$side")" send --detach campaign.yaml > detach.txt)
    read -r seconds kilobytes < "$out/time.txt"
    bytes=$(psql -X -q -A -t "$url" -c "SELECT pg_total_relation_size(c.oid) FROM pg_class c WHERE relname IN ('snapshot', 'snapshot_page')")
    printf 'snapshot of %s recipients, %-8s: %6.1f s, peak RSS %4d MB, %s MiB in the journal\n' "$snapshot" "$side" \
        "$seconds" "$((kilobytes / 1024))" "$(python3 -c "print(round($bytes / 2**20, 1))")"
done
