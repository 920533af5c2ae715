"""A resumable run's finished rows (`Ledger`): the one way every `--resume` keeps work.

Each finished unit is saved at once as a row stamped with the run's key (`run_key`, a digest
of all that decides the row: `hashed_key`, `digest_key`). A rerun with `--resume` keeps the
rows of its own key that fit the unit it would make, and makes the rest: a row cut by a kill,
damaged, or made under other settings is made again. Rows live one a file
(`Ledger(folder, key, Row)`: `folder/<index>.json`, or `.json.gz`, written atomically).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from gtsteer.binding.instances import stable_int
from gtsteer.runs.atomic import atomic_path
from gtsteer.runs.output import prepare_run_dir, write_json

Row = TypeVar("Row", bound=BaseModel)


def hashed_key(*parts: Any) -> str:
    """A run key from JSON-serialisable parts: 16 hex digits (`stable_int`, 63 bits)."""
    return f"{stable_int(*parts, bits=63):016x}"


def digest_key(*chunks: str | bytes) -> str:
    """A run key from text or bytes, in order: the first 16 hex digits of their sha256."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk.encode() if isinstance(chunk, str) else chunk)
    return digest.hexdigest()[:16]


class Ledger(Generic[Row]):
    """A run's rows in `folder`, one file a unit; `key` is the run's, or each index's (solve
    keys each instance)."""

    def __init__(self, folder: Path, key: str | Mapping[int, str], row: type[Row], *,
                 suffix: str = ".json"):
        self.folder, self.key, self.row, self.suffix = Path(folder), key, row, suffix

    @classmethod
    def open(cls, out: str | Path, subdir: str, key: str | Mapping[int, str], row: type[Row],
             *, resume: bool, summary: str, suffix: str = ".json") -> Ledger[Row]:
        """The ledger of `out/subdir` in a prepared run folder: emptied unless resumed."""
        keep = resume and (Path(out) / subdir).is_dir()
        root = prepare_run_dir(out, subdirs=() if keep else (subdir,), summary=summary)
        return cls(root / subdir, key, row, suffix=suffix)

    def path(self, index: int) -> Path:
        return self.folder / f"{index}{self.suffix}"

    def read(self, index: int) -> Row | None:
        """Row `index` if saved whole under this key (a `.gz` ledger also reads the plain file
        runs before 6 Dec 2026 wrote), else None."""
        path = self.path(index)
        plain = path.with_suffix("") if self.suffix.endswith(".gz") else None
        try:
            if path.is_file():
                data = path.read_bytes()
                row = self.row.model_validate_json(gzip.decompress(data) if plain else data)
            elif plain is not None and plain.is_file():
                row = self.row.model_validate_json(plain.read_bytes())
            else:
                return None
        except (OSError, ValueError, EOFError, zlib.error):  # cut or damaged: made again
            return None
        want = self.key if isinstance(self.key, str) else self.key.get(index)
        return row if getattr(row, "run_key", None) == want else None

    def kept(self, indices: Iterable[int], fits: Callable[[int, Row], bool] | None = None
             ) -> dict[int, Row]:
        """Every saved row among `indices` that `fits` its unit, by index."""
        found = {i: self.read(i) for i in indices}
        return {i: r for i, r in found.items() if r is not None and (fits is None or fits(i, r))}

    def prefix(self, count: int, fits: Callable[[int, Row], bool] | None = None) -> list[Row]:
        """Rows 0, 1, ... up to the first missing or unfit one, at most `count`."""
        out: list[Row] = []
        for i in range(count):
            row = self.read(i)
            if row is None or (fits is not None and not fits(i, row)):
                break
            out.append(row)
        return out

    def add(self, index: int, row: Row) -> None:
        """Save row `index` atomically (gzipped without a timestamp: bytes follow content)."""
        if not self.suffix.endswith(".gz"):
            write_json(self.path(index), row)
            return
        with atomic_path(self.path(index)) as tmp:
            tmp.write_bytes(gzip.compress(row.model_dump_json().encode(), mtime=0))
