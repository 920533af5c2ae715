"""llama.cpp's own tools (`llama-bench`, `llama-batched-bench`, and `llama-server`, the C++
server with parallel slots), built once from the llama.cpp sources vendored in the
llama-cpp-python 0.3.36 sdist, so a speed claim about the local backend has llama.cpp's own
number beside it, from the same kernels, and the served benchmark can compare
`llama-server --parallel 1` with `--parallel 4`.

The sdist comes from PyPI (`pip download --no-binary`), is built with cmake and
`GGML_NATIVE=OFF` (a native build dies with "Illegal instruction" on this machine, as the Python
package does) and is cached under `GTSTEER_CACHE_DIR/llama-tools`. Run on its own:
`python -m lab llama-tools` prints the binaries' paths. The server is built without its
web UI (`LLAMA_BUILD_UI=OFF`, `LLAMA_USE_PREBUILT_UI=OFF`: no download at build time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from lab.bench import benchdoc

#: How to run this on its own.
COMMAND = "python -m lab llama-tools"

VERSION = "0.3.36"
#: CMake target names in the vendored llama.cpp (`tools/*/CMakeLists.txt`).
TOOLS = ("llama-bench", "llama-batched-bench", "llama-server")
#: gtsteer's contexts run without flash attention (llama-cpp-python's default), while llama.cpp's
#: tools default to `auto`, which turns it on for this CPU; a reference run passes this so that it
#: measures the same attention kernels (docs/LOCAL.md, "Flash attention").
FLASH_ATTN = "off"


def tools_dir() -> Path:
    root = os.environ.get("GTSTEER_CACHE_DIR") or str(Path.home() / ".cache" / "gtsteer")
    return Path(root) / "llama-tools" / VERSION


def _source(work: Path) -> Path:
    src = work / f"llama_cpp_python-{VERSION}"
    if (src / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        return src
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
         "llama-cpp-python", f"llama-cpp-python=={VERSION}", "-d", str(work)],
        check=True,
    )
    archive = next(work.glob(f"llama_cpp_python-{VERSION}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return src


def built() -> dict[str, Path] | None:
    """The tools' paths if all are built already, else None (building takes minutes: do it
    outside the model lock)."""
    bins = {name: tools_dir() / "build" / "bin" / name for name in TOOLS}
    return bins if all(p.exists() for p in bins.values()) else None


def build(targets: tuple[str, ...] = TOOLS) -> dict[str, Path]:
    """Paths of the built `targets` (built on first use: the server with them took 23 minutes
    at `nice` on 2 shared cores, the two benchmark tools alone about 5)."""
    work = tools_dir()
    bins = {name: work / "build" / "bin" / name for name in targets}
    if all(p.exists() for p in bins.values()):
        return bins
    llama = _source(work) / "vendor" / "llama.cpp"
    build_dir = work / "build"
    subprocess.run(
        ["cmake", "-S", str(llama), "-B", str(build_dir), "-DGGML_NATIVE=OFF",
         "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
         "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
         "-DLLAMA_BUILD_EXAMPLES=OFF"],
        check=True, stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(build_dir), "--target", *targets, "-j", str(os.cpu_count() or 1)],
        check=True, stdout=subprocess.DEVNULL,
    )
    missing = [str(p) for p in bins.values() if not p.exists()]
    if missing:
        raise SystemExit(f"llama.cpp build produced no {', '.join(missing)}")
    return bins


def llama_bench_command(
    bins: dict[str, Path], model: Path, threads: int, n_prompt: int, n_gen: int, reps: int = 3
) -> list[str]:
    """`llama-bench` for `model` at `threads`: prompt processing of n_prompt tokens and
    generation of n_gen (0 skips either), JSON out (read it with `llama_bench_speeds`)."""
    return [str(bins["llama-bench"]), "-m", str(model), "-t", str(threads), "-p", str(n_prompt),
            "-n", str(n_gen), "-r", str(reps), "-fa", FLASH_ATTN, "-o", "json"]  # fmt: skip


def llama_bench_speeds(out: str) -> dict[str, float]:
    """tokens/s of a `llama_bench_command` run: {"pp": prompt, "tg": generation}, as run."""
    return {"pp" if r["n_prompt"] else "tg": float(r["avg_ts"]) for r in json.loads(out)}


def llama_bench_tg(bins: dict[str, Path], model: Path, threads: int, n_gen: int = 64) -> float:
    """llama-bench's generation speed (tokens/s) for `model` at `threads`."""
    cmd = llama_bench_command(bins, model, threads, 0, n_gen)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return llama_bench_speeds(out)["tg"]


def batched_bench(
    bins: dict[str, Path],
    model: Path,
    threads: int,
    n_prompt: int,
    n_gen: int,
    seqs: list[int],
    shared_prompt: bool = True,
    speed: str = "speed_tg",
) -> dict[int, float]:
    """llama-batched-bench's aggregate `speed` (tokens/s: `speed_tg` generation, `speed_pp`
    prompt) per parallel sequence count. `shared_prompt`: the prompt shared between sequences
    (`-pps`), as gtsteer's tree levels share theirs; else one prompt per sequence."""
    ctx = max(seqs) * (n_prompt + n_gen) + 256
    out = subprocess.run(
        [str(bins["llama-batched-bench"]), "-m", str(model), "-t", str(threads), "-tb",
         str(threads), "-c", str(ctx), "-b", "2048", "-ub", "512", "-npp", str(n_prompt),
         "-ntg", str(n_gen), "-npl", ",".join(map(str, seqs)), "-fa", FLASH_ATTN,
         "--output-format", "jsonl", *(["-pps"] if shared_prompt else [])],
        check=True, capture_output=True, text=True,
    ).stdout
    speeds = {}
    for line in out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            speeds[int(row["pl"])] = float(row[speed])
    return speeds


def main(argv: list[str] | None = None) -> None:
    """Build the tools (once) and print each binary's path."""
    parser = benchdoc.parser(COMMAND, "Build llama.cpp's own tools once; print their paths.")
    parser.parse_args(argv)
    for name, path in build().items():
        print(name, path)


if __name__ == "__main__":
    main()
