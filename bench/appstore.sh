#!/usr/bin/env bash
# App Store receiver benchmark (issue #16): the release `pushcamp serve` receiving signed
# notifications on loopback, each a new one to verify and store (a synchronous SQLite commit):
# wrk at full speed (throughput), then an open-loop 200/s (latency). Targets: >= 1,000
# notifications/s, p99 under 50 ms at 200/s.
#
#   bench/appstore.sh              # 10 s at full speed, 10 s at 200/s
#   BINARY=/tmp/before/.build/release/pushcamp bench/appstore.sh
#                                  # another build (an older one, for before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
python3 -c "import cryptography" 2>/dev/null || pip install -q cryptography
if [[ -n "${BINARY:-}" ]]; then
    binary=$(realpath "$BINARY")
else
    swift build -c release --product pushcamp >/dev/null
    binary=$PWD/.build/release/pushcamp
fi

out=bench/out/appstore
rm -rf "$out" && mkdir -p "$out/project"
count=$((seconds * 3000 + seconds * 200 + 1000))
python3 bench/appstore-sign.py "$count" "$out"
cp "$out/root.pem" "$out/project/root.pem"
cat > "$out/project/pushcamp.yaml" <<'YAML'
apps:
  shop-ios:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: ${env:SHOP_APNS_KEY_FILE}
    app_store:
      bundle_id: com.example.shop
      app_apple_id: 1234567890
      trusted_roots: [root.pem]
serve: { listen: "127.0.0.1:0", campaigns: [] }
YAML
(cd "$out/project" && exec "$binary" serve --log-level notice 2> serve.log) &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "listening on" "$out/project/serve.log" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$out/project/serve.log" | head -1 | cut -d: -f3)
[[ -n "$port" ]] || { cat "$out/project/serve.log"; exit 1; }
url="http://127.0.0.1:$port/app-store/notifications"

echo "full speed, wrk -t2 -c16, ${seconds} s:"
wrk -t2 -c16 -d"${seconds}s" -s bench/appstore-post.lua "$url" -- "$PWD/$out/bodies.jsonl" | grep -E "Requests/sec|wrk:"
echo "200/s, open loop, ${seconds} s:"
python3 bench/appstore-rate.py 127.0.0.1 "$port" /app-store/notifications "$out/bodies.jsonl" 200 "$seconds" \
    $((seconds * 3000 + 500))
kill -INT $pid
wait $pid || true
trap - EXIT
stored=$(cd "$out/project" && "$binary" appstore notifications --limit 1000000 --format json | python3 -c \
    "import json,sys; print(sum(1 for r in json.load(sys.stdin) if r['kept'] == 'stored'))")
echo "stored: $stored notifications (one row per UUID)"
