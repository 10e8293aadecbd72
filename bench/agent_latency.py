"""Added latency per event of the HTTP agent executor: an agent emits N artifact chunks, each
carrying the wall-clock time it left the agent; an SSE client of a2a-local notes when each arrives.
Usage: python3 agent_latency.py A2A_LOCAL_URL [count=200] [gap_ms=5]. Prints p50/p99 in ms."""
import json
import statistics
import sys
import time
import urllib.request

base, count, gap = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200, sys.argv[3] if len(sys.argv) > 3 else "5"
body = json.dumps({"message": {"messageId": f"lat-{time.time_ns()}", "role": "ROLE_USER",
                               "parts": [{"text": f"stamps {count} {gap}"}]}}).encode()
req = urllib.request.Request(base + "/message:stream", data=body,
                             headers={"Content-Type": "application/json", "A2A-Version": "1.0"})
latencies = []
with urllib.request.urlopen(req, timeout=120) as resp:
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        arrived = time.time_ns()
        event = json.loads(line[6:])
        update = event.get("artifactUpdate")
        if update:
            sent = int(update["artifact"]["parts"][0]["text"])
            latencies.append((arrived - sent) / 1e6)
latencies.sort()
p50 = statistics.median(latencies)
p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
print(f"{len(latencies)} events: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
