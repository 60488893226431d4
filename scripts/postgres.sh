#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: Debian's `postgresql` server, initialised into a
# folder of its own, listening on 127.0.0.1 at a free port (and on a socket in that folder only),
# trusted for local connections, never touching the machine's own clusters.
#
#   scripts/postgres.sh start DIR   initdb into DIR, start, print the URL (postgres://…) on stdout
#   scripts/postgres.sh stop DIR    stop the cluster and remove DIR
#   scripts/postgres.sh halt DIR    stop the server (a fast shutdown), keep the cluster
#   scripts/postgres.sh resume DIR  start a halted server again, on the port it had
#
# As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root), so DIR's
# parent must be one that user can enter; a folder under /tmp is. Needs: apt-get install postgresql.
#
# For a partition test, `start` takes two variables (kept for `resume`):
#   PUSHCAMP_POSTGRES_NETNS   run the server in this network namespace (ip netns; root only)
#   PUSHCAMP_POSTGRES_LISTEN  the addresses to listen on, comma-separated (default 127.0.0.1);
#                             the URL printed names the first
set -euo pipefail

command="${1:-}"
dir="${2:-}"
if [[ -z "$command" || -z "$dir" ]]; then
    echo "usage: $0 start|stop|halt|resume DIR" >&2
    exit 2
fi

bin=""
for candidate in /usr/lib/postgresql/*/bin; do
    [[ -x "$candidate/initdb" ]] && bin="$candidate"
done
if [[ -z "$bin" ]]; then
    echo "error: PostgreSQL's server is not installed (initdb not found under /usr/lib/postgresql); apt-get install postgresql" >&2
    exit 1
fi

# Runs "$@" without the descriptors this script inherited beyond stdin, stdout and stderr: the
# server outlives the script, and a descriptor it kept open (a pipe, or the socket by which a
# Swift `Process` learns that its child ended) would make whoever started the script wait for
# the server to stop.
without_inherited() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    "$@"
}

as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Starts the server of the cluster in $dir on port $1, at the addresses and in the namespace
# recorded in $dir at `start`.
start_server() {
    local run=() listen
    listen=$(cat "$dir/listen")
    if [[ -n "$(cat "$dir/netns")" ]]; then run+=(ip netns exec "$(cat "$dir/netns")"); fi
    if [[ "$(id -u)" == 0 ]]; then run+=(runuser -u postgres --); fi
    (without_inherited "${run[@]}" "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" \
        --wait --timeout=60 \
        -o "-c listen_addresses=$listen -c port=$1 -c unix_socket_directories=$dir -c fsync=off -c max_connections=300" \
        start </dev/null >/dev/null 2>"$dir/pg_ctl.log") || {
        cat "$dir/pg_ctl.log" "$dir/server.log" >&2
        exit 1
    }
}

case "$command" in
start)
    mkdir -p "$dir"
    if [[ "$(id -u)" == 0 ]]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" --pgdata="$dir/data" --username=pushcamp --auth=trust --encoding=UTF8 \
        --no-locale --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    # A free port: the kernel picks one for a socket we close at once; a clash with a server that
    # takes it meanwhile fails the start loudly rather than connecting tests to something else.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "${PUSHCAMP_POSTGRES_LISTEN:-127.0.0.1}" >"$dir/listen"
    # initdb trusts loopback only; clients on the namespace's links come from their own subnets.
    if [[ -n "${PUSHCAMP_POSTGRES_LISTEN:-}" ]]; then
        echo "host all all samenet trust" >>"$dir/data/pg_hba.conf"
    fi
    echo "${PUSHCAMP_POSTGRES_NETNS:-}" >"$dir/netns"
    start_server "$port"
    echo "$port" >"$dir/port"
    echo "postgres://pushcamp@$(cut -d, -f1 "$dir/listen"):$port/postgres?sslmode=disable"
    ;;
halt)
    as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=fast --wait stop >/dev/null
    ;;
resume)
    start_server "$(cat "$dir/port")"
    ;;
stop)
    if [[ -d "$dir/data" ]]; then
        as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop|halt|resume DIR" >&2
    exit 2
    ;;
esac
