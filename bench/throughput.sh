#!/usr/bin/env bash
# Send throughput: Pushcamp end to end (planning, rendering, HTTP/2 over TLS) against Debian's nginx,
# and h2load against the same nginx, in one run. Prints both rates, the ratio and Pushcamp's peak RSS.
# Targets (issue #3): Pushcamp >= 0.8 x h2load's requests/s over 1 connection x 100 streams; peak
# RSS <= 150 MB.
#
#   bench/throughput.sh            # 200,000 pushes, 3 rounds
#   bench/throughput.sh 50000 1    # a quicker look: 50,000 pushes, 1 round
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-200000}
rounds=${2:-3}
port=${BENCH_PORT:-18443}

need=()
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need+=(nginx)
[[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]] || need+=(libnginx-mod-http-echo)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v openssl >/dev/null || need+=(openssl)
command -v /usr/bin/time >/dev/null || need+=(time)
if ((${#need[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

swift build -c release --product pushcamp >/dev/null
binary=$PWD/.build/release/pushcamp

out=$PWD/bench/out/throughput
rm -rf "$out" && mkdir -p "$out/nginx"

# TLS: a CA and a 127.0.0.1 server certificate for nginx; a P-256 key for provider tokens.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
    -addext "basicConstraints=critical,CA:TRUE" -keyout "$out/ca.key" -out "$out/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$out/server.key" -out "$out/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$out/ext.cnf"
openssl x509 -req -in "$out/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" -CAcreateserial -days 2 \
    -extfile "$out/ext.cnf" -out "$out/server.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$out/key.p8" 2>/dev/null

cat > "$out/nginx/nginx.conf" <<NGINX
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
error_log $out/nginx/error.log warn;
pid $out/nginx/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $out/nginx/body;
    keepalive_requests 100000000;
    http2_max_concurrent_streams 100;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $out/server.pem;
        ssl_certificate_key $out/server.key;
        location /3/device/ {
            echo_read_request_body;
            echo -n "";
            add_header apns-id \$http_apns_id always;
        }
    }
}
NGINX
nginx -c "$out/nginx/nginx.conf"
trap 'nginx -c "$out/nginx/nginx.conf" -s stop 2>/dev/null || true' EXIT
sleep 0.5

# The campaign: one alert with a rendered name, to every row of a generated audience.
python3 - "$count" "$out/audience.csv" <<'PY'
import random, sys
count, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(3)
with open(path, "w") as f:
    f.write("token,first_name\n")
    for i in range(count):
        f.write("%064x,Name%d\n" % (rng.getrandbits(256), i % 1000))
PY
cat > "$out/pushcamp.yaml" <<YAML
apps:
  bench:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: key.p8
    endpoint: https://127.0.0.1:$port
    ca_file: ca.pem
YAML
cat > "$out/campaign.yaml" <<'YAML'
campaign: throughput-bench
app: bench
audience:
  source: { csv: audience.csv }
message:
  push_type: alert
  priority: 10
  expiration: 1h
  payload:
    aps:
      alert: { title: "Spring sale", body: "Hello {{first_name}}, 20% off everything until Sunday" }
      sound: default
throttle: { rate: 10000000/s, connections: 1 }
YAML

# The same h2load request: same headers and payload size, 1 connection x 100 streams.
body='{"aps":{"alert":{"title":"Spring sale","body":"Hello Name123, 20% off everything until Sunday"},"sound":"default"}}'
printf '%s' "$body" > "$out/body.json"
token=$(sed -n '2s/,.*//p' "$out/audience.csv")

# Rounds alternate the two sides so a noisy neighbour hurts both alike; medians are compared.
printf '%-6s %-34s %12s\n' "round" "" "requests/s"
for round in $(seq 1 "$rounds"); do
    # Pushcamp: plan + render + send, 1 connection.
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$binary" send --quiet "$out/campaign.yaml" > "$out/report.txt"
    read -r seconds kilobytes < "$out/time.txt"
    delivered=$(sed -n 's/^delivered \([0-9]*\),.*/\1/p' "$out/report.txt")
    rate=$(python3 -c "print($delivered / $seconds)")
    echo "$rate $kilobytes" >> "$out/pushcamp.txt"
    printf '%-6s %-34s %12.0f   (%s delivered in %s s, peak RSS %.1f MB)\n' "$round" "pushcamp send (plan+render+send)" \
        "$rate" "$delivered" "$seconds" "$(python3 -c "print($kilobytes / 1024)")"

    h2load -n "$count" -c 1 -m 100 -d "$out/body.json" \
        -H "authorization: bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJBQkNERTEyMzQ1IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXBsYWNlaG9sZGVyLW9mLXRoZS1zYW1lLWxlbmd0aC1hcy1hbi1FUzI1Ni1zaWduYXR1cmUtMTIzNDU2Nzg" \
        -H "apns-id: 5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b" -H "apns-topic: com.example.shop" \
        -H "apns-push-type: alert" -H "apns-priority: 10" -H "apns-expiration: 1767225600" \
        "https://127.0.0.1:$port/3/device/$token" > "$out/h2load.txt"
    h2load_rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$out/h2load.txt")
    h2load_ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$out/h2load.txt")
    echo "$h2load_rate" >> "$out/h2load-rates.txt"
    printf '%-6s %-34s %12.0f   (%s 2xx)\n' "$round" "h2load -c 1 -m 100" "$h2load_rate" "$h2load_ok"
done

python3 - "$out/pushcamp.txt" "$out/h2load-rates.txt" <<'PY'
import statistics, sys
pushcamp = [line.split() for line in open(sys.argv[1])]
rates = [float(rate) for rate, _ in pushcamp]
peak = max(int(kb) for _, kb in pushcamp) / 1024
h2load = [float(line) for line in open(sys.argv[2])]
print("median pushcamp send: %.0f req/s (peak RSS %.1f MB)" % (statistics.median(rates), peak))
print("median h2load:        %.0f req/s" % statistics.median(h2load))
print("ratio pushcamp / h2load: %.2f" % (statistics.median(rates) / statistics.median(h2load)))
PY
