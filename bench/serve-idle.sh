#!/usr/bin/env bash
# The scheduler's cost while idle (issue #15): CPU seconds per minute of `pushcamp serve` watching
# 100 scheduled campaigns whose slots do not come during the measure, against the same serve
# watching none, in one run; prints both and the difference per campaign.
#
#   bench/serve-idle.sh          # 60 s each
#   bench/serve-idle.sh 20       # shorter
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
swift build -c release --product pushcamp >/dev/null
binary=$PWD/.build/release/pushcamp
ticks=$(getconf CLK_TCK)

project() { # dir count
    rm -rf "$1"
    mkdir -p "$1/campaigns"
    cat > "$1/pushcamp.yaml" <<'YAML'
apps:
  shop-ios:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: ${env:SHOP_APNS_KEY_FILE}
serve: { listen: "127.0.0.1:0" }
YAML
    printf 'token,first_name\n%064x,Ada\n' 1 > "$1/audience.csv"
    zones=(Europe/Paris America/New_York Asia/Tokyo Australia/Sydney America/Sao_Paulo)
    for ((i = 0; i < $2; i++)); do
        cat > "$1/campaigns/c$i.yaml" <<YAML
campaign: c$i
app: shop-ios
audience: { source: { csv: audience.csv } }
message: { payload: { aps: { alert: "hi {{first_name}}" } } }
schedule: { cron: "$((i % 60)) 9 1 1 *", timezone: ${zones[$((i % 5))]} }
YAML
    done
}

measure() { # dir → CPU seconds over the measure
    (cd "$1" && exec "$binary" serve --log-level warning) &
    local pid=$!
    sleep 5 # start-up: every campaign read once
    local before after
    before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    sleep "$seconds"
    after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    kill -INT "$pid"
    wait "$pid" || true
    python3 -c "print(($after - $before) / $ticks)"
}

out=bench/out/serve-idle
project "$out/none" 0
project "$out/hundred" 100
none=$(measure "$out/none")
hundred=$(measure "$out/hundred")
python3 - "$seconds" "$none" "$hundred" <<'PY'
import sys
seconds, none, hundred = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
per_minute = lambda cpu: cpu * 60 / seconds
print(f"serve idle, CPU per minute: no campaigns {per_minute(none):.3f} s, 100 scheduled campaigns "
      f"{per_minute(hundred):.3f} s ({per_minute(hundred) / 60 * 100:.2f}% of a core); "
      f"{(per_minute(hundred) - per_minute(none)) * 1000 / 100:.2f} ms per campaign per minute")
PY
