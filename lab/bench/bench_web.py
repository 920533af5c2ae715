"""Benchmark: the werewolf web server with the fake model; writes its docs/BENCHMARKS.md section.

Starts `gtsteer werewolf serve --llm fake` as a subprocess on a temporary database and measures:
time to first byte of the lobby page (sequential requests), events per second streamed to a god
view during a 12-player bot-only game, and the server's resident memory (Linux /proc) idle and
with 10 concurrent bot-only games, each watched by one public event stream.

    .venv/bin/python -m lab web            # run on an idle machine
    .venv/bin/python -m lab web --requests 20 --games 2 --out /tmp/b.md   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from lab.bench import benchdoc

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab web"

START, END = benchdoc.markers("bench_web")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc (Linux only)")


def stream(client: httpx.Client, path: str, out: dict) -> None:
    """Count events on an SSE stream until it ends; record first/last arrival times."""
    n = 0
    with client.stream("GET", path, timeout=httpx.Timeout(600, read=600)) as r:
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            n += 1
            out.setdefault("first", time.perf_counter())
            out["last"] = time.perf_counter()
            if event["type"] == "end":
                break
    out["events"] = n


def game_body(seed: int) -> dict:
    return {"players": 12, "seed": seed, "model": "fake", "max_messages_per_day": 10,
            "step_delay_s": 0}


def bench(args: argparse.Namespace) -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GTSTEER_CACHE_DIR": tmp}
        cmd = [sys.executable, "-c", "from gtsteer.cli import app; app()", "werewolf", "serve",
               "--port", str(port),
               "--db", str(Path(tmp) / "web.sqlite"), "--llm", "fake"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                deadline = time.time() + 60
                while True:
                    try:
                        c.get("/api/config").raise_for_status()
                        break
                    except httpx.TransportError:
                        if time.time() > deadline or proc.poll() is not None:
                            raise RuntimeError("the server did not start") from None
                        time.sleep(0.2)
                idle = rss_mib(proc.pid)

                ttfb = []
                for _ in range(args.requests):
                    t0 = time.perf_counter()
                    with c.stream("GET", "/") as r:
                        ttfb.append(time.perf_counter() - t0)
                        r.read()

                gid = c.post("/api/games", json=game_body(1)).json()["id"]
                c.post(f"/api/games/{gid}/control", json={"action": "pause"})
                seen: dict = {}
                t = threading.Thread(target=stream, args=(c, f"/api/games/{gid}/events?view=god",
                                                          seen))
                t.start()
                time.sleep(0.5)
                t0 = time.perf_counter()
                c.post(f"/api/games/{gid}/control", json={"action": "resume"})
                t.join()
                elapsed = seen["last"] - t0
                steps = c.get(f"/api/games/{gid}/god").json()["decisions"]

                before = rss_mib(proc.pid)
                streams = []
                peak = before
                t1 = time.perf_counter()
                for k in range(args.games):
                    g = c.post("/api/games", json=game_body(100 + k)).json()["id"]
                    out: dict = {}
                    th = threading.Thread(target=stream, args=(c, f"/api/games/{g}/events", out))
                    th.start()
                    streams.append(th)
                while any(th.is_alive() for th in streams):
                    peak = max(peak, rss_mib(proc.pid))
                    time.sleep(0.1)
                concurrent_s = time.perf_counter() - t1
                after = rss_mib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    return {
        "ttfb_ms_median": 1000 * statistics.median(ttfb),
        "ttfb_ms_p95": 1000 * sorted(ttfb)[int(0.95 * (len(ttfb) - 1))],
        "requests": len(ttfb),
        "stream_events": seen["events"], "stream_steps": len(steps),
        "stream_seconds": elapsed, "events_per_s": seen["events"] / elapsed,
        "rss_idle_mib": idle, "rss_before_games_mib": before, "rss_peak_mib": peak,
        "rss_after_games_mib": after, "games": args.games, "concurrent_seconds": concurrent_s,
    }


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="lobby requests for TTFB")
    ap.add_argument("--games", type=int, default=10, help="concurrent bot-only games")
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    args = ap.parse_args(argv)
    r = bench(args)
    cmd = "python -m lab web" + (
        "" if (args.requests, args.games) == (200, 10)
        else f" --requests {args.requests} --games {args.games}")
    body = f"""## Werewolf web server (fake model)

`{cmd}` ({benchdoc.machine_line()}).
The server is `gtsteer werewolf serve --llm fake` in its own
process on a temporary database.

| measure | value |
|---|---|
| lobby page, time to first byte (median / p95 of {r['requests']} sequential requests) | \
{r['ttfb_ms_median']:.1f} ms / {r['ttfb_ms_p95']:.1f} ms |
| events streamed to a god view, 12-player game ({r['stream_steps']} steps, \
{r['stream_events']} events) | {r['events_per_s']:.0f} events/s ({r['stream_seconds']:.1f} s) |
| server memory, idle | {r['rss_idle_mib']:.0f} MiB |
| server memory, peak with {r['games']} concurrent 12-player bot-only games, one event \
stream each | {r['rss_peak_mib']:.0f} MiB (before {r['rss_before_games_mib']:.0f}, after \
{r['rss_after_games_mib']:.0f}; all done in {r['concurrent_seconds']:.1f} s) |

Events include the per-step `turn` updates. The fake model answers instantly, so the stream rate
is the server's own cost per step (engine, SQLite commit, filtering, SSE), not a model's.
"""
    benchdoc.write_section(Path(args.out), START, END, benchdoc.wrap(START, END, body))
    print(body)


if __name__ == "__main__":
    main()
