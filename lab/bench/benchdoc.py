"""What every benchmark and study shares: its argument parser (the one prelude), its marked
section of docs/BENCHMARKS.md, the machine line, a fresh response cache, the README main job
(read from the Makefile) and a cold CLI run.

Benchmarks and studies measure this checkout: `ROOT` is the repository that holds the lab
(beside the editable gtsteer), whose docs/, gtsteer/configs/ and Makefile they read and write.
The marked sections and the commit are lab.bench.docsection's (re-exported here).
`python -m lab NAME` runs them (lab/__main__.py).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

# The marked sections and the commit line.
from lab.bench.docsection import commit as commit
from lab.bench.docsection import markers as markers
from lab.bench.docsection import read_section as read_section
from lab.bench.docsection import wrap as wrap
from lab.bench.docsection import write_section as write_section

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "BENCHMARKS.md"


def repo_relative(path: str | Path) -> str:
    """`path` as run files and docs store it: relative to the repository when it lies in it,
    so a run from another checkout (a frozen worktree) writes the same text as one from main.
    A relative path is kept as given."""
    p = Path(path)
    if p.is_absolute() and p.is_relative_to(ROOT):
        return p.relative_to(ROOT).as_posix()
    return p.as_posix()


def repo_config(config: str | Path) -> Path:
    """A config a benchmark, a study or a saved row names relative to this checkout, as a file:
    the checkout's own path when it exists, else the shipped config it names (saved rows say
    `configs/NAME.yaml`, where a clone kept them before they shipped in the package)."""
    from gtsteer.binding.shipped import resolve_config

    path = Path(config)
    if path.is_absolute() or (ROOT / path).exists():
        return ROOT / path
    return resolve_config(path)


def parser(command: str, description: str) -> argparse.ArgumentParser:
    """The argument parser of a benchmark or study, named by the command that runs it
    (`python -m lab llm`), so its usage line and error messages say how to call it."""
    return argparse.ArgumentParser(prog=command, description=description)


def renamed(command: str, retired: str, current: str) -> str:
    """`command` as it is spelled today: a command saved while the lab's study was `retired`
    (a product command then, e.g. `gtsteer table1`) gets `current`, its flags unchanged."""
    if command == retired or command.startswith(retired + " "):
        return current + command.removeprefix(retired)
    return command


def typer_main(command: str, function: Callable[..., object], argv: Sequence[str] | None) -> int:
    """Run a study whose flags are typer's (one that was a product command: the Werewolf
    styles and held-out studies keep the flags, help and errors they had there) as
    `python -m lab NAME` runs a `main`: the exit code, 0 when it finished."""
    import typer

    app = typer.Typer(add_completion=False)
    app.command()(function)
    try:
        app(args=list(argv or []), prog_name=command)
    except SystemExit as done:  # click's standalone mode ends every run with one
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    return 0


if TYPE_CHECKING:
    from gtsteer.runs.units import RayOptions


def add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    """`--ray ADDRESS` and `--workers N`, as the studies that solve instances take them."""
    parser.add_argument("--ray", metavar="ADDRESS",
                        help="solve instances as Ray tasks: local (with --workers N), auto or"
                             " HOST:PORT (docs/SCALE.md)")
    parser.add_argument("--workers", type=int, help="CPUs of the Ray instance --ray local starts")


def ray_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RayOptions | None:
    """The parsed `--ray`/`--workers` (`add_ray_arguments`), a bad pair a parser error."""
    from gtsteer.runs.units import RayOptions

    try:
        ray = None if args.ray is None else RayOptions(args.ray, args.workers)
    except ValueError as exc:
        parser.error(str(exc))
    if ray is None and args.workers is not None:
        parser.error("--workers: only with --ray local")
    return ray


@dataclass(frozen=True)
class Machine:
    """Where and when a benchmark ran."""

    cpus: int
    cpu: str
    python: str
    date: str
    load: tuple[float, float, float]

    @property
    def described(self) -> str:
        """`2 CPUs (AMD EPYC), Python 3.11.7`: what ran it, without the time or load."""
        return f"{self.cpus} CPUs ({self.cpu}), Python {self.python}"

    @property
    def load_text(self) -> str:
        return ", ".join(f"{x:.1f}" for x in self.load)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> Machine:
    """A snapshot now: usable CPUs, CPU model, Python, UTC time, load averages."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    nan = float("nan")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (nan, nan, nan)
    return Machine(cpus=cpus or 1, cpu=cpu_model(), python=platform.python_version(),
                   date=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC", load=load)


def machine_line(
    *, commit: str | None = None, load_when: str = "at the end", note: str = ""
) -> str:
    """`2 CPUs (AMD EPYC), Python 3.11.7, 2026-11-30 10:15 UTC, commit 270def3, load average at
    the end 2.2, 1.8, 2.7` plus `note`; call it when the load should be read."""
    m = machine()
    parts = [m.described, m.date]
    parts += [f"commit {commit}"] if commit else []
    parts.append(f"load average {load_when} {m.load_text}")
    return ", ".join(parts) + note


@contextlib.contextmanager
def fresh_cache(prefix: str) -> Iterator[Path]:
    """A private, empty GTSTEER_CACHE_DIR for the block (every model call is a real one); the
    model files stay where they were (GTSTEER_MODEL_DIR pinned to the old cache's models)."""
    old = os.environ.get("GTSTEER_CACHE_DIR")
    os.environ.setdefault(
        "GTSTEER_MODEL_DIR", str(Path(old or Path.home() / ".cache" / "gtsteer") / "models")
    )
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        os.environ["GTSTEER_CACHE_DIR"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("GTSTEER_CACHE_DIR", None)
            else:
                os.environ["GTSTEER_CACHE_DIR"] = old


def fresh_cache_until_exit(prefix: str) -> Path:
    """`fresh_cache` for the rest of the process (for scripts whose whole body is the block)."""
    stack = contextlib.ExitStack()
    path = stack.enter_context(fresh_cache(prefix))
    atexit.register(stack.close)
    return path


def demo_args() -> list[str]:
    """The arguments after `gtsteer` in the Makefile's `demo` recipe (the README main job)."""
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].splitlines()[1]
    args = shlex.split(recipe.strip())
    return args[next(i for i, a in enumerate(args) if a.endswith("gtsteer")) + 1 :]


def run_cold(args: Sequence[str], env: Mapping[str, str], prefix: str,
             read: Sequence[str] = ("summary.json",), cwd: Path = ROOT,
             ) -> tuple[float, dict[str, bytes]]:
    """`gtsteer *args --out DIR` in a subprocess with an empty response cache, `env` added to
    this process's environment and the hub offline, run in `cwd` (this checkout; another
    checkout's configs with `cwd`, its code with `PYTHONPATH` in `env`): its wall time and the
    bytes of each `read` path inside DIR."""
    with fresh_cache(prefix) as cache:
        out = cache / "results"
        full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **env, "GTSTEER_CACHE_DIR": str(cache)}
        command = [str(Path(sys.executable).parent / "gtsteer"), *args, "--out", str(out)]
        start = time.perf_counter()
        subprocess.run(command, env=full_env, check=True, cwd=cwd, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        return wall, {path: (out / path).read_bytes() for path in read}


Report = TypeVar("Report")


def run_grid(configs: Sequence[str], models: Sequence[str],
             measure: Callable[[str, str, str], Report]) -> list[tuple[str, str, Report | str]]:
    """`measure(config, model, folder_name)` for every config x model pair; a pair that raises
    becomes its error text, so one failure does not lose the other pairs' numbers."""
    rows: list[tuple[str, str, Report | str]] = []
    for config in configs:
        for model in models:
            print(f"== {config} · {model}", flush=True)
            folder = f"{Path(config).stem}-{model.replace(':', '_').replace('/', '_')}"
            try:
                rows.append((config, model, measure(config, model, folder)))
            except Exception as exc:  # noqa: BLE001 - one failed pair must not hide the others
                rows.append((config, model, f"{type(exc).__name__}: {exc}"))
    return rows
