"""Persistent response cache.

diskcache stores entries in SQLite (WAL, one transaction per write), so several processes can
share a directory and a killed writer leaves every committed entry readable. Only successful
answers are stored; the key holds no secret (API keys never enter it, URLs are stripped of
credentials and query strings).

Unusable storage is a `CacheError` naming the file and what to do, never a raw sqlite
traceback: a damaged `cache.db` can be moved aside (the next run rebuilds it, asking the model
again), a full disk or an unwritable folder needs another `GTSTEER_CACHE_DIR`. A cache that is
readable but not writable (a shared, read-only copy) still serves its hits: it is opened
read-only and new answers are simply not stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import warnings
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import diskcache

CACHE_VERSION = 1


def default_cache_dir() -> Path:
    return Path(os.environ.get("GTSTEER_CACHE_DIR") or Path.home() / ".cache" / "gtsteer")


def public_url(url: str | None) -> str | None:
    """Drop user:password and query/fragment (where tokens hide) before a URL is stored."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def cache_key(fields: dict[str, Any]) -> str:
    canonical = json.dumps({"v": CACHE_VERSION, **fields}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class StorageError(Exception):
    """A file gtsteer stores data in is damaged or unusable; the message names the file and
    what to do. Not an LLM failure: it stops the run instead of failing one game."""


class CacheError(StorageError):
    """The response cache cannot be opened, read or written."""


class CacheReadOnlyWarning(UserWarning):
    """The cache is served read-only: hits are used, new answers are not stored."""


#: diskcache's database file inside the cache directory.
DB_FILE = "cache.db"


def cache_error(directory: Path, exc: BaseException) -> CacheError:
    """One message per kind of storage failure, each with the way out."""
    db = directory / DB_FILE
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text):
        how = (f"the file is damaged; move the folder aside (mv {directory} {directory}.damaged)"
               " and rerun: the cache is rebuilt, at the cost of asking the model again")
    elif "full" in text or getattr(exc, "errno", None) == 28:
        how = "the disk is full; free space or set GTSTEER_CACHE_DIR to a folder on another disk"
    elif "readonly" in text or isinstance(exc, PermissionError):
        how = ("the folder is not writable; fix its permissions or set GTSTEER_CACHE_DIR to a "
               "writable folder")
    else:
        how = "move the folder aside or set GTSTEER_CACHE_DIR to another folder"
    return CacheError(f"response cache {db}: {text}: {how}")


class AnswerStore(Protocol):
    """What an `LLM` needs of a cache: `ResponseCache` on disk, or a stand-in such as the Ray
    task's `TravelCache`, which reads the driver's cache and keeps its new answers."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any]) -> None: ...


class ResponseCache:
    """A thin, typed face over diskcache: JSON values under hashed keys."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir() / "responses"
        self.read_only = False
        self._ro: sqlite3.Connection | None = None
        self._cache: diskcache.Cache | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # No size limit: evicting an answer would silently change a "pure" run's cost.
            self._cache = diskcache.Cache(str(self.directory), size_limit=2**40,
                                          eviction_policy="none")
        except (OSError, sqlite3.DatabaseError) as exc:
            if not self._open_read_only():
                raise cache_error(self.directory, exc) from None
            self._warn_read_only()

    def _warn_read_only(self) -> None:
        warnings.warn(f"response cache {self.directory / DB_FILE} is read-only: cached answers"
                      " are used, new ones are not stored", CacheReadOnlyWarning, stacklevel=3)

    def _open_read_only(self) -> bool:
        """Open an existing cache that may not be written (its folder or file is read-only)."""
        db = self.directory / DB_FILE
        if not db.is_file() or os.access(db, os.W_OK) and os.access(self.directory, os.W_OK):
            return False
        # mode=ro reads the WAL too, but needs its -shm; immutable=1 works without any write.
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(f"{db.resolve().as_uri()}?{flags}", uri=True)
                conn.execute("SELECT count(*) FROM Cache").fetchone()
            except sqlite3.DatabaseError:
                continue
            self._ro, self.read_only = conn, True
            self._disk = diskcache.Disk(str(self.directory))
            return True
        return False

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self._cache.get(key) if self._cache is not None else self._ro_get(key)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise cache_error(self.directory, exc) from None
        return None if raw is None else json.loads(raw)

    def _ro_get(self, key: str) -> Any:
        assert self._ro is not None
        row = self._ro.execute(
            "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1", (key,)).fetchone()
        return None if row is None else self._disk.fetch(row[0], row[1], row[2], False)

    def set(self, key: str, value: dict[str, Any]) -> None:
        if self._cache is None or self.read_only:  # read-only: used, not stored
            return
        try:
            self._cache.set(key, json.dumps(value, ensure_ascii=False))
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc):
                raise cache_error(self.directory, exc) from None
            # SQLite opened a file it may not write as read-only: keep serving its hits
            self.read_only = True
            self._warn_read_only()
        except (OSError, sqlite3.DatabaseError) as exc:
            raise cache_error(self.directory, exc) from None

    def __len__(self) -> int:
        try:
            if self._cache is None:
                assert self._ro is not None
                return int(self._ro.execute("SELECT count(*) FROM Cache").fetchone()[0])
            return len(self._cache)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise cache_error(self.directory, exc) from None

    def volume_bytes(self) -> int:
        if self._cache is None:
            return (self.directory / DB_FILE).stat().st_size
        try:
            return self._cache.volume()
        except (OSError, sqlite3.DatabaseError) as exc:
            raise cache_error(self.directory, exc) from None

    def clear(self) -> int:
        if self._cache is None:
            raise CacheError(f"response cache {self.directory / DB_FILE} is read-only; "
                             "nothing was cleared")
        return self._cache.clear()

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        if self._ro is not None:
            self._ro.close()
