"""The README main job in-process vs through llama-cpp-python's server; writes its section of
docs/BENCHMARKS.md.

Both runs solve `gtsteer solve configs/schedule_meeting_dow.yaml --games 1` with the same
GGUF (the embedded SmolLM2), the same seeds and a fresh response cache each; the server gets
`--n_threads` equal to the in-process backend's `GTSTEER_LOCAL_THREADS`. Reported: wall time,
new calls and calls per minute, and whether the payoffs agree (per-instance CFR values and
the metrics), since the two paths differ in sampler and chat-template rendering.

Run it under the model lock (it loads the model twice):

    flock /tmp/gtsteer-model.lock .venv/bin/python scripts/bench_served.py [--threads 1] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the server launcher lives with the tests
sys.path.insert(0, str(ROOT / "scripts"))
import benchdoc
from llm_server import LlamaServer

CONFIG = "configs/schedule_meeting_dow.yaml"
START, END = benchdoc.markers("bench_served")


def solve(llm: list[str], threads: int, out: Path) -> tuple[float, dict]:
    """Wall time and summary.json of one cold `gtsteer solve` in a child process."""
    gtsteer = Path(sys.executable).with_name("gtsteer")
    env = {**os.environ, "GTSTEER_LOCAL_THREADS": str(threads)}
    with benchdoc.fresh_cache("bench-served-"):
        env["GTSTEER_CACHE_DIR"] = os.environ["GTSTEER_CACHE_DIR"]
        start = time.perf_counter()
        subprocess.run([str(gtsteer), "solve", CONFIG, "--games", "1", "-q", "--out", str(out),
                        *llm], cwd=ROOT, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - start
    return wall, json.loads((out / "summary.json").read_text())


def row(name: str, wall: float, summary: dict) -> str:
    calls = summary["llm_calls"]
    metrics = summary["metrics"] or {}
    gain = (metrics.get("cfr_gain") or {}).get("mean")
    per_min = calls["new_calls"] / (wall / 60)
    return (f"| {name} | {wall:.1f} s | {calls['new_calls']} | {per_min:.0f} | "
            f"{summary['num_solved']}/{summary['num_games']} | "
            f"{'—' if gain is None else f'{gain:+.4f}'} | {json.dumps(summary['llm_modes'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from gtsteer.llm.backends.local import default_model_path

    head = benchdoc.commit(["gtsteer", "scripts", "configs"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        local_wall, local = solve(["--llm", "local:smollm2-135m"], args.threads, root / "local")
        server = LlamaServer(default_model_path(), root / "server.log", threads=args.threads)
        server.start()
        try:
            served_wall, served = solve(["--llm", "openai/smollm2", "--api-base",
                                         server.base_url], args.threads, root / "served")
        finally:
            server.kill()
        same = local["metrics"] == served["metrics"]
    body = "\n".join([
        "### README main job: in-process vs llama.cpp server",
        "",
        (f"`gtsteer solve {CONFIG} --games 1`, cold cache each, {args.threads} thread(s) on"
         " both sides (`GTSTEER_LOCAL_THREADS` in-process, `--n_threads` for"
         " `python -m llama_cpp.server`, which serves one request at a time). "
         + benchdoc.machine_line(commit=head) + "."),
        "",
        "| run | wall time | new calls | calls/minute | solved | CFR gain | llm_modes |",
        "|---|---:|---:|---:|---|---:|---|",
        row("in-process `local:smollm2-135m`", local_wall, local),
        row("served `openai/smollm2`", served_wall, served),
        "",
        "Same metrics on both paths: " + ("yes." if same else
            "no; docs/SERVING.md (\"Same numbers as in-process?\") says why."),
        "",
        ("Command: `flock /tmp/gtsteer-model.lock .venv/bin/python scripts/bench_served.py"
         f" --threads {args.threads}`"),
    ])
    print(body)
    if not args.no_write:
        benchdoc.write_section(benchdoc.DOC, START, END, benchdoc.wrap(START, END, body))


if __name__ == "__main__":
    main()
