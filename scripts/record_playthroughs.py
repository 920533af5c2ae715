"""Record the playthrough regression files: one full game of every config with the fake model.

    .venv/bin/python scripts/record_playthroughs.py            # every configs/*.yaml
    .venv/bin/python scripts/record_playthroughs.py configs/x.yaml

Writes tests/data/playthroughs/<config stem>.txt, which tests/test_conformance.py compares
byte for byte. Rerun it after a deliberate change to prompts, the binding or the fake model,
and read the diff before committing: it shows exactly what a player sees at every step.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "playthroughs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path, help="default: configs/*.yaml")
    args = parser.parse_args(argv)
    configs = args.configs or sorted((ROOT / "configs").glob("*.yaml"))
    # A private response cache: the recording must not depend on (or fill) the user's cache.
    os.environ["GTSTEER_CACHE_DIR"] = tempfile.mkdtemp(prefix="playthroughs-")
    sys.path.insert(0, str(ROOT))
    from gtsteer.binding.conformance import record_playthrough

    OUT.mkdir(parents=True, exist_ok=True)
    for config in configs:
        target = OUT / f"{Path(config).stem}.txt"
        target.write_text(record_playthrough(config), encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
