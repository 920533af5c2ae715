"""`python -m lab table1 --render-only --also RESULTS:CONFIG:deals=K:games=N` (issue 57,
docs/TENSION.md section 3): docs/TABLE1.md shows the tension experiment's dealt row beside the
committed undealt rows, a row whose run has not finished as partial, and no row at all as not
measured yet."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from gtsteer.binding import generate_instances
from gtsteer.domains import load_spec
from lab.studies import table1

ROOT = Path(__file__).resolve().parents[2]
OPPOSED = "schedule_meeting_opposed"
CONFIG = ROOT / "gtsteer" / "configs" / f"{OPPOSED}.yaml"
COMMITTED = ROOT / "docs" / "data" / "table1"
UNDEALT = [str(ROOT / "gtsteer" / "configs" / f"{n}.yaml")
           for n in ("trade_fruit_tone", "trade_fruit_offer", "schedule_meeting_dow", "debate")]
ROW = f"| `{OPPOSED}` | [2, 1, 1], dealt 2 |"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished dealt row of 3 instances on the fake model, restamped as the committed rows'
    model (`--llm` picks the rows of one model)."""
    results = tmp_path_factory.mktemp("tension")
    assert table1.main(["--llm", "fake", "--games", "3", "--steering-samples", "0", "--heldout",
                        "--deals", "2", "--results", str(results), "--doc",
                        str(results / "T.md"), "--quiet", str(CONFIG)]) == 0
    path = results / f"{OPPOSED}-deals2" / table1.ROW_FILE
    saved = json.loads(path.read_text())
    path.write_text(json.dumps(saved | {"llm": "local"}))
    for record in (path.parent / "games").glob("*.json"):  # as `local`'s run keys them
        record.write_text(json.dumps(json.loads(record.read_text()) | {
            "run_key": local_key(int(record.stem))}))
    return results


def local_key(index: int, llm: str = "local") -> str:
    """The run key `llm`'s dealt (2 deals) `--heldout` Table 1 run gives instance `index`."""
    from gtsteer.runs.solve import READERS, InstanceJob, run_key
    from gtsteer.solvers.cfr import DEFAULT_ITERATIONS, DEFAULT_SOLVER

    spec = load_spec(CONFIG)
    instance = generate_instances(spec, index + 1, 0)[index]
    return run_key(InstanceJob(spec.with_deals(2), instance, str(CONFIG), 0, DEFAULT_SOLVER,
                               DEFAULT_ITERATIONS, True, progress=False, readers=READERS), llm)


def render(doc: Path, *also: str) -> str:
    argv = ["--results", str(COMMITTED), "--render-only", "--doc", str(doc), *UNDEALT]
    for spec in also:
        argv += ["--also", spec]
    assert table1.main(argv) == 0
    return doc.read_text()


def table(page: str) -> list[str]:
    """The main table's rows."""
    lines = page.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| domain | S | solved")) + 2
    return lines[start:lines.index("", start)]


def section(page: str, heading: str) -> str:
    return page.split(heading)[1].split("\n#")[0]


def test_a_finished_dealt_row_shows_beside_the_committed_rows(measured: Path,
                                                              tmp_path: Path) -> None:
    plain = render(tmp_path / "plain.md")
    page = render(tmp_path / "T.md", f"{measured}:{CONFIG}:deals=2:games=3")
    rows = table(page)
    assert rows[:4] == table(plain)  # the committed rows as they were, the dealt one after
    assert rows[4].startswith(f"{ROW} 3 / 3 |")
    contrast = section(page, "### Primary contrast of a dealt row")
    lines = [ln for ln in contrast.splitlines() if ln.startswith(ROW)]
    assert [ln.split(" | ")[2:5] for ln in lines] == [["3", "proposer", "`nearest`"],
                                                     ["3", "proposer", "`greedy`"]]
    # the undealt rows keep their own declared contrast
    assert "### Primary contrast (declared): the proposer's" in page
    assert f"- `{OPPOSED}`: `python -m lab table1 --llm fake" in page
    assert "Partial rows" not in page and "not measured yet" not in page.lower()
    # The page's recorded command writes the same page again.
    written = next(ln for ln in page.splitlines() if ln.startswith("Written by"))
    command = shlex.split(written.split("`")[1])
    assert command[:3] == ["python", "-m", "lab"] and "--also" in command
    (tmp_path / "T.md").unlink()
    assert table1.main(command[4:]) == 0
    strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("Written by")]  # noqa: E731
    assert strip((tmp_path / "T.md").read_text()) == strip(page)


def test_a_partial_dealt_row_says_how_many_instances_finished(measured: Path,
                                                              tmp_path: Path) -> None:
    full = table1.stored_row(measured, OPPOSED, "local", 3, None, deals=2)
    assert full is not None
    results = tmp_path / "tension"
    shutil.copytree(measured, results)
    folder = results / f"{OPPOSED}-deals2"
    for done in (table1.ROW_FILE, "summary.json", "games/2.json"):  # the run is still going
        (folder / done).unlink()
    (folder / "games" / "1.json").write_text("{cut while writ")  # being written: not counted
    files = sorted(folder.rglob("*"))
    page = render(tmp_path / "T.md", f"{results}:{CONFIG}:deals=2:games=60")
    assert sorted(folder.rglob("*")) == files  # a render writes nothing there
    assert table(page)[4].startswith(f"{ROW} 1 of 60 instances finished (partial) |")
    contrast = section(page, "### Primary contrast of a dealt row")
    assert [ln.split(" | ")[2] for ln in contrast.splitlines() if ln.startswith(ROW)] == [
        "1 of 60 finished", "1 of 60 finished"]
    assert (f"Partial rows, their run still going or stopped: `{OPPOSED}` (1 of 60 instances"
            " finished).") in page
    assert (f"- `{OPPOSED}`: partial, read back from the records of the 1 of 60 instances"
            in page)
    # Its values are the finished instance's, exactly as the finished row has them.
    partial = table1.partial_row(results, CONFIG, "local", 60, 2)
    assert partial is not None and partial.row.instances == [0]
    assert partial.row.per_instance == {k: v[:1] for k, v in full.row.per_instance.items()}
    cells = lambda r: [(c.player, c.replay, c.baseline, c.others) for c in r.versus]  # noqa: E731
    assert cells(partial.row) == cells(full.row)
    assert {c.gain.n for c in partial.row.versus} == {1}
    # partial is never saved with a row
    assert "partial" not in partial.row.model_dump()


def test_records_of_other_settings_do_not_count(measured: Path, tmp_path: Path) -> None:
    results = tmp_path / "tension"
    shutil.copytree(measured, results)
    folder = results / f"{OPPOSED}-deals2"
    (folder / table1.ROW_FILE).unlink()
    record = folder / "games" / "0.json"
    saved = json.loads(record.read_text())
    record.write_text(json.dumps(saved | {"deals": saved["deals"][:1]}))  # dealt once
    other = folder / "games" / "1.json"
    saved = json.loads(other.read_text())
    other.write_text(json.dumps(saved | {"instance": saved["instance"] | {"seed": 1}}))
    partial = table1.partial_row(results, CONFIG, "local", 60, 2)
    assert partial is not None and partial.row.instances == [2]
    assert table1.partial_row(results, CONFIG, "local", 60, 4) is None
    # a record another model made (its run key) is not this model's row
    last = folder / "games" / "2.json"
    last.write_text(json.dumps(json.loads(last.read_text()) | {"run_key": local_key(2, "fake")}))
    assert table1.partial_row(results, CONFIG, "local", 60, 2) is None


def test_no_dealt_row_yet_is_one_line_and_no_numbers(tmp_path: Path) -> None:
    plain = render(tmp_path / "plain.md")
    page = render(tmp_path / "T.md", f"{tmp_path / 'none'}:{CONFIG}:deals=4:games=60")
    assert table(page) == table(plain) and "dealt 4" not in page
    assert "### Primary contrast of a dealt row" not in page
    assert (f"Not measured yet (the run was stopped before them, or is still going):"
            f" `{OPPOSED}-deals4` (0 instances solved so far).") in page
    differ = set(page.splitlines()) ^ set(plain.splitlines())
    assert all(ln.startswith(("Written by", "Not measured yet", "![")) for ln in differ), differ


@pytest.mark.parametrize("argv, message", [
    (["--render-only", "--also", "results:config.yaml:deals=4"], "RESULTS:CONFIG:deals=K"),
    (["--render-only", "--also", "results:config.yaml:deals=0:games=60"], "K, N >= 1"),
    (["--render-only", "--also", "results:config.yaml:deals=4:games=60:x=1"], "--also"),
    (["--also", f"results:{CONFIG}:deals=4:games=60"], "--also is for --render-only"),
    (["--render-only", "--also", "results:no/such.yaml:deals=4:games=60"],
     "no config file no/such.yaml"),
])
def test_a_bad_also_is_refused_in_one_line(argv: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        table1.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_not_measured_yet_counts_only_this_rows_solved_records(measured: Path,
                                                               tmp_path: Path) -> None:
    """A folder holding only records this row would not use (another model's run key, a failed
    instance, an instance past --games) is a row not measured yet with none of them counted."""
    results = tmp_path / "tension"
    shutil.copytree(measured, results)
    folder = results / f"{OPPOSED}-deals2"
    (folder / table1.ROW_FILE).unlink()
    first = folder / "games" / "0.json"
    first.write_text(json.dumps(json.loads(first.read_text()) | {"run_key": local_key(0, "fake")}))
    failed = folder / "games" / "1.json"
    failed.write_text(json.dumps(json.loads(failed.read_text()) | {"status": "failed"}))
    page = render(tmp_path / "T.md", f"{results}:{CONFIG}:deals=2:games=2")  # not instance 2
    assert (f"Not measured yet (the run was stopped before them, or is still going):"
            f" `{OPPOSED}-deals2` (0 instances solved so far).") in page
    page = render(tmp_path / "T.md", f"{results}:{CONFIG}:deals=2:games=3")
    assert table(page)[4].startswith(f"{ROW} 1 of 3 instances finished (partial) |")


def test_a_dealt_row_given_twice_shows_once(measured: Path, tmp_path: Path) -> None:
    """`--deals K CONFIG` and `--also RESULTS:CONFIG:deals=K` name one row: it is shown once."""
    doc = tmp_path / "T.md"
    assert table1.main(["--results", str(measured), "--render-only", "--doc", str(doc),
                        "--deals", "2", str(CONFIG),
                        "--also", f"{measured}:{CONFIG}:deals=2:games=3"]) == 0
    assert [row[:len(ROW)] for row in table(doc.read_text())] == [ROW]
