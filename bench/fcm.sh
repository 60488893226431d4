#!/usr/bin/env bash
# Android sends against their peers on the same FCM-shaped nginx, in one run (issue #44):
#   - `pushcamp send` of an Android campaign end to end (plan + render + SQLite journal + an access
#     token from the token endpoint + HTTP/2 + report) over 1 and 4 connections, against
#     `h2load -c N -m 100` sending the very body pushcamp sends (from `plan --format json`) with the
#     same headers (target: ratio >= 0.9, as for APNs);
#   - CPU per push, user + sys of the whole process;
#   - Google's Admin SDK for Python (firebase-admin from PyPI), `messaging.send_each` in calls of 500,
#     its send URL pointed at the same nginx by bench/fcm-admin-send.py. It sends ADMIN_COUNT messages
#     (default 5,000), so its rate and CPU per message, not its time, are compared.
# Rounds alternate the sides; medians are compared.
#
#   bench/fcm.sh                 # 200,000 messages, 5 rounds
#   bench/fcm.sh 50000 1         # a quicker look
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/nginx.sh
count=${1:-200000}
rounds=${2:-5}
admin_count=${ADMIN_COUNT:-5000}
port=${BENCH_PORT:-18445}

python3 -c 'import firebase_admin' 2>/dev/null || pip install -q firebase-admin
out=$PWD/bench/out/fcm
bench_setup "$out"
bench_nginx "$out" "$port"

# A service account whose token_uri is the nginx's /token, with a fresh RSA key.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$out/sa.key" 2>/dev/null
python3 - "$out" "$port" <<'PY'
import json, sys
out, port = sys.argv[1], sys.argv[2]
key = open(f"{out}/sa.key").read()
json.dump({
    "type": "service_account", "project_id": "bench", "private_key_id": "0" * 40, "private_key": key,
    "client_email": "bench@bench.iam.gserviceaccount.com", "client_id": "1",
    "token_uri": f"https://127.0.0.1:{port}/token",
}, open(f"{out}/service-account.json", "w"))
PY
chmod 600 "$out/service-account.json"

# Android rows: registration tokens of FCM's shape, distinct.
python3 - "$count" "$out/audience.csv" <<'PY'
import random, sys, string
count, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(3)
alphabet = string.ascii_letters + string.digits + "-_"
with open(path, "w") as f:
    f.write("token,platform,first_name\n")
    for i in range(count):
        token = "".join(rng.choice(alphabet) for _ in range(22)) + ":APA91b" + "".join(rng.choice(alphabet) for _ in range(134))
        f.write("%s,android,Name%d\n" % (token, i % 1000))
PY

cat > "$out/pushcamp.yaml" <<YAML
apps:
  bench-android:
    service_account: service-account.json
    endpoint: https://127.0.0.1:$port
    ca_file: ca.pem
    # FCM's default quota (600000/min, 10,000 a second) would cap the run: measured is the sender.
    quota: 1000000000/min
YAML
for connections in 1 4; do
    cat > "$out/c$connections.yaml" <<YAML
campaign: fcm-bench
app: bench-android
audience:
  source: { csv: audience.csv }
message:
  title: Spring sale
  body: "Hello {{first_name}}, 20% off everything until Sunday"
  expiration: 1h
throttle: { rate: 10000000/s, connections: $connections }
YAML
done

# The request pushcamp sends for the first row, as h2load sends it.
(cd "$out" && "$binary" plan --format json --samples 1 c1.yaml) |
    python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["samples"][0]["payload"], separators=(",", ":"), ensure_ascii=False), end="")' \
        > "$out/body.json"

pushcamp_side() { bench_pushcamp_side "$out" "$@"; }

h2load_side() {
    local side=$1 connections=$2
    /usr/bin/time -f '%U %S' -o "$out/h2load-time.txt" h2load -n "$count" -c "$connections" -m 100 \
        -d "$out/body.json" -H "authorization: Bearer ya29.bench-access-token" \
        -H "content-type: application/json" "https://127.0.0.1:$port/v1/projects/bench/messages:send" \
        > "$out/h2load.txt"
    local rate ok user sys
    rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$out/h2load.txt")
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$out/h2load.txt")
    read -r user sys < "$out/h2load-time.txt"
    [[ $ok == "$count" ]] || { echo "h2load: $ok of $count 2xx" >&2; cat "$out/h2load.txt" >&2; exit 1; }
    echo "$rate $(python3 -c "print($user + $sys)")" >> "$out/$side.txt"
    printf '%-6s %-36s %10.0f req/s   (%s 2xx)\n' "$round" "h2load -c $connections -m 100" "$rate" "$ok"
}

admin_side() {
    REQUESTS_CA_BUNDLE=$out/ca.pem SSL_CERT_FILE=$out/ca.pem python3 bench/fcm-admin-send.py "$port" \
        "$out/service-account.json" "$out/audience.csv" "$admin_count" > "$out/admin-out.txt"
    local rate cpu
    rate=$(sed -n 's/.* s, \([0-9]*\) req\/s, .*/\1/p' "$out/admin-out.txt")
    cpu=$(sed -n 's/.* req\/s, \([0-9.]*\) s CPU$/\1/p' "$out/admin-out.txt")
    echo "$rate $cpu" >> "$out/admin.txt"
    printf '%-6s %-36s %10.0f req/s   (%s)\n' "$round" "firebase-admin send_each" "$rate" "$(cat "$out/admin-out.txt")"
}

printf '%-6s %-36s %16s\n' round side rate
for round in $(seq 1 "$rounds"); do
    pushcamp_side one c1.yaml "1 connection"
    h2load_side h2load-one 1
    pushcamp_side four c4.yaml "4 connections"
    h2load_side h2load-four 4
    admin_side
done

python3 - "$out" "$count" "$admin_count" <<'PY'
import statistics, sys
out, count, admin_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rows(name): return [[float(x) for x in line.split()] for line in open(f"{out}/{name}.txt")]
def median(name, column=0): return statistics.median(row[column] for row in rows(name))
one, four, h1, h4, admin = median("one"), median("four"), median("h2load-one"), median("h2load-four"), median("admin")
cpu1, cpu4 = median("one", 1) / count * 1e6, median("four", 1) / count * 1e6
admin_cpu = median("admin", 1) / admin_count * 1e6
print()
print("median pushcamp send, 1 connection:  %7.0f req/s, %.1f us CPU/push" % (one, cpu1))
print("median h2load -c 1 -m 100:           %7.0f req/s, %.1f us CPU/request" % (h1, median("h2load-one", 1) / count * 1e6))
print("median pushcamp send, 4 connections: %7.0f req/s, %.1f us CPU/push" % (four, cpu4))
print("median h2load -c 4 -m 100:           %7.0f req/s, %.1f us CPU/request" % (h4, median("h2load-four", 1) / count * 1e6))
print("median firebase-admin send_each:     %7.0f req/s, %.0f us CPU/message" % (admin, admin_cpu))
print("ratio pushcamp / h2load, 1 connection:  %.2f   (target >= 0.9)" % (one / h1))
print("ratio pushcamp / h2load, 4 connections: %.2f   (target >= 0.9)" % (four / h4))
print("pushcamp / firebase-admin:              %.0fx rate, %.0fx less CPU per message" % (one / admin, admin_cpu / cpu1))
PY
