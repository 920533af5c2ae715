"""The test folders mirror the packages (issue 58, item 6): every test file sits one folder
below tests/, in a folder named after the gtsteer package it mainly exercises, `lab` (tests of
lab/) or `project` (repository-level checks: docs, README, wheel, conformance, goldens, ...).

Test folders are not packages (no `__init__.py`): pytest imports each test file under its own
name, so two test files may not share a name; the shared helpers stay at tests/ top level,
on `sys.path` through pyproject's `pythonpath`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
FOLDERS = {p.parent.name for p in (ROOT / "gtsteer").glob("*/__init__.py")} | {"lab", "project"}


def test_every_test_file_is_in_a_folder_named_after_a_package() -> None:
    files = sorted(TESTS.rglob("test_*.py"))
    misplaced = [str(p.relative_to(TESTS)) for p in files
                 if p.parent.parent != TESTS or p.parent.name not in FOLDERS]
    assert files and not misplaced, (
        f"test files belong in tests/<folder>/, folder one of {sorted(FOLDERS)}: {misplaced}")


def test_test_file_names_are_unique_and_folders_are_not_packages() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
    assert sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")) == []
