"""Run folders and result files: one place decides how a run writes JSON and PNG.

A run folder belongs to one run: `prepare_run_dir` empties the subfolders an earlier run made
(e.g. `games/5.json` from a run with more games) and removes its summary, so every file in it
describes this run. Until `finish_run_dir` writes the summary, the folder holds `IN_PROGRESS`:
a reader tells a finished run (summary, no marker) from a partial or killed one. A subfolder
gtsteer did not make is never emptied: a run that finds files there refuses to start, as it
does for a subfolder that is a symbolic link (its target is never emptied). Every
file is written atomically (`gtsteer.runs.atomic`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, PrivateAttr

from gtsteer.llm import LLM, model_string
from gtsteer.llm.usage import UsageReport
from gtsteer.runs.atomic import atomic_path, write_text
from gtsteer.runs.errors import RunDirError

#: Present while a run writes its folder; removed once its summary is written.
IN_PROGRESS = "IN_PROGRESS"
#: Names the subfolders gtsteer made in a run folder, so a later run may empty them.
OWNED = ".gtsteer-run.json"
#: Files of subfolders made before `OWNED` existed (games/3.json, iterations/2.json, ...).
_LEGACY_FILE = re.compile(r"\d+\.(json|json\.gz|terminals\.jsonl)")

#: Default run folder under results/ per kind of run: the shapes README and docs/*.md name.
RUN_DIRS = {
    "solve": "{stem}-{model}-{seed}",
    "psro": "{stem}-psro-{model}-{seed}",
    "export": "{stem}-export-{model}-{seed}",
    "imitate": "imitate-{stem}-{model}-{seed}",
    "eval-steering": "eval-steering/{stem}-{model}-{seed}",
    "eval-reward": "eval-reward/{stem}-{model}-{seed}",
    "eval-verdict": "{stem}-verdict-{seed}",
    "play": "play/{stem}-{model}-{seed}",
    "evaluate": "evaluate/{stem}-{model}-{seed}",
}


def run_dir(kind: str, config: str | Path, model: str, seed: int) -> Path:
    """The default folder of a `kind` run of `config`, the model string made path-safe."""
    if kind not in RUN_DIRS:
        raise ValueError(f"kind: expected one of {', '.join(RUN_DIRS)}, got {kind!r}")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path("results") / RUN_DIRS[kind].format(stem=Path(config).stem, model=safe, seed=seed)


def run_folder(kind: str, config: str | Path, llm: str | LLM, seed: int,
               out_dir: str | Path | None = None) -> Path:
    """The folder a `kind` run writes: `out_dir` as given, else its default `run_dir`, named
    by the model string. Each driver asks this once and returns the answer (`RunResult`), so
    a caller never works the folder out a second time."""
    return Path(out_dir) if out_dir is not None else run_dir(kind, config, model_string(llm), seed)


class RunResult(BaseModel):
    """A driver's result that knows the folder it was written to (`folder`). The folder is a
    private attribute: it is not part of the JSON, so the result files keep their schema."""

    _folder: Path | None = PrivateAttr(default=None)
    _usage: UsageReport | None = PrivateAttr(default=None)

    @property
    def folder(self) -> Path:
        """Where the driver wrote this result; an error for a result read back from a file."""
        if self._folder is None:
            raise RunDirError(f"{type(self).__name__}: not written by a driver in this process"
                              " (read from a file?), so its folder is unknown")
        return self._folder

    def __eq__(self, other: object) -> bool:
        """Results are equal whatever folder they were written to (pydantic would compare
        private attributes too, so a result would differ from the same one read back)."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (type(self) is type(other) and self.__dict__ == other.__dict__
                and self.__pydantic_extra__ == other.__pydantic_extra__)

    def written_to(self, folder: str | Path) -> Self:
        """Record the folder a driver wrote this result to, and write its provenance there
        (`gtsteer.runs.provenance`); returns the result."""
        from gtsteer.runs.provenance import PROVENANCE_FILE, provenance

        self._folder = Path(folder)
        write_json(self._folder / PROVENANCE_FILE, provenance(self._folder))
        return self

    @property
    def usage(self) -> UsageReport | None:
        """What the run spent (requests, new calls, tokens, retries, cost), as the command
        line's final line says it; None unless the run came through `gtsteer.solve` & co."""
        return self._usage

    def spent(self, usage: UsageReport) -> Self:
        """Record what the run spent (`gtsteer.api`); returns the result."""
        self._usage = usage
        return self


def check_out_dir(out: str | Path, flag: str = "--out") -> Path:
    """`out` as a folder to write: refused (RunDirError) when it exists and is not one."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise RunDirError(f"{flag}: {root} exists and is not a directory; give a folder")
    return root


def check_in_dir(path: str | Path, flag: str) -> Path:
    """An existing folder to read from (e.g. `--solve-dir`): a file there is refused."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise RunDirError(f"{flag}: {root} is a file; give the folder of an earlier run")
    return root


def check_out_file(path: str | Path, flag: str = "--out") -> Path:
    """A file to write: refused when it names an existing folder."""
    target = Path(path)
    if target.is_dir():
        raise RunDirError(f"{flag}: {target} is a directory; give a file name")
    return target


def check_in_file(path: str | Path, flag: str) -> Path:
    """A file to read: refused when it names a folder or does not exist."""
    source = Path(path)
    if source.is_dir():
        raise RunDirError(f"{flag}: {source} is a directory; give a file")
    if not source.exists():
        raise RunDirError(f"{flag}: {source} does not exist")
    return source


def prepare_run_dir(out: str | Path, subdirs: tuple[str, ...] = (),
                    summary: str | None = None) -> Path:
    """Create `out` (and `subdirs`), emptying every subdir an earlier run made.

    With `summary` (the file `finish_run_dir` writes last), an earlier run's summary is removed
    and `IN_PROGRESS` is written, so a killed rerun never pairs an old summary with new files.
    Everything is checked before anything is deleted."""
    root = check_out_dir(out)
    owned = _owned(root)
    clear = [_owned_content(root / name, name in owned) for name in subdirs]
    # A folder is gtsteer's when a run made it; one that was already there stays the user's.
    made = {name for name in subdirs if not (root / name).exists()}
    try:
        root.mkdir(parents=True, exist_ok=True)
        if summary is not None:
            write_text(root / IN_PROGRESS, "A gtsteer run is writing this folder (or was killed"
                       f" before writing {summary}); its files are not a finished result.\n")
            (root / summary).unlink(missing_ok=True)
        for name, entries in zip(subdirs, clear, strict=True):
            sub = root / name
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            sub.mkdir(parents=True, exist_ok=True)
        if made - owned:
            write_text(root / OWNED, json.dumps({"made": sorted(owned | made)}) + "\n")
    except OSError as exc:
        raise RunDirError(f"--out: cannot prepare {root}: {exc.strerror or exc}") from exc
    return root


def finish_run_dir(out: str | Path, summary: str, data: BaseModel | Any) -> Path:
    """Write the run's summary (atomically), then remove `IN_PROGRESS`: the run is complete."""
    root = Path(out)
    path = write_json(root / summary, data)
    (root / IN_PROGRESS).unlink(missing_ok=True)
    return path


def _owned(root: Path) -> set[str]:
    """The subfolders of `root` an earlier gtsteer run made (`OWNED`)."""
    try:
        return set(json.loads((root / OWNED).read_text(encoding="utf-8"))["made"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _owned_content(sub: Path, owned: bool) -> list[Path]:
    """What a run may delete in subfolder `sub`: everything when gtsteer made it; otherwise
    only old gtsteer game files, and a folder holding anything else is refused. A symbolic
    link is refused whatever it points to: emptying it would delete the target's files (a
    shared /tmp, a folder on another disk), and removing it would write elsewhere unasked."""
    if sub.is_symlink():
        raise RunDirError(f"--out: {sub} is a symbolic link (to {os.readlink(sub)}); a run"
                          " empties its folders and never follows a link, so remove the link"
                          " or choose another --out")
    if not sub.exists():
        return []
    if not sub.is_dir():
        raise RunDirError(f"--out: {sub} exists and is not a directory; move it or choose "
                          "another --out")
    entries = list(sub.iterdir())
    if owned:
        return entries
    foreign = sorted(
        e.name for e in entries if not (e.is_file() and _LEGACY_FILE.fullmatch(e.name))
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise RunDirError(f"--out: {sub} holds files gtsteer did not write ({shown}); a run "
                          "replaces that folder's content, so move them or choose another --out")
    return entries


def write_json(path: str | Path, data: BaseModel | Any) -> Path:
    """Write a pydantic model (or plain JSON data) with indent 2 and a final newline,
    atomically (a reader never sees half a file)."""
    if isinstance(data, BaseModel):
        text = data.model_dump_json(indent=2)
    else:
        text = json.dumps(data, indent=2, sort_keys=True)
    return write_text(path, text + "\n")


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (imported on first use: no display, and a command
    that draws nothing does not pay for the import)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG and close it."""
    plt = pyplot()
    target = Path(path)
    try:
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return target
