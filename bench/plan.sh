#!/usr/bin/env bash
# Plan benchmark: plans the localized spring-sale campaign over generated 1,000,000- and
# 5,000,000-row CSV audiences in one run, printing recipients per second, peak RSS and the
# 5M/1M RSS ratio. Targets (issue #2): 1M in <= 5 s, peak RSS <= 150 MB, 5M RSS within 10% of 1M.
#
#   bench/plan.sh            # both sizes
#   bench/plan.sh 200000     # other sizes, for a quick look
#   BASELINE=/path/to/old/pushcamp bench/plan.sh
#                            # also plans with an older build after each size: before/after in one run
#   POSTGRES=1 bench/plan.sh 1000000
#                            # also plans the same rows from a PostgreSQL table (a throwaway cluster,
#                            # loaded by COPY) after each size: the query against the file, in one run
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
((${#sizes[@]})) || sizes=(1000000 5000000)

command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
swift build -c release --product pushcamp >/dev/null
binary=.build/release/pushcamp

out=bench/out
mkdir -p "$out"
cp templates/spring-sale.yaml templates/spring-sale-b.yaml templates/spring-sale.strings.yaml "$out/"
cat > "$out/pushcamp.yaml" <<'YAML'
apps:
  shop-ios:
    topic: com.example.shop
    team_id: ABCDE12345
    key_id: KEY1234567
    key_file: ${env:SHOP_APNS_KEY_FILE}
YAML
# The example campaign, reading the generated audience (no exclusions, no schedule).
sed -e 's#audiences/customers.csv#audience.csv#; s#templates/##g; /exclude:/d; /do-not-disturb/d' \
    -e '/^schedule:/,/^$/d' campaigns/spring-sale.yaml > "$out/campaign.yaml"

if [[ -n "${POSTGRES:-}" ]]; then
    source bench/lib/nginx.sh
    bench_postgres
    trap "scripts/postgres.sh stop '$pgdir/pg' >/dev/null 2>&1 || true; rm -rf '$pgdir'" EXIT
    psql -X -q "$server" -c "CREATE DATABASE audience"
    audience_url=${server%/*}/audience?sslmode=disable
    # Every column text, as the file's cells are; the file's order kept by a key.
    psql -X -q "$audience_url" -c "CREATE TABLE customers (id bigserial PRIMARY KEY, token text, first_name text,
        locale text, platform text, opted_in text, tier text, registered_at text)"
    sed -e 's#{ csv: audience.csv }#{ postgres: "${env:BENCH_AUDIENCE_URL}", query: "SELECT token, first_name, locale, platform, opted_in, tier, registered_at FROM customers ORDER BY id" }#' \
        "$out/campaign.yaml" > "$out/campaign-postgres.yaml"
    grep -q 'postgres:' "$out/campaign-postgres.yaml" || { echo "the campaign's source was not replaced" >&2; exit 1; }
fi

printf '%-10s %8s %14s %12s %10s\n' rows seconds recipients/s "peak RSS" planned
declare -A rss
for size in "${sizes[@]}"; do
    csv="$out/audience-$size.csv"
    [[ -f "$csv" ]] || python3 bench/generate-audience.py "$size" "$csv"
    ln -sf "audience-$size.csv" "$out/audience.csv"
    /usr/bin/time -f '%e %M' -o "$out/time-$size.txt" "$binary" plan --samples 0 --format json "$out/campaign.yaml" > "$out/plan-$size.json"
    read -r seconds kilobytes < "$out/time-$size.txt"
    planned=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['planned'])" "$out/plan-$size.json")
    rss[$size]=$kilobytes
    printf '%-10s %8s %14.0f %9.1f MB %10s\n' "$size" "$seconds" "$(python3 -c "print($size / $seconds)")" \
        "$(python3 -c "print($kilobytes / 1024)")" "$planned"
    if [[ -n "${POSTGRES:-}" ]]; then
        psql -X -q "$audience_url" -c "TRUNCATE customers" \
            -c "\\copy customers (token, first_name, locale, platform, opted_in, tier, registered_at) FROM '$csv' CSV HEADER"
        BENCH_AUDIENCE_URL=$audience_url /usr/bin/time -f '%e %M' -o "$out/time-pg.txt" "$binary" plan --samples 0 \
            --format json "$out/campaign-postgres.yaml" > "$out/plan-pg-$size.json"
        read -r pg_seconds pg_kilobytes < "$out/time-pg.txt"
        pg_planned=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['planned'])" "$out/plan-pg-$size.json")
        printf '%-10s %8s %14.0f %9.1f MB %10s   (PostgreSQL query; %.2fx the file'"'"'s time)\n' "$size" "$pg_seconds" \
            "$(python3 -c "print($size / $pg_seconds)")" "$(python3 -c "print($pg_kilobytes / 1024)")" "$pg_planned" \
            "$(python3 -c "print($pg_seconds / $seconds)")"
        [[ "$pg_planned" == "$planned" ]] || { echo "the query planned $pg_planned, the file $planned" >&2; exit 1; }
    fi
    if [[ -n "${BASELINE:-}" ]]; then
        /usr/bin/time -f '%e %M' -o "$out/time-base.txt" "$BASELINE" plan --samples 0 --format json "$out/campaign.yaml" > /dev/null
        read -r base_seconds base_kilobytes < "$out/time-base.txt"
        printf '%-10s %8s %14.0f %9.1f MB   (baseline; this build %.2fx as fast)\n' "$size" "$base_seconds" \
            "$(python3 -c "print($size / $base_seconds)")" "$(python3 -c "print($base_kilobytes / 1024)")" \
            "$(python3 -c "print($base_seconds / $seconds)")"
    fi
done
if ((${#sizes[@]} >= 2)); then
    first=${sizes[0]}
    last=${sizes[-1]}
    printf 'peak RSS ratio %s/%s rows: %.3f\n' "$last" "$first" "$(python3 -c "print(${rss[$last]} / ${rss[$first]})")"
fi
