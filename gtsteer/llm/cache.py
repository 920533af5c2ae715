"""Persistent response cache.

diskcache stores entries in SQLite (WAL, one transaction per write), so several processes can
share a directory and a killed writer leaves every committed entry readable. Only successful
answers are stored; the key holds no secret (API keys never enter it, URLs are stripped of
credentials and query strings).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any
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


class ResponseCache:
    """A thin, typed face over diskcache: JSON values under hashed keys."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir() / "responses"
        self.directory.mkdir(parents=True, exist_ok=True)
        # No size limit: evicting an answer would silently change a "pure" run's cost.
        self._cache = diskcache.Cache(str(self.directory), size_limit=2**40, eviction_policy="none")

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self._cache.get(key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._cache.set(key, json.dumps(value, ensure_ascii=False))

    def __len__(self) -> int:
        return len(self._cache)

    def volume_bytes(self) -> int:
        return self._cache.volume()

    def clear(self) -> int:
        return self._cache.clear()

    def close(self) -> None:
        self._cache.close()
