#!/usr/bin/env bash
# Local-time planning benchmark (issue #15): plans a campaign sent at 09:00 on each recipient's
# clock, with quiet hours, over a generated audience spread across 300 IANA zones, and the same
# campaign sent to everyone at once, alternately, in one run; prints each side's median, the
# ratio, peak RSS and the timeline's spread.
#
#   bench/local-time.sh              # 1,000,000 recipients, 3 rounds
#   bench/local-time.sh 200000 5     # other sizes and rounds
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000000}
rounds=${2:-3}

command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
swift build -c release --product pushcamp >/dev/null
binary=.build/release/pushcamp

out=bench/out/local-time
mkdir -p "$out"
cat > "$out/pushcamp.yaml" <<'YAML'
apps:
  shop-ios:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: ${env:SHOP_APNS_KEY_FILE}
YAML
csv="$out/audience-$size.csv"
[[ -f "$csv" ]] || python3 - "$size" "$csv" <<'PY'
import random, sys, zoneinfo
count, path = int(sys.argv[1]), sys.argv[2]
# 300 zones of the system's database, spread over the alphabet (and so over the offsets).
zones = sorted(z for z in zoneinfo.available_timezones() if "/" in z and not z.startswith(("Etc/", "SystemV/", "posix/", "right/")))
step = len(zones) / 300
zones = [zones[int(i * step)] for i in range(300)]
rng = random.Random(20271115)
with open(path, "w", buffering=1 << 20) as out:
    out.write("token,first_name,tz\n")
    for i in range(count):
        # 2% without a zone: they fall back.
        zone = "" if rng.random() < 0.02 else rng.choice(zones)
        out.write("%064x,Name%d,%s\n" % (rng.getrandbits(256), i % 1000, zone))
PY
ln -sf "audience-$size.csv" "$out/audience.csv"
common='campaign: NAME
app: shop-ios
audience: { source: { csv: audience.csv } }
message:
  payload: { aps: { alert: { title: "Good morning {{first_name}}" } } }
  expiration: 12h'
echo "${common/NAME/at-once}" > "$out/at-once.yaml"
{
    echo "${common/NAME/local-time}"
    echo 'schedule: { at: "2027-03-20T09:00", timezone: recipient, zone_attribute: tz, fallback: America/New_York }'
    echo 'quiet_hours: { from: "21:00", to: "08:00" }'
} > "$out/local-time.yaml"

plan() { # campaign → "seconds kilobytes"
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$binary" plan --samples 0 --format json "$out/$1.yaml" > "$out/$1.json"
    cat "$out/time.txt"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

: > "$out/at-once.times"
: > "$out/local-time.times"
for ((round = 1; round <= rounds; round++)); do
    for side in at-once local-time; do
        read -r seconds kilobytes < <(plan "$side")
        echo "$seconds $kilobytes" >> "$out/$side.times"
        printf 'round %d  %-10s %6.2f s  %6.1f MB\n' "$round" "$side" "$seconds" "$(python3 -c "print($kilobytes / 1024)")"
    done
done
once=$(cut -d' ' -f1 "$out/at-once.times" | median)
local=$(cut -d' ' -f1 "$out/local-time.times" | median)
rss=$(cut -d' ' -f2 "$out/local-time.times" | sort -n | tail -1)
python3 - "$size" "$once" "$local" "$rss" "$out/local-time.json" <<'PY'
import json, sys
size, once, local, rss, path = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
plan = json.load(open(path))
timeline = plan["timeline"]
hours = timeline["by_hour"]
print(f"{size:,} recipients, 300 zones: at once {once:.2f} s, local time + quiet hours {local:.2f} s "
      f"({size / local:,.0f}/s), ratio {local / once:.2f}; peak RSS {rss / 1024:.1f} MB")
print(f"planned {plan['planned']:,} over {len(hours)} UTC hours ({hours[0]['hour']} to {hours[-1]['hour']}); "
      f"fell back {timeline['fell_back']:,}, deferred {timeline['deferred']:,}, dropped {timeline['dropped']}")
PY
