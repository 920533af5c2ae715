"""Golden outputs: what a command wrote, normalised, against the copy kept in tests/golden/.

`normalise` is the one place that decides what in an output may differ between two runs of the
same command on the same inputs; everything else is compared byte for byte. It replaces

- the run's own folders (the test's temporary folder, this checkout) with `<TMP>` and `<ROOT>`;
- a timestamp written during the run (ISO 8601, or `YYYY-MM-DD HH:MM UTC`), i.e. one between
  the test's start and now, with `<NOW>` (dates read from committed data stay as they are);
- this checkout's HEAD commit (short or full, with benchdoc's ` (uncommitted changes)`) with
  `<HEAD>`;
- the machine line a benchmark or study writes now (`2 CPUs (AMD EPYC), Python 3.11.7, <NOW>,
  [commit <HEAD>, ]load average at the end 1.2, 0.8, 0.5`, or `<NOW> · commit <HEAD> · Python
  3.11.7`) with `<MACHINE>`, `<LOAD>` and `<PYTHON>`; machine lines read from committed data
  (they carry their own date, not `<NOW>`) stay as they are;
- the value of a JSON key that `VOLATILE_KEY` matches (a duration: `*seconds*`, `*_s`; a time
  stamp: `*_at`) with `"<VOLATILE>"`;
- in the outputs of a run that measured something (not in a render from committed data, whose
  durations are data), a duration in words (`1.2 s`, `3 minutes`, a progress bar's
  `0:00:01`) with `<DURATION>`;
- whatever a case names as volatile itself (`Normaliser.patterns`: a bare number that is a
  time, such as gambit-check's seconds column) with `<VOLATILE>`.

A file that is not UTF-8 text (a PNG, a SQLite database, tensor weights) is compared by name
only: its bytes depend on library versions (matplotlib, torch), not on gtsteer.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"
#: The golden folder's list of every file a case wrote, compared ones and by-name ones alike.
MANIFEST = "MANIFEST"

#: JSON keys whose values are durations or time stamps: never the same twice.
VOLATILE_KEY = r"[A-Za-z_]*seconds[A-Za-z_]*|[A-Za-z_]*_s|[A-Za-z_]+_at"

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                  r"(?:Z|[+-]\d{2}:?\d{2}| UTC)?")
# The machine line of benchdoc.machine_line and bench_steering's header, once <NOW> is in.
_MACHINE = re.compile(r"\d+ CPUs \([^)]*\), Python \d+\.\d+\.\d+(?=, <NOW>)")
_PYTHON = re.compile(r"(?<=<NOW> · commit <HEAD> · )Python \d+\.\d+\.\d+")
_LOAD = re.compile(r"(<NOW>(?:, commit <HEAD>)?, load average(?: at the end| at start)?) "
                   r"(?:[\d.]+|nan), (?:[\d.]+|nan), (?:[\d.]+|nan)")
_DURATION = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|min|minutes?|seconds?|hours?)\b"
                       r"|\b\d+:\d{2}:\d{2}\b")  # and a progress bar's elapsed time
_SCALAR = r'(-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*"|null|true|false)'
_KEYS = re.compile(r'("(?:' + VOLATILE_KEY + r')"\s*:\s*)' + _SCALAR)


@functools.cache
def _head() -> tuple[str, str]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    return git("rev-parse", "HEAD"), git("rev-parse", "--short", "HEAD")


@dataclass
class Normaliser:
    """The volatile parts of one test's outputs: its folders and when it started."""

    paths: dict[Path, str]
    #: False for a render from committed data: its durations are data, not this run's timing.
    durations: bool = True
    #: Regular expressions (multiline) whose matches are volatile in this case's outputs.
    patterns: tuple[str, ...] = ()
    since: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))

    def _now(self, match: re.Match[str]) -> str:
        text = match.group(0)
        raw = text.removesuffix(" UTC").replace(" ", "T").replace("Z", "+00:00")
        try:
            when = dt.datetime.fromisoformat(raw)
        except ValueError:
            return text
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        slack = dt.timedelta(minutes=1)  # minute-resolution stamps round down
        recent = self.since - slack <= when <= dt.datetime.now(dt.UTC) + slack
        return "<NOW>" if recent else text

    def __call__(self, text: str) -> str:
        return normalise(text, self)


def normalise(text: str, how: Normaliser) -> str:
    """`text` with everything volatile replaced by a placeholder (see the module docstring)."""
    for path, name in sorted(how.paths.items(), key=lambda kv: -len(str(kv[0]))):
        text = text.replace(str(path), name)
    text = _ISO.sub(how._now, text)
    full, short = _head()
    for commit in filter(None, (full, short)):
        text = re.sub(rf"\b{commit}\b(?: \(uncommitted changes\))?", "<HEAD>", text)
    text = _MACHINE.sub("<MACHINE>", text)
    text = _PYTHON.sub("Python <PYTHON>", text)
    text = _LOAD.sub(r"\1 <LOAD>", text)
    text = _KEYS.sub(r'\1"<VOLATILE>"', text)
    if how.durations:
        text = _DURATION.sub("<DURATION>", text)
    for pattern in how.patterns:
        text = re.sub(pattern, "<VOLATILE>", text, flags=re.MULTILINE)
    return text


def read_output(path: Path, how: Normaliser) -> str | None:
    """The normalised text of one written file; None for a file that is not UTF-8 text."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return how(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def collect(outputs: dict[str, Path | str], how: Normaliser) -> dict[str, str | None]:
    """Every output of a case, by its golden name: a written file, every file under a written
    folder (`name/relative/path`), or a captured text (stdout)."""
    found: dict[str, str | None] = {}
    for name, value in outputs.items():
        if isinstance(value, str):
            found[name] = how(value)
        elif value.is_dir():
            # provenance.json records this machine and checkout (argv, commit): not pinned
            for path in sorted(p for p in value.rglob("*")
                               if p.is_file() and p.name != "provenance.json"):
                found[f"{name}/{path.relative_to(value).as_posix()}"] = read_output(path, how)
        else:
            found[name] = read_output(value, how)
    return found


def manifest(found: dict[str, str | None]) -> str:
    return "".join(f"{name}{'' if text is not None else '  (not text: name only)'}\n"
                   for name, text in sorted(found.items()))


def write_golden(case: str, found: dict[str, str | None]) -> None:
    """Replace the case's golden folder with these outputs (`--update-golden`)."""
    folder = GOLDEN / case
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text(manifest(found), encoding="utf-8")
    for name, text in found.items():
        if text is not None:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


def differences(case: str, found: dict[str, str | None], root: Path = GOLDEN) -> list[str]:
    """What differs from the case's golden folder: the file list, then each text's diff."""
    folder = root / case
    if not (folder / MANIFEST).is_file():
        return [f"no golden for {case}: run `pytest tests/project/test_golden.py --update-golden`"]
    problems: list[str] = []
    want = (folder / MANIFEST).read_text(encoding="utf-8")
    have = manifest(found)
    if want != have:
        problems.append("files differ:\n" + "".join(difflib.unified_diff(
            want.splitlines(True), have.splitlines(True), "golden MANIFEST", "this run")))
    for name, text in sorted(found.items()):
        path = folder / name
        if text is None:
            continue
        if not path.is_file():
            problems.append(f"{name}: no golden file")
            continue
        golden = path.read_text(encoding="utf-8")
        if golden != text:
            diff = "".join(difflib.unified_diff(golden.splitlines(True), text.splitlines(True),
                                                f"golden {name}", "this run", n=2))
            problems.append(f"{name} differs:\n{diff[:4000]}")
    return problems
