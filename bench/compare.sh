#!/usr/bin/env bash
# Compares pushcamp builds on the throughput benchmark's send (as many pushes as its last run
# planned: 200,000 by default), alternating run by run:
# median wall time, requests/s, CPU per push (user + sys of the whole process) and peak RSS. For
# one change at a time, after profiling; bench/throughput.sh (BASELINE=) gives the published figures.
#
#   bench/throughput.sh 200000 1          # once: sets up bench/out/throughput (nginx config, audience)
#   bench/compare.sh 5 /tmp/old/pushcamp .build/release/pushcamp
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
rounds=$1
shift
out=$PWD/bench/out/throughput
[[ -f $out/campaign.yaml ]] || { echo "run bench/throughput.sh once first" >&2; exit 1; }
binaries=()
for binary in "$@"; do binaries+=("$(realpath "$binary")"); done
nginx -c "$out/nginx/nginx.conf"
trap "nginx -c '$out/nginx/nginx.conf' -s stop 2>/dev/null || true" EXIT
sleep 0.5
rm -f "$out/compare.txt"
for round in $(seq 1 "$rounds"); do
    for binary in "${binaries[@]}"; do
        bench_send "$out" campaign.yaml "$binary"
        echo "$binary $send_seconds $send_cpu $send_kilobytes" >> "$out/compare.txt"
    done
done
python3 - "$out/compare.txt" "$(($(wc -l < "$out/audience.csv") - 1))" "${binaries[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
pushes = int(sys.argv[2])
for binary in sys.argv[3:]:
    mine = [row for row in rows if row[0] == binary]
    wall = statistics.median(float(row[1]) for row in mine)
    cpu = statistics.median(float(row[2]) for row in mine)
    peak = max(int(row[3]) for row in mine) / 1024
    print(f"{binary}: {len(mine)} runs, median {wall:.2f} s = {pushes / wall:,.0f} req/s, "
          f"CPU {cpu:.2f} s = {cpu / pushes * 1e6:.1f} us/push, peak RSS {peak:.1f} MB")
PY
