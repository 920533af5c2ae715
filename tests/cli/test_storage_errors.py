"""Damaged or unusable storage is one clear line naming the file and what to do, exit 2, with
nothing half-written (issue 27, item 3): the response cache and the Werewolf database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import solve_helpers  # noqa: F401  (registers the test utility in this process)
from solve_helpers import MIXED_2X2
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import CacheError, ResponseCache
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore, StoreError

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def one_line(result) -> str:
    """The command's output as one line (rich wraps long lines at the terminal width)."""
    return " ".join(result.output.split())


def filled_cache(directory: Path, entries: int = 400) -> Path:
    cache = ResponseCache(directory)
    for i in range(entries):
        cache.set(f"k{i}", {"text": "x" * 200, "i": i})
    cache.close()
    return directory / "cache.db"


def solve(tmp_path: Path, cache_root: Path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q", "-k", "5",
                                 "--out", str(out)], env={"GTSTEER_CACHE_DIR": str(cache_root)})
    return result, out


# ---- the response cache ---------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncated", "garbage header"])
def test_a_damaged_cache_stops_solve_with_one_line_naming_it(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "c"
    db = filled_cache(root / "responses")
    data = db.read_bytes()
    if damage == "truncated":
        db.write_bytes(data[: len(data) // 2])
    else:
        db.write_bytes(os.urandom(4096) + data[4096:])
    result, out = solve(tmp_path, root)
    assert result.exit_code == 2, result.output
    text = one_line(result)
    assert f"response cache {db}" in text and "move the folder aside" in text
    assert "Traceback" not in result.output
    assert not (out / "summary.json").exists()
    info = runner.invoke(app, ["llm", "info"], env={"GTSTEER_CACHE_DIR": str(root)})
    assert info.exit_code == 2 and f"response cache {db}" in one_line(info)


def test_mid_file_damage_stops_the_run_instead_of_failing_every_instance(tmp_path: Path) -> None:
    """The review's probe 64: all 30 instances 'failed (expand)' and the cache was never
    named. A read of a damaged page is now a CacheError that stops the run."""
    db = filled_cache(tmp_path / "responses", entries=2000)
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle: middle + 65536] = os.urandom(65536)
    db.write_bytes(bytes(data))
    cache = ResponseCache(tmp_path / "responses")
    with pytest.raises(CacheError, match=f"response cache {db}: .*malformed.*move the folder"):
        for i in range(2000):
            cache.get(f"k{i}")


def test_a_full_cache_disk_is_named_with_the_way_out(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses")
    cache.set("a", {"text": "x"})
    pages = cache._cache._sql("PRAGMA page_count").fetchone()[0]
    cache._cache._sql(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
    with pytest.raises(CacheError, match="disk is full; free space or set GTSTEER_CACHE_DIR"):
        for i in range(500):
            cache.set(f"k{i}", {"text": "y" * 4000})
    assert cache.get("a") == {"text": "x"}


def run_unprivileged(code: str, *paths: Path) -> subprocess.CompletedProcess:
    """Run `code` as a user who cannot write `paths` (root ignores file modes: use nobody)."""
    for path in paths:
        for p in [path, *path.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd="/",
                          timeout=120)


@pytest.fixture
def shared_tmp() -> Path:
    """A folder another user can reach (pytest's tmp_path is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="gtsteer-ro-"))
    path.chmod(0o755)
    yield path
    for p in [path, *path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    subprocess.run(["rm", "-rf", str(path)], check=True)


def test_a_read_only_cache_still_serves_its_hits(shared_tmp: Path) -> None:
    directory = shared_tmp / "responses"
    cache = ResponseCache(directory)
    cache.set("known", {"text": "cached answer"})
    cache.close()
    code = (
        "import warnings\n"
        "from gtsteer.llm import ResponseCache\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        f"    cache = ResponseCache({str(directory)!r})\n"
        "print(cache.read_only, cache.get('known'), cache.get('other'), len(cache))\n"
        "cache.set('new', {'text': 'not stored'})\n"
        "print(cache.get('new'), [str(w.message) for w in seen])\n"
    )
    done = run_unprivileged(code, directory)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "True {'text': 'cached answer'} None 1"
    assert second.startswith("None [") and "is read-only: cached answers are used" in second


def test_an_unwritable_empty_cache_dir_is_one_line(shared_tmp: Path) -> None:
    directory = shared_tmp / "cache"
    directory.mkdir()
    code = ("import sys\nfrom gtsteer.cli import app\n"
            f"sys.argv = ['gtsteer', 'solve', {str(MIXED_2X2)!r}, '--llm', 'fake', '-q',"
            f" '--out', {str(shared_tmp / 'out')!r}]\n"
            "import solve_helpers\napp()\n")
    done = run_unprivileged(f"import os; os.environ['GTSTEER_CACHE_DIR'] = {str(directory)!r}\n"
                            + code, directory)
    assert done.returncode == 2, done.stderr
    text = " ".join(done.stderr.split())
    assert f"response cache {directory / 'responses'}" in text and "not writable" in text
    assert "Traceback" not in done.stderr


# ---- the Werewolf database ------------------------------------------------------------------


def a_game(db: Path) -> None:
    store = GameStore(db)
    state = create_game(store, GameConfig(n_players=5, max_messages_per_day=2), seed=1,
                        game_id="g1")
    GameRunner(store).run(state, max_steps=12)
    store.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage header"])
@pytest.mark.parametrize("command", [["resume", "g1"], ["show", "g1"], ["export", "g1"],
                                     ["list"]])
def test_a_damaged_database_is_one_line_in_every_command(tmp_path: Path, damage: str,
                                                         command: list[str]) -> None:
    db = tmp_path / "ww.sqlite"
    a_game(db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2] if damage == "truncated"
                   else os.urandom(4096) + data[4096:])
    result = runner.invoke(app, ["werewolf", *command, "--db", str(db)])
    assert result.exit_code == 2, result.output
    text = one_line(result)
    assert f"werewolf database {db}" in text and "move it aside" in text
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["resume", "g1"], ["list"], ["show", "g1"]])
def test_db_naming_a_directory_is_refused(tmp_path: Path, command: list[str]) -> None:
    result = runner.invoke(app, ["werewolf", *command, "--db", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"--db {tmp_path} is a directory" in one_line(result)


def test_act_snapshot_naming_a_directory_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["werewolf", "act", "--snapshot", str(tmp_path), "--bot", "A",
                                 "--action", "vote"])
    assert result.exit_code == 2, result.output
    assert f"--snapshot: {tmp_path} is a directory" in one_line(result)


def test_a_full_disk_stops_a_game_at_its_last_committed_step(tmp_path: Path) -> None:
    db = tmp_path / "ww.sqlite"
    store = GameStore(db)
    state = create_game(store, GameConfig(n_players=5, max_messages_per_day=2), seed=1,
                        game_id="g1")
    state = GameRunner(store).run(state, max_steps=3)
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreError, match="disk is full; the last committed step is kept") as info:
        GameRunner(store).run(state)
    assert str(db) in str(info.value)
    store.close()
    reopened = GameStore(db)
    kept = reopened.load("g1")
    assert [r[0] for r in reopened.conn.execute(
        "SELECT step FROM steps WHERE game_id='g1' ORDER BY step")] == list(range(1, kept.step + 1))
    final = GameRunner(reopened).run(kept)  # resumes once there is room again
    assert final.over
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
