# Shared by the send benchmarks: TLS material, a provider-token key, an APNs-shaped nginx on
# 127.0.0.1, a generated audience and the project file. Source it, then call the functions.

# Installs what a fresh machine lacks for the benchmarks.
bench_install() {
    local need=()
    command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need+=(nginx)
    [[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]] || need+=(libnginx-mod-http-echo)
    command -v h2load >/dev/null || need+=(nghttp2-client)
    command -v openssl >/dev/null || need+=(openssl)
    command -v /usr/bin/time >/dev/null || need+=(time)
    /usr/bin/python3 -c 'import aioapns' 2>/dev/null || need+=(python3-aioapns)
    if ((${#need[@]})); then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    fi
}

# bench_setup DIR: installs what is missing, builds pushcamp (release) into $binary, and makes DIR
# afresh with TLS material in it.
bench_setup() {
    bench_install
    swift build -c release --product pushcamp >/dev/null
    binary=$PWD/.build/release/pushcamp
    rm -rf "$1" && mkdir -p "$1"
    bench_tls "$1"
}

# bench_tls DIR: a CA and a 127.0.0.1 server certificate for nginx; a P-256 key for provider tokens.
bench_tls() {
    local out=$1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
        -addext "basicConstraints=critical,CA:TRUE" -keyout "$out/ca.key" -out "$out/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$out/server.key" -out "$out/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$out/ext.cnf"
    openssl x509 -req -in "$out/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" -CAcreateserial -days 2 \
        -extfile "$out/ext.cnf" -out "$out/server.pem" 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$out/key.p8" 2>/dev/null
}

# bench_nginx DIR PORT [ACCESS_LOG]: starts nginx answering /3/device/ like APNs (200, apns-id
# echoed) after reading the body. With ACCESS_LOG, each request's end time ($msec) is logged there.
# Stopped when the script exits.
bench_nginx() {
    local out=$1 port=$2 log=${3:-}
    local access="access_log off;"
    [[ -n $log ]] && access="log_format msec '\$msec'; access_log $log msec buffer=256k flush=1s;"
    mkdir -p "$out/nginx"
    cat > "$out/nginx/nginx.conf" <<NGINX
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
error_log $out/nginx/error.log warn;
pid $out/nginx/nginx.pid;
events { worker_connections 1024; }
http {
    $access
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
        # FCM HTTP v1's shape (bench/fcm.sh): an OAuth token endpoint and messages:send.
        location = /token {
            echo_read_request_body;
            default_type application/json;
            echo -n '{"access_token":"ya29.bench-access-token","expires_in":3599,"token_type":"Bearer"}';
        }
        location /v1/projects/ {
            echo_read_request_body;
            default_type application/json;
            echo -n '{"name":"projects/bench/messages/0:1700000000000000%0"}';
        }
    }
}
NGINX
    nginx -c "$out/nginx/nginx.conf"
    trap "nginx -c '$out/nginx/nginx.conf' -s stop 2>/dev/null || true" EXIT
    sleep 0.5
}

# bench_audience COUNT FILE: token,first_name rows with random, distinct tokens.
bench_audience() {
    python3 - "$1" "$2" <<'PY'
import random, sys
count, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(3)
with open(path, "w") as f:
    f.write("token,first_name\n")
    for i in range(count):
        f.write("%064x,Name%d\n" % (rng.getrandbits(256), i % 1000))
PY
}

# bench_project DIR PORT: pushcamp.yaml with one app whose endpoint is the nginx above.
bench_project() {
    cat > "$1/pushcamp.yaml" <<YAML
apps:
  bench:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: key.p8
    endpoint: https://127.0.0.1:$2
    ca_file: ca.pem
YAML
}

# bench_campaign FILE ID RATE [CONNECTIONS [SOURCE]]: one rendered alert to every row of
# audience.csv (or of SOURCE, an audience source in YAML), over 1 connection (or CONNECTIONS).
bench_campaign() {
    cat > "$1" <<YAML
campaign: $2
app: bench
audience:
  source: ${5:-"{ csv: audience.csv }"}
message:
  push_type: alert
  priority: 10
  expiration: 1h
  payload:
    aps:
      alert: { title: "Spring sale", body: "Hello {{first_name}}, 20% off everything until Sunday" }
      sound: default
throttle: { rate: $3, connections: ${4:-1} }
YAML
}

# bench_send DIR CAMPAIGN BINARY [ARGS...]: one `send --quiet` of DIR/CAMPAIGN with a fresh journal
# (every send is a new run of the whole audience), timed; sets send_seconds, send_cpu (user + sys),
# send_kilobytes (peak RSS) and send_delivered, and stops the benchmark if not everyone was delivered.
bench_send() {
    local dir=$1 campaign=$2 binary
    binary=$(realpath "$3")
    shift 3
    rm -rf "$dir/.pushcamp"
    (cd "$dir" && /usr/bin/time -f '%e %U %S %M' -o time.txt "$binary" send --quiet "$@" "$campaign" > report.txt)
    local user sys
    read -r send_seconds user sys send_kilobytes < "$dir/time.txt"
    send_cpu=$(python3 -c "print($user + $sys)")
    send_delivered=$(sed -n 's/^delivered \([0-9]*\),.*/\1/p' "$dir/report.txt")
    local rows=$(($(wc -l < "$dir/audience.csv") - 1))
    [[ $send_delivered == "$rows" ]] || {
        echo "pushcamp delivered ${send_delivered:-nothing} of $rows:" >&2
        cat "$dir/report.txt" >&2
        exit 1
    }
}

# bench_h2load_command DIR PORT COUNT CONNECTIONS COLLAPSE_ID: sets h2load_command to the h2load
# run with the request a bench_campaign send makes (same headers, a body of the same size, the
# first row's token), 100 streams per connection.
bench_h2load_command() {
    local dir=$1 port=$2 count=$3 connections=$4 collapse=$5
    printf '%s' '{"aps":{"alert":{"title":"Spring sale","body":"Hello Name123, 20% off everything until Sunday"},"sound":"default"}}' \
        > "$dir/body.json"
    local token
    token=$(sed -n '2s/,.*//p' "$dir/audience.csv")
    h2load_command=(h2load -n "$count" -c "$connections" -m 100 -d "$dir/body.json"
        -H "authorization: bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJBQkNERTEyMzQ1IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXBsYWNlaG9sZGVyLW9mLXRoZS1zYW1lLWxlbmd0aC1hcy1hbi1FUzI1Ni1zaWduYXR1cmUtMTIzNDU2Nzg"
        -H "apns-id: 5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b" -H "apns-topic: com.example.shop"
        -H "apns-push-type: alert" -H "apns-priority: 10" -H "apns-expiration: 1767225600"
        -H "apns-collapse-id: $collapse"
        "https://127.0.0.1:$port/3/device/$token")
}

# bench_h2load DIR PORT COUNT CONNECTIONS COLLAPSE_ID: runs bench_h2load_command's h2load; sets
# h2load_rate, h2load_ok (2xx answers) and h2load_cpu (user + sys).
bench_h2load() {
    local dir=$1
    bench_h2load_command "$@"
    /usr/bin/time -f '%U %S' -o "$dir/h2load-time.txt" "${h2load_command[@]}" > "$dir/h2load.txt"
    h2load_rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$dir/h2load.txt")
    h2load_ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$dir/h2load.txt")
    local user sys
    read -r user sys < "$dir/h2load-time.txt"
    h2load_cpu=$(python3 -c "print($user + $sys)")
}

# bench_postgres: installs Debian's PostgreSQL when missing and starts a throwaway cluster (on a
# free loopback port) in a folder the postgres user can enter; sets pgdir and server (its URL).
# The caller's EXIT trap stops it: scripts/postgres.sh stop "$pgdir/pg"; rm -rf "$pgdir".
bench_postgres() {
    command -v psql >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }
    pgdir=$(mktemp -d /tmp/pushcamp-bench-pg.XXXXXX)
    chmod 755 "$pgdir"
    server=$(scripts/postgres.sh start "$pgdir/pg")
}

# bench_pushcamp_side OUT SIDE CAMPAIGN LABEL: one `bench_send` of OUT/CAMPAIGN with $binary; appends
# "rate cpu-seconds peak-KB" to OUT/SIDE.txt and prints a line for round $round.
bench_pushcamp_side() {
    local out=$1 side=$2 campaign=$3 label=$4
    bench_send "$out" "$campaign" "$binary"
    python3 -c "print($send_delivered / $send_seconds, $send_cpu, $send_kilobytes)" >> "$out/$side.txt"
    printf '%-6s %-36s %10.0f req/s   (%.2f s, CPU %.2f s = %.1f us/push, peak RSS %.1f MB)\n' "$round" \
        "pushcamp send, $label" "$(python3 -c "print($send_delivered / $send_seconds)")" "$send_seconds" \
        "$send_cpu" "$(python3 -c "print($send_cpu / $send_delivered * 1e6)")" \
        "$(python3 -c "print($send_kilobytes / 1024)")"
}
