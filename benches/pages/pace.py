#!/usr/bin/env python3
"""Page views at a fixed rate, mixed as people browse, for the pages
benchmark: RATE views a second for SECONDS seconds against BASE (HTTPS,
the certificate not checked), over THREADS kept-alive connections, each
view due at its own time (a late one is sent at once, never skipped).
Prints the views made, the rate reached and how many were late by more
than a tenth of a second.

Usage: pace.py BASE RATE SECONDS PROVIDERS [THREADS]
(the generated providers p000000 to PROVIDERS - 1 are browsed; with
DOCS_EVERY=N in the environment, the documentation of every Nth of them
instead, as benches/scale/generate.rs keeps it)
"""
import os
import http.client
import ssl
import sys
import threading
import time
import urllib.parse

BASE, RATE, SECONDS = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
PROVIDERS = int(sys.argv[4])
THREADS = int(sys.argv[5]) if len(sys.argv) > 5 else 4
URL = urllib.parse.urlsplit(BASE)

# What people look at, in the proportions they look: a provider's page
# most, then the home page and searches, the operator's view, the releases.
MIX = (
    ["/-/providers/registry.scale.test/acme/p{n:06d}"] * 8
    + ["/"] * 4
    + ["/-/search?q=p{n:06d}", "/-/search?q=p{s:04d}", "/-/search?q=cme/p", "/-/search?q=acme/p{n:06d}"]
    + ["/-/status"] * 2
    + ["/-/status?page={page}"]
    + ["/-/releases"]
)

# What people read of the documentation: a page most, then a version's
# list of pages, a search by name and one by a word.
DOCS_EVERY = int(os.environ.get("DOCS_EVERY", "0"))
DOCS = "/-/providers/registry.scale.test/acme/p{n:06d}/1.9.0/docs"
if DOCS_EVERY:
    MIX = (
        [DOCS + "/resource/res_{r}"] * 8
        + [DOCS] * 2
        + ["/-/search?q=p{n:06d}_res_{r}", "/-/search?q=lifecycle+triggers"]
    )

done = []
late = []
errors = []


def views(thread):
    context = ssl._create_unverified_context()
    conn = http.client.HTTPSConnection(URL.hostname, URL.port, context=context)
    interval = THREADS / RATE
    start = time.monotonic() + thread * interval / THREADS
    n = 0
    while True:
        due = start + n * interval
        if due - start > SECONDS:
            break
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        elif wait < -0.1:
            late.append(1)
        i = n * THREADS + thread
        n_provider = (i * 7919) % PROVIDERS
        if DOCS_EVERY:
            n_provider -= n_provider % DOCS_EVERY
        path = MIX[i % len(MIX)].format(
            n=n_provider,
            s=n_provider // 10,
            page=1 + i % max(1, PROVIDERS // 100),
            r=(i * 31) % 10,
        )
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            errors.append(f"{path}: {answer.status}")
        done.append(1)
        n += 1


began = time.monotonic()
threads = [threading.Thread(target=views, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
took = time.monotonic() - began
if errors:
    print("errors:", errors[:5], file=sys.stderr)
    sys.exit(1)
print(f"{len(done)} views in {took:.1f} s: {len(done) / took:.1f}/s, {len(late)} late by more than 0.1 s")
