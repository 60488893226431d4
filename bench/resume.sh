#!/usr/bin/env bash
# Resume start-up: how long a resumed send of a large run takes from launch to its first request,
# next to a fresh send of the same campaign, in one run. The run is killed (SIGKILL) part-way, so
# the resume reads back hundreds of thousands of journal rows, skips them in the plan and sends
# the rest. Target (issue #4): a resume of a 1,000,000-recipient run starts sending within 3 s.
#
#   bench/resume.sh               # 1,000,000 recipients, killed 6 s into the send
#   bench/resume.sh 200000 2      # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-1000000}
kill_after=${2:-6}
port=${BENCH_PORT:-18444}

out=$PWD/bench/out/resume
bench_setup "$out"
bench_nginx "$out" "$port" "$out/nginx/access.log"
bench_audience "$count" "$out/audience.csv"
bench_project "$out" "$port"
bench_campaign "$out/campaign.yaml" resume-bench 10000000/s
cd "$out"

# first_request SINCE: seconds from SINCE (epoch) to the first request nginx finished after it.
first_request() {
    sleep 1.5  # nginx flushes its log buffer every second
    python3 - "$1" nginx/access.log <<'PY'
import sys
since = float(sys.argv[1])
for line in open(sys.argv[2]):
    if float(line) >= since:
        print("%.2f" % (float(line) - since))
        break
else:
    print("none")
PY
}

# 1. A fresh send, stopped once it is sending: the baseline start-up (plan pass, TLS, first push).
start=$(date +%s.%N)
"$binary" send --quiet --journal fresh.sqlite campaign.yaml > fresh.txt 2>&1 &
pid=$!
sleep "$kill_after"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
fresh=$(first_request "$start")

# 2. The run to resume: the same send into the project's journal, killed after $kill_after s.
"$binary" send --quiet campaign.yaml > killed.txt 2>&1 &
pid=$!
sleep "$kill_after"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
"$binary" runs --format json > runs-before.json

# 3. The resume, timed from launch to its first request, then left to finish.
start=$(date +%s.%N)
/usr/bin/time -f '%e %M' -o time.txt "$binary" send --quiet campaign.yaml > resumed.txt 2> resumed.err || true
resumed=$(first_request "$start")
read -r seconds kilobytes < time.txt
"$binary" runs --format json > runs-after.json

python3 - "$count" "$fresh" "$resumed" "$seconds" "$kilobytes" <<'PY'
import json, sys
count, fresh, resumed, seconds, kilobytes = sys.argv[1:]
before = json.load(open("runs-before.json"))[0]
after = json.load(open("runs-after.json"))[0]
print("recipients:                         %s" % count)
print("settled before the resume:          %d delivered, %d in flight at the kill"
      % (before["delivered"], before["in_flight"]))
print("fresh send, launch to first request: %s s" % fresh)
print("resume, launch to first request:     %s s" % resumed)
if fresh != "none" and resumed != "none":
    print("ratio resume / fresh start-up:       %.2f" % (float(resumed) / float(fresh)))
print("resume ran %s s, peak RSS %.1f MB; run now %s, %d delivered, %d possible duplicates"
      % (seconds, int(kilobytes) / 1024, after["status"], after["delivered"], after["possible_duplicates"]))
PY
