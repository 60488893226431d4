#!/usr/bin/env bash
# The chaos test of one run sent by several workers (issue #29, docs/scale-out.md): one
# PostgreSQL and `pushcamp sim` (recording every request: token, apns-id, connection, client
# address, time) in one network namespace, three `pushcamp serve` workers each in a namespace of
# its own, joined to it by two veth links (one to PostgreSQL, one to the simulator). A campaign of
# COUNT recipients at RATE a second (about a minute) is planned into the journal with
# `send --detach`; the workers send its slices. During the run:
#   - one worker is killed (SIGKILL) and started again;
#   - another is stopped (SIGSTOP) for longer than its lease, then continued;
#   - the third's link to PostgreSQL is cut for longer than its lease (its link to the
#     simulator stays up), then mended.
# Then it prints and checks what the simulator received against what the journal says:
#   - every deliverable token delivered;
#   - every token received more than once is in the run's list of possible duplicates;
#   - no request of a slice arrived from a worker after another worker claimed the slice (the
#     paused and the cut-off worker stopped in time: APNs cannot check a fence);
#   - the rate over every 10 s window at most 5% over the campaign's;
#   - one provider token for the whole run;
#   - the time from each failure to the takeover of its slices.
#
#   scripts/chaos.sh [SEED]    # SEED (default random) picks who fails how, and when
#
# CHAOS_COUNT (300000), CHAOS_RATE (5000), CHAOS_KEEP=1 keeps the folder (logs, received.csv),
# PUSHCAMP_BINARY (.build/release/pushcamp). Needs root (ip netns, veth pairs), iproute2,
# PostgreSQL's server (scripts/postgres.sh) and python3. Exits 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
binary=${PUSHCAMP_BINARY:-$repo/.build/release/pushcamp}
count=${CHAOS_COUNT:-300000}
rate=${CHAOS_RATE:-5000}
lease=3
seed=${1:-$((RANDOM * 32768 + RANDOM))}

if [[ $(id -u) != 0 ]]; then
    echo "error: the chaos test needs root (ip netns, veth pairs)" >&2
    exit 1
fi
if [[ ! -x $binary ]]; then
    echo "error: $binary not found: build first (swift build -c release)" >&2
    exit 1
fi
for tool in ip python3 psql; do
    command -v "$tool" >/dev/null || {
        echo "error: $tool not found (apt-get install iproute2 python3 postgresql)" >&2
        exit 1
    }
done

RANDOM=$seed
dir=$(mktemp -d "${TMPDIR:-/tmp}/pushcamp-chaos.XXXXXX")
chmod 755 "$dir"
tag=$(printf '%04x' $((RANDOM % 65536)))
net=$((RANDOM % 250 + 1))
hub=pcc$tag-hub
sim_address=10.232.$net.1
pg_address=10.232.$net.2
workers=(1 2 3)
pids=("" "" "" "")
sim_pid=""

now() { date +%s.%N | cut -c1-14; }
in_hub() { ip netns exec "$hub" "$@"; }
# The address of link KIND (p: PostgreSQL, s: simulator) of worker I, at the hub's end (h) or
# the worker's (w): a /30 each, in 10.233.NET.0/24.
address() {
    local base=$(($2 * 8)) end=2
    [[ $1 == s ]] && base=$((base + 4))
    [[ $3 == h ]] && end=1
    echo "10.233.$net.$((base + end))"
}

cleanup() {
    local pid
    for pid in "${pids[@]}" $sim_pid; do
        [[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    done
    scripts/postgres.sh stop "$dir/pg" >/dev/null 2>&1 || true
    for i in "${workers[@]}"; do ip netns delete "pcc$tag-w$i" 2>/dev/null || true; done
    ip netns delete "$hub" 2>/dev/null || true
    if [[ ${CHAOS_KEEP:-} == 1 ]]; then echo "kept: $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT

# The namespaces: the hub holds the simulator's and PostgreSQL's addresses on its loopback; each
# worker reaches each over a link of its own, so one can be cut while the other stays up.
ip netns add "$hub"
in_hub ip link set lo up
in_hub ip addr add "$sim_address/32" dev lo
in_hub ip addr add "$pg_address/32" dev lo
for i in "${workers[@]}"; do
    ns=pcc$tag-w$i
    ip netns add "$ns"
    ip netns exec "$ns" ip link set lo up
    for kind in p s; do
        worker_end=pcc$tag$kind${i}w
        hub_end=pcc$tag$kind${i}h
        ip link add "$worker_end" type veth peer name "$hub_end"
        ip link set "$worker_end" netns "$ns"
        ip link set "$hub_end" netns "$hub"
        ip netns exec "$ns" ip addr add "$(address $kind "$i" w)/30" dev "$worker_end"
        ip netns exec "$ns" ip link set "$worker_end" up
        in_hub ip addr add "$(address $kind "$i" h)/30" dev "$hub_end"
        in_hub ip link set "$hub_end" up
    done
    ip netns exec "$ns" ip route add "$pg_address/32" via "$(address p "$i" h)"
    ip netns exec "$ns" ip route add "$sim_address/32" via "$(address s "$i" h)"
done

url=$(PUSHCAMP_POSTGRES_NETNS=$hub PUSHCAMP_POSTGRES_LISTEN=$pg_address scripts/postgres.sh start "$dir/pg")
sql() { in_hub psql -X -q -A -t "$url" -c "$1"; }

# The project: one app sending to the simulator, one campaign, its audience (0.1% of its tokens
# unregistered, answered 410).
project=$dir/project
mkdir -p "$project/campaigns" "$project/audiences" "$project/sim"
python3 - "$count" "$seed" "$project/audiences/chaos.csv" "$dir/unregistered.txt" <<'PY'
import random, sys
count, seed, audience, unregistered = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
with open(audience, "w") as out, open(unregistered, "w") as bad:
    out.write("token,name\n")
    for i in range(count):
        token = "%064x" % rng.getrandbits(256)
        out.write(f"{token},Name{i}\n")
        if i % 1000 == 999:
            bad.write(f"{token} unregistered\n")
PY
cat > "$project/pushcamp.yaml" <<YAML
apps:
  shop:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: sim/key.p8
    endpoint: https://$sim_address:8443
    ca_file: sim/ca.pem
journal: { url: "$url", lease: ${lease}s, slice: 5s }
YAML
cat > "$project/campaigns/chaos.yaml" <<YAML
campaign: chaos
app: shop
audience:
  source: { csv: audiences/chaos.csv }
message:
  payload: { aps: { alert: "hi {{name}}" } }
throttle: { rate: $rate/s, connections: 2 }
YAML

ip netns exec "$hub" "$binary" sim --host "$sim_address" --port 8443 --state-dir "$project/sim" --team-id ABCDE12345 \
    --topic com.example.shop --tokens "$dir/unregistered.txt" --record "$dir/received.csv" \
    >"$dir/sim.out" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$dir/sim.out" && break; sleep 0.1; done
grep -q "listening on" "$dir/sim.out" || {
    cat "$dir/sim.out" >&2
    exit 1
}

# start_worker I: `serve` in worker I's namespace, logging JSON lines to w-I.log (appended: a
# restarted worker is the same worker, at the same addresses).
start_worker() {
    local log=$dir/w-$1.log
    local before
    before=$(grep -c "listening on" "$log" 2>/dev/null || true)
    (cd "$project" && exec ip netns exec "pcc$tag-w$1" "$binary" serve --listen 127.0.0.1:0 \
        --log-format json --log-level debug) 2>>"$log" >/dev/null &
    pids[$1]=$!
    for _ in $(seq 1 300); do
        (($(grep -c "listening on" "$log" 2>/dev/null || true) > ${before:-0})) && return
        sleep 0.1
    done
    echo "error: worker $1 did not start" >&2
    cat "$log" >&2
    exit 1
}
for i in "${workers[@]}"; do start_worker "$i"; done

(cd "$project" && ip netns exec "pcc$tag-w1" "$binary" send --detach campaigns/chaos.yaml </dev/null) \
    >"$dir/detach.txt" 2>&1 || {
    cat "$dir/detach.txt" >&2
    exit 1
}
run=$(sql "SELECT id FROM run WHERE campaign = 'chaos'")
started=$(now)
echo "seed $seed: run $run of $count recipients at $rate/s, lease ${lease}s, three workers"

# holds I: whether worker I holds a live slice lease of the run.
holds() {
    local held
    held=$(sql "SELECT count(*) FROM lease WHERE resource LIKE 'run:$run/slice:%' AND split_part(owner, '/', 2) = '${pids[$1]}' AND expires_at > extract(epoch FROM clock_timestamp())")
    ((held > 0))
}
# at SECONDS I: waits until SECONDS after the run started, then until worker I holds a slice.
at() {
    local wait
    wait=$(python3 -c "print(max(0, $started + $1 - $(now)))")
    sleep "$wait"
    for _ in $(seq 1 100); do holds "$2" && return; sleep 0.1; done
    echo "error: worker $2 held no slice $1 s into the run" >&2
    exit 1
}
failure() { echo "$1 $2 $(now)" >>"$dir/failures.txt"; }
# say TEXT [AT]: TEXT, after the seconds since the run started (until AT, default now).
say() { printf '  %5.1f s  %s\n' "$(python3 -c "print(${2:-$(now)} - $started)")" "$1"; }

# Who fails how, and when: picked by the seed.
orders=("1 2 3" "1 3 2" "2 1 3" "2 3 1" "3 1 2" "3 2 1")
read -r killed paused cut <<<"${orders[RANDOM % 6]}"
t_kill=$((6 + RANDOM % 6))
t_stop=$((t_kill + 10 + RANDOM % 5))
t_cut=$((t_stop + 10 + RANDOM % 5))

at "$t_kill" "$killed"
kill -KILL "${pids[$killed]}"
failure killed "$killed"
wait "${pids[$killed]}" 2>/dev/null || true
say "worker $killed killed (SIGKILL)"
sleep $((2 + RANDOM % 3))
start_worker "$killed"
say "worker $killed started again"

at "$t_stop" "$paused"
kill -STOP "${pids[$paused]}"
failure paused "$paused"
say "worker $paused stopped (SIGSTOP)"
sleep $((lease + 2 + RANDOM % 3))
kill -CONT "${pids[$paused]}"
say "worker $paused continued (SIGCONT)"

at "$t_cut" "$cut"
in_hub ip link set "pcc${tag}p${cut}h" down
failure cut "$cut"
say "worker $cut cut off from PostgreSQL"
sleep $((lease + 3 + RANDOM % 3))
in_hub ip link set "pcc${tag}p${cut}h" up
say "worker $cut joined to PostgreSQL again"

# The run ends when its last slice does.
for _ in $(seq 1 3000); do
    status=$(sql "SELECT status FROM run WHERE id = $run")
    [[ $status != running ]] && break
    sleep 0.1
done
ended=$(now)
say "run $run $status" "$ended"
for i in "${workers[@]}"; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
for i in "${workers[@]}"; do wait "${pids[$i]}" 2>/dev/null || true; done
pids=("" "" "" "")
kill -TERM "$sim_pid"
wait "$sim_pid" 2>/dev/null || true
sim_pid=""

sql "SELECT seq, token FROM pushcamp_snapshot($run)" >"$dir/snapshot.txt"
sql "SELECT token FROM possible_duplicate WHERE run = $run" >"$dir/duplicates.txt"
addresses=""
for i in "${workers[@]}"; do addresses+="$i=$(address s "$i" w) "; done

python3 - "$dir" "$status" "$rate" "$lease" "$started" "$ended" "$addresses" <<'PY'
import bisect, csv, json, re, sys
from datetime import datetime
from collections import Counter, defaultdict

folder, status, rate, lease, started, ended = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
workers = {address: int(worker) for worker, address in (pair.split("=") for pair in sys.argv[7].split())}
failed = []

def check(ok, text):
    print(("  ok    " if ok else "  FAIL  ") + text)
    if not ok:
        failed.append(text)

audience = [line.split(",")[0] for line in open(f"{folder}/project/audiences/chaos.csv").read().splitlines()[1:]]
unregistered = {line.split()[0] for line in open(f"{folder}/unregistered.txt")}
seq_of = {}
for line in open(f"{folder}/snapshot.txt"):
    seq, token = line.strip().split("|")
    seq_of[token] = int(seq)
listed = [line.strip() for line in open(f"{folder}/duplicates.txt") if line.strip()]

requests = []
for row in csv.DictReader(open(f"{folder}/received.csv")):
    requests.append((float(row["time"]), row["token"], int(row["status"]), workers.get(row["peer"])))
requests.sort()
seen = Counter(token for _, token, _, _ in requests)
delivered = {token for _, token, status, _ in requests if status == 200}

# Claims and ends of slices, from the workers' logs.
claims = defaultdict(list)   # first seq -> [(claimed_at, worker, fence)]
ranges = {}
ends = defaultdict(list)     # (worker, first) -> [log time]
for worker in set(workers.values()):
    for line in open(f"{folder}/w-{worker}.log"):
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("event") == "slice-claimed":
            first = int(event["first"])
            ranges[first] = int(event["last"])
            claims[first].append((float(event["claimed_at"]), worker, int(event["fence"])))
        elif event.get("event") in ("slice-ended", "lease-lost") and "first" in event:
            stamp = event["time"]
            ends[(worker, int(event["first"]))].append(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
for first in claims:
    claims[first].sort()
firsts = sorted(ranges)

def slice_of(seq):
    index = bisect.bisect_right(firsts, seq) - 1
    return firsts[index] if index >= 0 and seq <= ranges[firsts[index]] else None

print(f"run {status}: {len(requests)} requests received, {len(delivered)} tokens delivered, "
      f"{len(firsts)} slices claimed {sum(len(c) for c in claims.values())} times")
by_worker = Counter(worker for _, _, _, worker in requests)
print("  requests by worker: " + ", ".join(f"{w}: {by_worker[w]}" for w in sorted(by_worker, key=str)))

check(status == "finished", f"the run finished ({status})")
deliverable = set(audience) - unregistered
missing = deliverable - delivered
check(not missing, f"every deliverable token delivered ({len(deliverable) - len(missing)} of {len(deliverable)})")
twice = {token for token, n in seen.items() if n > 1}
unlisted = twice - set(listed)
check(not unlisted and len(twice) <= len(listed),
      f"tokens received more than once: {len(twice)}, all among the {len(listed)} possible duplicates the run lists"
      + (f" ({len(unlisted)} not listed)" if unlisted else ""))

# A request from a worker after another worker claimed its slice: sent past the fence.
late = []
for time, token, _, worker in requests:
    first = slice_of(seq_of.get(token, -1))
    if first is None:
        late.append((time, token, worker, "no slice"))
        continue
    holder = None
    for claimed_at, claimer, fence in claims[first]:
        if claimed_at <= time:
            holder = claimer
    if holder != worker:
        late.append((time, token, worker, f"slice {first} held by worker {holder}"))
check(not late, f"no request arrived from a worker after its slice was claimed by another ({len(late)} did)")
for time, token, worker, why in late[:5]:
    print(f"        {time - started:7.3f} s  worker {worker}: {token[:12]}… ({why})")

# The rate over every 10 s window (sliding by a second), from the first request to the last.
times = [time for time, _, _, _ in requests]
windows = []
start = times[0]
while start + 10 <= times[-1]:
    windows.append((bisect.bisect_left(times, start + 10) - bisect.bisect_left(times, start)) / 10)
    start += 1
worst = max(windows)
check(worst <= rate * 1.05,
      f"rate over every 10 s window at most 5% over {rate:.0f}/s: highest {worst:.0f}/s ({worst / rate:.3f}), "
      f"lowest {min(windows):.0f}/s ({min(windows) / rate:.3f}), {len(windows)} windows")

summary = open(f"{folder}/sim.out").read()
tokens = re.search(r"provider tokens: (\d+) accepted, (\d+) refused", summary)
check(tokens is not None and tokens.group(1) == "1" and tokens.group(2) == "0",
      "one provider token for the whole run" + (f" ({tokens.group(1)} accepted, {tokens.group(2)} refused)" if tokens else " (no count)"))

# From each failure to the first claim by another worker of a slice the failed one held then.
for line in open(f"{folder}/failures.txt"):
    what, worker, at = line.split()
    worker, at = int(worker), float(at)
    held = []
    for first, history in claims.items():
        mine = [c for c in history if c[0] <= at]
        if mine and mine[-1][1] == worker and not any(t <= at for t in ends.get((worker, first), []) if t >= mine[-1][0]):
            held.append(first)
    taken = []
    for first in held:
        after = [c[0] for c in claims[first] if c[0] > at]
        if after:
            taken.append(after[0] - at)
    if not held:
        check(False, f"worker {worker} ({what}) held a slice when it failed")
    elif len(taken) < len(held):
        check(False, f"worker {worker} ({what}): {len(held) - len(taken)} of its {len(held)} slices never taken over")
    else:
        print(f"  ok    worker {worker} {what}: its slice{'s' if len(held) > 1 else ''} taken over after "
              + ", ".join(f"{t:.2f} s" for t in taken) + f" (lease {lease:.0f} s)")

print(f"chaos: {'passed' if not failed else 'FAILED: ' + '; '.join(failed)}")
sys.exit(1 if failed else 0)
PY
