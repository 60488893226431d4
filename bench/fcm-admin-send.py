"""Google's Admin SDK for Python (firebase-admin) sending COUNT messages with `messaging.send_each`
(500 per call, its limit) to an FCM-shaped endpoint: the benchmark's driver points the SDK's send URL
at it (the SDK has no setting for that) and trusts its CA through REQUESTS_CA_BUNDLE. The service
account's token_uri is the same endpoint's /token. Prints "N messages in S s, R req/s, C s CPU".

    python3 bench/fcm-admin-send.py PORT SERVICE_ACCOUNT.json AUDIENCE.csv COUNT
"""

import csv
import os
import resource
import sys
import time

port, account, audience, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

import firebase_admin
from firebase_admin import credentials, messaging

messaging._MessagingService.FCM_URL = f"https://127.0.0.1:{port}/v1/projects/{{0}}/messages:send"
app = firebase_admin.initialize_app(credentials.Certificate(account))

rows = []
with open(audience) as f:
    for row in csv.DictReader(f):
        rows.append(row)
        if len(rows) == count:
            break


def message(row):
    return messaging.Message(
        token=row["token"],
        notification=messaging.Notification(
            title="Spring sale", body=f"Hello {row['first_name']}, 20% off everything until Sunday"
        ),
        android=messaging.AndroidConfig(priority="high", ttl=3600, notification=messaging.AndroidNotification(tag="fcm-bench")),
    )


started = time.monotonic()
cpu = resource.getrusage(resource.RUSAGE_SELF)
ok = 0
for start in range(0, len(rows), 500):
    response = messaging.send_each([message(row) for row in rows[start : start + 500]])
    ok += response.success_count
elapsed = time.monotonic() - started
after = resource.getrusage(resource.RUSAGE_SELF)
used = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
if ok != len(rows):
    sys.exit(f"firebase-admin: {ok} of {len(rows)} sent")
print(f"{ok} messages in {elapsed:.2f} s, {ok / elapsed:.0f} req/s, {used:.2f} s CPU")
