"""The studies' saved files: a result read back whole or refused by name (`read_result`), and
rows kept one a line of a JSON-lines file (`read_lines`, `write_lines`, `append_lines`), stamped
with the run's key as a product `Ledger`'s rows are, so `--resume` keeps only its own."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gtsteer.runs.atomic import write_text
from gtsteer.runs.ledger import Ledger

Saved = TypeVar("Saved", bound=BaseModel)


class DamagedFileError(ValueError):
    """A saved result file cannot be read as what it should hold (cut by a kill, emptied,
    overwritten, hand-edited); the message names the file and why, in one line."""


def read_result(path: str | Path, model: type[Saved]) -> Saved:
    """`path` (JSON) validated as `model`, or `DamagedFileError` naming the file and the first
    problems: bytes, not text, are parsed, so a file of random bytes is damaged too."""
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise DamagedFileError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']}"
                             for e in exc.errors()[:3])
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise DamagedFileError(f"{source}: not a readable {model.__name__} ({problems}{more})"
                               ) from None


def drop_from(ledger: Ledger[Any], count: int) -> None:
    """Delete the ledger's saved rows from index `count` on (past a gap, or another run's)."""
    for path in ledger.folder.glob(f"*{ledger.suffix}"):
        stem = path.name[:-len(ledger.suffix)]
        if not stem.isdigit() or int(stem) >= count:
            path.unlink()


def read_lines(path: Path, key: str, row: type[Saved],
               fits: Callable[[Saved], bool] | None = None) -> tuple[list[Saved], int]:
    """A JSON-lines file's rows under `key` that `fits`, in file order, and how many other
    lines it held (cut by a kill, another format, another run's)."""
    if not path.is_file():
        return [], 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            found = row.model_validate_json(line)
        except ValueError:
            dropped += 1
            continue
        if getattr(found, "run_key", None) == key and (fits is None or fits(found)):
            kept.append(found)
        else:
            dropped += 1
    return kept, dropped


def write_lines(path: Path, rows: Iterable[BaseModel]) -> None:
    """Replace a JSON-lines file with `rows`, atomically."""
    write_text(path, "".join(r.model_dump_json() + "\n" for r in rows))


def append_lines(path: Path, rows: Iterable[BaseModel]) -> None:
    """Append rows durably (a kill cuts at most the last line, which `read_lines` drops)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(r.model_dump_json() + "\n" for r in rows))
        fh.flush()
        os.fsync(fh.fileno())
