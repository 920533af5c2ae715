"""Atomic result files: every file a run writes appears whole or not at all.

A file is written to a temporary name in its own folder and renamed over the target
(`os.replace`, atomic on POSIX and Windows within one file system), so a killed run or a full
disk never leaves a cut `summary.json` or a 0-byte game file behind: a reader finds the old
file, the new one, or none. A failed write (no space, no permission) removes its temporary
file and raises `ResultWriteError` naming the target.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from gtsteer.llm.cache import StorageError


class ResultWriteError(StorageError):
    """A result file could not be written; the message names it and the cause."""


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it is renamed to `path`.

    For writers that want a file name (numpy, matplotlib, safetensors). The parent folder is
    created; on any error the temporary file is removed and the target is left untouched."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultWriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    # The target's name stays the suffix (np.save appends .npy otherwise); the writer creates
    # the file, so it gets the usual permissions, not mkstemp's 0600.
    tmp = target.parent / f".tmp-{secrets.token_hex(4)}-{target.name}"
    try:
        yield tmp
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultWriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary folder next to `path`; on success it replaces `path` (a folder that
    is missing or empty, as `prepare_run_dir` leaves a subfolder), so a saved model is whole
    or absent. On any error the temporary folder is removed."""
    target = Path(path)
    tmp = target.parent / f".tmp-{secrets.token_hex(4)}-{target.name}"
    try:
        tmp.mkdir(parents=True)
        yield tmp
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()  # rename() may replace an empty folder, but not on every system
        os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ResultWriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path."""
    with atomic_path(path) as tmp, tmp.open("x", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)
