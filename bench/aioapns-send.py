#!/usr/bin/python3
"""aioapns, the best-known Python APNs client (Debian's python3-aioapns), against the benchmark's
nginx: the same request as `pushcamp send` and h2load (provider token, alert payload, topic,
priority, expiration, collapse id), COUNT pushes over CONNECTIONS connections, as fast as it goes.

    /usr/bin/python3 bench/aioapns-send.py PORT CA KEY COUNT [CONNECTIONS]

Prints "delivered N in S s, R req/s". Two adjustments, neither a speed-up: aioapns dials Apple's
host, so the connection goes to 127.0.0.1:PORT with ALPN h2 and the benchmark's CA instead; and
nginx's echo module ends a 200 with an empty DATA frame, which aioapns would parse as JSON, so
empty frames are skipped.
"""
import asyncio
import ssl
import sys
import time
from functools import partial

from aioapns import NotificationRequest, PushType
from aioapns.connection import (
    APNsKeyConnectionPool,
    APNsProductionClientProtocol,
    JWTAuthorizationHeaderProvider,
)


class Protocol(APNsProductionClientProtocol):
    APNS_SERVER = "127.0.0.1"

    def on_data_received(self, data, stream_id):
        if data:
            super().on_data_received(data, stream_id)


class Pool(APNsKeyConnectionPool):
    def __init__(self, port, **kwargs):
        super().__init__(**kwargs)
        self.port = port
        self.protocol_class = Protocol

    async def create_connection(self):
        auth = JWTAuthorizationHeaderProvider(key=self.key, key_id=self.key_id, team_id=self.team_id)
        _, protocol = await self.loop.create_connection(
            protocol_factory=partial(Protocol, self.apns_topic, self.loop, self.discard_connection, auth),
            host="127.0.0.1",
            port=self.port,
            ssl=self.ssl_context,
        )
        return protocol


async def main(port, ca, key, count, connections):
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    pool = Pool(
        port,
        key_file=key,
        key_id="KEY1234567",
        team_id="ABCDE12345",
        topic="com.example.shop",
        max_connections=connections,
        ssl_context=context,
    )
    tokens = ["%064x" % (index * 7919 + 1) for index in range(1000)]
    message = {
        "aps": {
            "alert": {"title": "Spring sale", "body": "Hello Name123, 20% off everything until Sunday"},
            "sound": "default",
        }
    }
    window = asyncio.Semaphore(100 * connections)
    delivered = 0

    async def one(index):
        nonlocal delivered
        async with window:
            result = await pool.send_notification(
                NotificationRequest(
                    device_token=tokens[index % len(tokens)],
                    message=message,
                    time_to_live=3600,
                    priority=10,
                    collapse_key="throughput-bench",
                    push_type=PushType.ALERT,
                )
            )
            if result.is_successful:
                delivered += 1

    started = time.monotonic()
    await asyncio.gather(*(one(index) for index in range(count)))
    seconds = time.monotonic() - started
    pool.close()
    print("delivered %d in %.2f s, %.0f req/s" % (delivered, seconds, delivered / seconds))


if __name__ == "__main__":
    port, ca, key, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    connections = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    asyncio.run(main(port, ca, key, count, connections))
