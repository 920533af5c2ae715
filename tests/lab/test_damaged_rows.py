"""Saved study rows that a kill, a full disk or a hand edit damaged (reliability review
0832c41, L2 and its notes): `python -m lab table1 --render-only` and `python -m lab psro-discovery
--render-only` name the damaged file and why, skip it and still write the intact rows; their
bad arguments are one line and exit 2; rows and docs are written whole or not at all. No model
is loaded: Table 1's saved rows under docs/data are copied and damaged, the PSRO study's
made on a test game with doubles."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from lab_support import lab
from psro_helpers import STRENGTH_CONFIG, Models
from typer.testing import CliRunner

from gtsteer.runs import atomic
from gtsteer.runs.psro import SCHEMA_VERSION as PSRO_SCHEMA
from lab.bench import benchdoc
from lab.studies import psro_discovery

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

TABLE1_DOMAINS = ("debate", "schedule_meeting_dow", "trade_fruit_offer", "trade_fruit_tone")
PSRO_ROWS = tuple(psro_discovery.ROWS)


def edit(path: Path, change: Callable[[dict], None]) -> bytes:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    return json.dumps(data).encode()


def halve(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2]


def set_row(field: str, value: object) -> Callable[[Path], bytes]:
    return lambda p: edit(p, lambda d: d["row"].__setitem__(field, value))


TABLE1_DAMAGE: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "truncated": (halve, "Invalid JSON"),
    "empty": (lambda p: b"", "Invalid JSON"),
    "random bytes": (lambda p: bytes(range(256)) * 4, "Invalid JSON"),
    "a list": (lambda p: b"[]", "the file: Input should be an object"),
    "games a word": (set_row("games", "many"), "row.games"),
    "payoff span 0": (set_row("payoff_span", 0), "row.payoff_span"),
}


@pytest.fixture
def table1_rows(tmp_path: Path) -> Path:
    """A copy of the committed Table 1 rows (the row files only)."""
    results = tmp_path / "table1"
    for domain in TABLE1_DOMAINS:
        (results / domain).mkdir(parents=True)
        shutil.copy(ROOT / "docs/data/table1" / domain / "table1_row.json", results / domain)
    return results


def table1(results: Path, doc: Path, *extra: str):
    configs = [str(ROOT / "gtsteer" / "configs" / f"{d}.yaml") for d in TABLE1_DOMAINS]
    return runner.invoke(lab, ["table1", "--render-only", "--results", str(results),
                               "--doc", str(doc), *extra, *configs])


@pytest.mark.parametrize("damage", list(TABLE1_DAMAGE))
def test_table1_render_only_names_a_damaged_row_and_writes_the_others(
        table1_rows: Path, tmp_path: Path, damage: str) -> None:
    make, reason = TABLE1_DAMAGE[damage]
    row = table1_rows / "schedule_meeting_dow" / "table1_row.json"
    row.write_bytes(make(row))
    doc = tmp_path / "TABLE1.md"
    result = table1(table1_rows, doc)
    assert result.exit_code == 0, result.output
    assert f"skipped `schedule_meeting_dow`: {row}: not a readable StoredRow (" in result.stderr
    assert reason in result.stderr
    text = doc.read_text(encoding="utf-8")
    for intact, n in (("debate", 20), ("trade_fruit_offer", 40), ("trade_fruit_tone", 20)):
        assert f"| `{intact}` | 2 | {n} / {n} |" in text  # S = 2
    assert "| `schedule_meeting_dow` |" not in text
    assert "could not be read (not shown" in text and "`schedule_meeting_dow`." in text


def test_table1_refuses_a_doc_that_is_a_folder_in_one_line(table1_rows: Path,
                                                           tmp_path: Path) -> None:
    folder = tmp_path / "TABLE1.md"
    folder.mkdir()
    result = table1(table1_rows, folder)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: RunDirError: --doc: {folder} is a directory; give a file name"]
    assert list(folder.iterdir()) == []


def test_a_doc_write_that_fails_leaves_the_old_doc_whole(
        table1_rows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The doc is written to a temporary file and renamed over the old one: a write that
    dies (here the rename fails, as a kill or a full disk would stop it) leaves the old page,
    never a cut one, and no temporary file."""
    doc = tmp_path / "TABLE1.md"
    doc.write_text("the old page\n", encoding="utf-8")

    real_replace = os.replace

    def full_disk_at_the_doc(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == doc:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", full_disk_at_the_doc)
    result = table1(table1_rows, doc)
    assert result.exit_code == 2
    assert f"cannot write {doc}: No space left on device" in result.stderr
    assert doc.read_text(encoding="utf-8") == "the old page\n"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_write_section_replaces_the_doc_whole(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    start, end = benchdoc.markers("x")
    old = f"# Benchmarks\n\n{start}\nold\n{end}\n"
    doc.write_text(old, encoding="utf-8")
    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def recording(src: str | Path, dst: str | Path) -> None:
        renames.append((Path(src).name, Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", recording)
    benchdoc.write_section(doc, start, end, benchdoc.wrap(start, end, "new"))
    assert doc.read_text(encoding="utf-8") == f"# Benchmarks\n\n{start}\nnew\n{end}\n"
    assert [dst for _, dst in renames] == ["BENCHMARKS.md"]
    assert renames[0][0].startswith(".tmp-")


# ---- psro-discovery -------------------------------------------------------------------------


@pytest.fixture
def psro_rows(tmp_path: Path) -> Path:
    """Every row of the PSRO discovery study, run on the strength test game with doubles."""
    data = yaml.safe_load(STRENGTH_CONFIG.read_text())
    configs = []
    for name, stances in (("start", ["calm", "any"]), ("full", ["calm", "bold", "any"])):
        data.update(name=f"strength_{name}", actions={"stance": stances})
        configs.append(tmp_path / f"strength_{name}.yaml")
        configs[-1].write_text(yaml.safe_dump(data))
    results = tmp_path / "psro_discovery"
    psro_discovery.main(["--config", str(configs[0]), "--reference", str(configs[1]),
                         "--results", str(results), "--doc", str(tmp_path / "first.md"),
                         "--games", "2", "--iterations", "1", "--candidates", "1"],
                        clients=Models())
    assert sorted(p.name for p in results.iterdir() if p.is_dir()) == sorted(PSRO_ROWS)
    return results


def psro(results: Path, doc: Path, *extra: str):
    return runner.invoke(lab, ["psro-discovery", "--render-only", "--results",
                               str(results), "--doc", str(doc), *extra])


def set_summary(field: str, value: object) -> Callable[[Path], bytes]:
    return lambda p: edit(p, lambda d: d.__setitem__(field, value))


PSRO_DAMAGE: dict[str, tuple[str, Callable[[Path], bytes], str]] = {
    "truncated summary": ("summary.json", halve, "not a readable PSROSummary (the file:"
                                                 " Invalid JSON"),
    "empty summary": ("summary.json", lambda p: b"", "Invalid JSON"),
    "random summary": ("summary.json", lambda p: bytes(range(256)) * 4, "Invalid JSON"),
    "no iterations": ("summary.json", set_summary("iterations", []), "holds no iteration"),
    "newer schema": ("summary.json", set_summary("schema_version", 99),
                     "written with schema version 99, newer than this gtsteer reads"
                     f" ({PSRO_SCHEMA})"),
    "truncated row": ("study_row.json", halve, "not a readable StudyRow"),
}


@pytest.mark.parametrize("damage", list(PSRO_DAMAGE))
def test_psro_discovery_render_only_names_a_damaged_row_and_writes_the_others(
        psro_rows: Path, tmp_path: Path, damage: str) -> None:
    name, make, reason = PSRO_DAMAGE[damage]
    damaged = psro_rows / "embedded-shotgun" / name
    damaged.write_bytes(make(damaged))
    doc = tmp_path / "PSRO.md"
    result = psro(psro_rows, doc)
    assert result.exit_code == 0, result.output
    assert f"skipped {damaged}: " in result.stderr and reason in result.stderr
    text = doc.read_text(encoding="utf-8")
    assert "### `qwen0.5b-shotgun`:" in text and "### `embedded-shotgun`:" not in text
    assert "Saved rows that could not be read, not shown: `embedded-shotgun`" in text


def test_psro_discovery_bad_config_and_doc_are_one_line(psro_rows: Path,
                                                        tmp_path: Path) -> None:
    result = psro(psro_rows, tmp_path / "PSRO.md", "--config", "/nonexistent")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "ConfigError" in result.stderr and "/nonexistent" in result.stderr
    folder = tmp_path / "docdir"
    folder.mkdir()
    result = psro(psro_rows, folder)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: RunDirError: --doc: {folder} is a directory; give a file name"]


# ---- steer-heldout --render-only (notes) ----------------------------------------------------


def test_steer_heldout_render_only_names_the_damaged_row_file(tmp_path: Path) -> None:
    from lab.studies.saved import DamagedFileError
    from lab.studies.werewolf_heldout import read_rows

    rows = tmp_path / "rows"
    rows.mkdir()
    (rows / "0.json").write_text('{"run_key": "k", "index"', encoding="utf-8")
    with pytest.raises(DamagedFileError) as error:
        read_rows(tmp_path, "k")
    assert str(error.value).startswith(f"{rows / '0.json'}: not a readable FreshStateRow"
                                       " (the file: Invalid JSON")
    assert str(error.value).endswith("; `--resume` measures that state again")
