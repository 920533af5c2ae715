"""docs/TABLE1.md is what its own recorded command writes from docs/data/table1 today: a change
to the renderer or to a domain's version shows up as a failing test, not as a stale page."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from lab.studies import table1

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "TABLE1.md"
#: The line that names the command, the time and the commit of the render.
WRITTEN = re.compile(r"^Written by `(?P<command>[^`]+)`.*$", re.MULTILINE)


def test_the_committed_table1_page_is_its_recorded_render(tmp_path, monkeypatch) -> None:
    committed = PAGE.read_text()
    found = WRITTEN.search(committed)
    assert found is not None, "docs/TABLE1.md names the command that wrote it"
    argv = shlex.split(found["command"])
    assert argv[:3] == ["python", "-m", "lab"] and argv[3] == "table1"
    monkeypatch.chdir(ROOT)  # the recorded paths are relative to the checkout
    doc = tmp_path / "TABLE1.md"
    assert table1.main([*argv[4:], "--doc", str(doc), "--quiet"]) == 0
    assert WRITTEN.sub("", doc.read_text()) == WRITTEN.sub("", committed)
