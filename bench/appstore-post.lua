-- wrk script for bench/appstore.sh: each request POSTs the next body of bodies.jsonl (one
-- notification each, so every request is a new notification to verify and store).
local bodies = {}
local next_body = 1

function init(args)
    for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
    -- Each thread starts at its own offset so threads do not send the same notifications.
    next_body = (id or 0) * math.floor(#bodies / 4) + 1
end

function setup(thread)
    thread:set("id", (counter or 0))
    counter = (counter or 0) + 1
end

function request()
    local body = bodies[next_body]
    next_body = next_body % #bodies + 1
    return wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
end

function done(summary, latency, requests)
    io.write(string.format("wrk: %d requests, %d non-2xx, p50 %.2f ms, p99 %.2f ms\n", summary.requests,
        summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
