#!/usr/bin/env bash
# Engagement import at scale, in one run: a test campaign (two variants, a 10% holdout, people
# by user id) sent to COUNT recipients through nginx, then `pushcamp engagement import` of a
# file of COUNT rows (one event each) and of one of EVENTS × COUNT rows (EVENTS events per
# recipient), each timed with its peak memory. Time per row of the large file against the small
# one says whether import is linear; their peak memory, whether it is bounded. The send of the
# same audience as one message (nothing kept) against the test (its assignment kept before the
# first push) says what keeping the assignment costs a send.
#
#   bench/engagement.sh               # 1,000,000 recipients, 10,000,000 rows
#   bench/engagement.sh 100000 10     # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-1000000}
events=${2:-10}
port=${BENCH_PORT:-18444}

out=$PWD/bench/out/engagement
bench_setup "$out"
bench_nginx "$out" "$port"
bench_project "$out" "$port"
python3 - "$count" "$out/audience.csv" <<'PY'
import random, sys
count, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(3)
with open(path, "w") as f:
    f.write("token,user_id,first_name\n")
    for i in range(count):
        f.write("%064x,u%d,Name%d\n" % (rng.getrandbits(256), i, i % 1000))
PY
bench_campaign "$out/plain.yaml" engagement-plain 10000000/s 4
bench_campaign "$out/test.yaml" engagement-test 10000000/s 4
python3 - "$out/test.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("  source: { csv: audience.csv }\n", "  source: { csv: audience.csv }\n  user_key: user_id\n")
text = text.replace("throttle:", "  variants:\n    - { name: control, weight: 50 }\n    - { name: urgency, weight: 50 }\n  holdout: 10%\nthrottle:")
open(path, "w").write(text)
PY
# events_file PER PATH: PER events (e0, e1…) for each of the $count recipients, by user, an event
# name at a time.
events_file() {
    python3 - "$count" "$1" "$2" <<'PY'
import sys
count, per, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(path, "w", buffering=1 << 20) as f:
    f.write("user,event,time\n")
    for e in range(per):
        for i in range(count):
            f.write("u%d,e%d,%d\n" % (i, e, 4102444800 + i % 86400))
PY
}
events_file 1 "$out/events-small.csv"
events_file "$events" "$out/events-large.csv"

# timed LABEL COMMAND...: runs COMMAND in $out, prints its seconds and peak RSS; sets seconds, kilobytes.
timed() {
    local label=$1
    shift
    (cd "$out" && /usr/bin/time -f '%e %M' -o time.txt "$@" > output.txt)
    read -r seconds kilobytes < "$out/time.txt"
    printf '%-44s %8.2f s   peak RSS %7.1f MB\n' "$label" "$seconds" "$(python3 -c "print($kilobytes / 1024)")"
}

rm -rf "$out/.pushcamp"
timed "send, one message (nothing kept)" "$binary" send --quiet plain.yaml
plain=$seconds
timed "send, the test (assignment kept first)" "$binary" send --quiet test.yaml
test=$seconds
small_rows=$count
large_rows=$((count * events))
timed "import $small_rows rows" "$binary" engagement import events-small.csv --campaign test.yaml
small=$seconds
small_kb=$kilobytes
head -1 "$out/output.txt"
timed "import $large_rows rows" "$binary" engagement import events-large.csv --campaign test.yaml
large=$seconds
large_kb=$kilobytes
head -3 "$out/output.txt"
journal_mb=$(python3 -c "import os; print(os.path.getsize('$out/.pushcamp/journal.sqlite') / 1e6)")
python3 - "$plain" "$test" "$small" "$large" "$small_rows" "$large_rows" "$small_kb" "$large_kb" "$journal_mb" <<'PY'
import sys
plain, test, small, large = map(float, sys.argv[1:5])
small_rows, large_rows, small_kb, large_kb = map(int, sys.argv[5:9])
journal = float(sys.argv[9])
print("send with the assignment kept / without: %.2f" % (test / plain))
print("import: %.0f rows/s (%d rows), %.0f rows/s (%d rows)" % (small_rows / small, small_rows, large_rows / large, large_rows))
print("time per row, large / small file: %.2f (1.00 is linear)" % ((large / large_rows) / (small / small_rows)))
print("peak memory, large / small file: %.2f" % (large_kb / small_kb))
print("journal: %.0f MB" % journal)
PY
