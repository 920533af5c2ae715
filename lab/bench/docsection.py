"""A marked section of a markdown doc: `<!-- NAME:start -->` ... `<!-- NAME:end -->`, replaced
whole, every other section left alone. The lab's benchmarks and studies write this
repository's docs with it (through lab/bench/benchdoc.py, which re-exports it); a product
command writes only into its run folder."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

#: The checkout this code was imported from (`commit`'s default; `benchdoc.ROOT`).
ROOT = Path(__file__).resolve().parents[2]


def markers(name: str) -> tuple[str, str]:
    """The comments that delimit a script's section, e.g. `<!-- bench_llm:start -->`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def wrap(start: str, end: str, body: str) -> str:
    """A body between its markers, as `write_section` takes it."""
    return f"{start}\n{body.strip(chr(10))}\n{end}\n"


def read_section(doc: Path, start: str, end: str) -> str | None:
    """The current section, markers included, or None when the doc has none."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if start not in text or end not in text:
        return None
    return start + text.split(start, 1)[1].split(end, 1)[0] + end


def write_section(doc: Path, start: str, end: str, section: str) -> None:
    """Replace the text from `start` to `end` with `section` (which begins and ends with those
    markers), leaving every other section alone; append it when the doc has none yet. The doc
    is replaced whole (`ResultWriteError` naming it when it cannot be written)."""
    section = section.strip("\n")
    if not (section.startswith(start) and section.endswith(end)):
        raise ValueError(f"section must begin with {start!r} and end with {end!r}")
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    from gtsteer.runs.atomic import write_text  # here: it imports the LLM layer

    write_text(doc, text)  # atomically: a kill leaves the old doc or the new one, never half


def commit(dirty_paths: Sequence[str] = (), root: Path = ROOT) -> str:
    """The short HEAD of the checkout at `root` (this one by default); ` (uncommitted changes)`
    when any of `dirty_paths` differ from it (read it before a run starts: that is the code
    being measured)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = bool(dirty_paths) and bool(git("status", "--porcelain", "--", *dirty_paths))
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (uncommitted changes)" if dirty else "")
