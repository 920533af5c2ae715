"""What made a run folder: `provenance.json`, written beside every driver's result.

It holds the command line (and the command's parsed parameters, when run from the CLI), the
config as given with its `key=value` overrides and the resolved config the run read, the
gtsteer version and the git commit (when gtsteer runs from a checkout), the models given per
role and where they were served, and the seed. `RunContext.folder` notes the run's facts when
a driver asks for its folder; `RunResult.written_to` writes the file when the driver is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gtsteer._version import __version__
from gtsteer.binding.shipped import resolve_config
from gtsteer.runs.errors import RunDirError

PROVENANCE_FILE = "provenance.json"

#: The command that is running (set by the CLI): its name, parameters and overrides.
_invocation: ContextVar[dict[str, Any] | None] = ContextVar("gtsteer_invocation", default=None)
_lock = threading.Lock()
#: Each run folder's facts, from `RunContext.folder`, until its result is written.
_runs: dict[Path, dict[str, Any]] = {}


@contextmanager
def invocation(command: str, params: Mapping[str, Any], config: str | None = None,
               overrides: Sequence[str] = ()) -> Iterator[None]:
    """The CLI command in progress, for the provenance of the folders it writes."""
    token = _invocation.set({
        "command": command,
        "params": {k: _plain(v) for k, v in params.items()},
        "config_given": config,
        "overrides": list(overrides),
    })
    try:
        yield
    finally:
        _invocation.reset(token)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


@cache
def git_commit() -> str | None:
    """The commit of the checkout gtsteer runs from (with `-dirty` for local changes); None
    for an installed package."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "") if head else None


def _resolved(config: str | Path) -> Any:
    """The config the run reads (its YAML, overrides applied), as JSON holds it; None where
    it cannot be read as YAML (a Python domain's config)."""
    try:
        path = resolve_config(config)
        if path.suffix in (".yaml", ".yml") and path.is_file():
            return json.loads(json.dumps(yaml.safe_load(path.read_text(encoding="utf-8")),
                                         default=str))
    except (OSError, ValueError, yaml.YAMLError):
        pass
    return None


def check_same_run(folder: Path, kind: str, config: str | Path) -> None:
    """Refuse (RunDirError) an explicit `--out` whose `provenance.json` names another kind of
    run or another resolved config: the run would empty another run's results. The same run
    again (a rerun, `--resume`) and a folder without provenance (new, or a stopped run's) pass."""
    try:
        earlier = json.loads((Path(folder) / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(earlier, dict):
        return
    theirs = earlier.get("kind") or earlier.get("command")  # a run without a kind: its command
    where = f"--out {folder}: holds the results of another"
    how = "; choose another --out, or remove the folder to replace them"
    if theirs != kind:
        raise RunDirError(f"{where} run (its {PROVENANCE_FILE}: a {str(theirs).replace('-', ' ')}"
                          f" run, not {kind.replace('-', ' ')}){how}")
    resolved = _resolved(config)
    same = (earlier.get("resolved_config") == resolved if resolved is not None
            else earlier.get("config") == str(config))
    if not same:
        raise RunDirError(f"{where} {kind} run (its {PROVENANCE_FILE}: another resolved config of"
                          f" {earlier.get('config_given') or earlier.get('config')}){how}")


def note_run(folder: Path, kind: str, config: str | Path, model: str,
             models: Mapping[str, str], api_base: str | None, seed: int) -> None:
    """The facts a driver's folder request knows (`RunContext.folder`)."""
    resolved = _resolved(config)
    with _lock:
        _runs[Path(folder)] = {"kind": kind, "config": str(config), "resolved_config": resolved,
                               "model": model, "models_given": dict(models),
                               "api_base": api_base, "seed": seed}


def provenance(folder: Path) -> dict[str, Any]:
    """The provenance record of `folder` (see the module docstring)."""
    with _lock:
        run = _runs.pop(Path(folder), {})
    return {"gtsteer_version": __version__, "git_commit": git_commit(),
            "python": sys.version.split()[0], "argv": list(sys.argv),
            **(_invocation.get() or {}), **run}
