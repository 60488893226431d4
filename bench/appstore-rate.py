#!/usr/bin/env python3
"""POSTs notifications at a fixed rate (open loop, on keep-alive connections) and prints latency
percentiles: the receiver's latency at 200/s for bench/appstore.sh.

    bench/appstore-rate.py HOST PORT PATH BODIES RATE SECONDS [SKIP]
"""
import asyncio, sys, time

async def main():
    host, port, path, bodies_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rate, seconds = float(sys.argv[5]), float(sys.argv[6])
    skip = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    bodies = open(bodies_path).read().splitlines()[skip:]
    total = int(rate * seconds)
    assert len(bodies) >= total, "not enough bodies"
    latencies, statuses = [], {}
    connections = asyncio.Queue()
    for _ in range(8):
        connections.put_nowait(await asyncio.open_connection(host, port))

    async def post(body):
        reader, writer = await connections.get()
        data = body.encode()
        start = time.perf_counter()
        writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        status_line = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        latencies.append(time.perf_counter() - start)
        status = int(status_line.split()[1])
        statuses[status] = statuses.get(status, 0) + 1
        connections.put_nowait((reader, writer))

    started = time.perf_counter()
    tasks = []
    for i in range(total):
        delay = started + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(post(bodies[i])))
    await asyncio.gather(*tasks)
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    print(f"rate {rate:.0f}/s for {seconds:.0f} s: {len(latencies)} answers {statuses}, "
          f"p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms, max {latencies[-1] * 1000:.2f} ms")

asyncio.run(main())
