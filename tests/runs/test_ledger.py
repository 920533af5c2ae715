"""One way to run (issue 58, step 3): every resumable command keeps its rows through one
`Ledger`, and every driver gets its models from the context and runs through its executor."""

from __future__ import annotations

import ast
import gzip
import hashlib
from pathlib import Path

from pydantic import BaseModel

import gtsteer
from gtsteer.binding.instances import stable_int
from gtsteer.runs.context import RunContext
from gtsteer.runs.ledger import Ledger, digest_key, hashed_key
from gtsteer.werewolf.llmcalls import LLMPool

PACKAGE = Path(gtsteer.__file__).parent


class Row(BaseModel):
    run_key: str
    index: int
    value: float


def test_a_ledger_keeps_whole_rows_of_its_key_and_makes_the_rest_again(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "rows", "k1", Row)
    ledger.folder.mkdir()
    for i in range(4):
        ledger.add(i, Row(run_key="k1", index=i, value=i / 2))
    ledger.path(1).write_text('{"run_key": "k1", "ind')  # cut by a kill
    ledger.add(2, Row(run_key="other", index=2, value=9.0))  # another run's settings
    assert ledger.kept(range(5)) == {0: Row(run_key="k1", index=0, value=0.0),
                                     3: Row(run_key="k1", index=3, value=1.5)}
    assert ledger.kept(range(5), lambda i, row: row.value > 0) == {
        3: Row(run_key="k1", index=3, value=1.5)}
    assert [r.index for r in ledger.prefix(4)] == [0]  # stops at the first gap


def test_keys_per_index_and_gzipped_rows_with_their_older_plain_files(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, {0: "a", 1: "b"}, Row, suffix=".json.gz")
    ledger.add(0, Row(run_key="a", index=0, value=1.0))
    ledger.add(1, Row(run_key="a", index=1, value=2.0))  # not index 1's key
    assert gzip.decompress((tmp_path / "0.json.gz").read_bytes()) == \
        b'{"run_key":"a","index":0,"value":1.0}'
    before = (tmp_path / "0.json.gz").read_bytes()
    ledger.add(0, Row(run_key="a", index=0, value=1.0))
    assert (tmp_path / "0.json.gz").read_bytes() == before  # no timestamp in the gzip header
    (tmp_path / "1.json.gz").unlink()
    (tmp_path / "1.json").write_text('{"run_key": "b", "index": 1, "value": 3.0}')
    assert ledger.prefix(3) == [Row(run_key="a", index=0, value=1.0),
                                Row(run_key="b", index=1, value=3.0)]
    (tmp_path / "0.json.gz").write_bytes(b"\x1f\x8b not gzip")
    assert ledger.prefix(3) == []


def test_run_keys_are_the_digests_the_saved_runs_carry() -> None:
    """Unchanged from the commands' own key functions, so runs saved before still resume."""
    assert hashed_key("a", 1) == f"{stable_int('a', 1, bits=63):016x}" == "2657442bb4a48d62"
    assert digest_key("a|", b"\0b") == hashlib.sha256(b"a|\0b").hexdigest()[:16]
    assert len({hashed_key(i) for i in range(100)}) == 100


def test_the_pool_is_a_role_of_the_context() -> None:
    pool = LLMPool()
    assert RunContext.of(pool=pool).pool("fake") is pool
    made = RunContext.of().pool("fake")
    assert made is not pool and made.get("fake").model == "fake"


def test_no_driver_builds_its_models_runs_units_itself_or_keeps_rows_its_own_way() -> None:
    """The four Werewolf drivers resolved their own pool (`ctx.endpoint`) and called
    `run_units(..., ray=...)`; four modules reset SQLite files by hand (review 0832c41)."""
    found = []
    for path in sorted((PACKAGE / "runs").glob("*.py")):
        if path.stem in ("executor", "ray_pool", "context", "ledger"):
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module == "gtsteer.runs.executor":
                found += [f"{path.name} imports {a.name}" for a in node.names
                          if a.name == "run_units"]
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "LLMPool"
                    and node.keywords):
                found.append(f"{path.name}:{node.lineno} builds its models' pool")
            if isinstance(node, ast.FunctionDef) and node.name in (
                    "saved_rows", "saved_states", "resumable_records", "append_rows"):
                found.append(f"{path.name}: its own {node.name}")
        if '"-wal"' in text:
            found.append(f"{path.name} resets a SQLite database by hand")
    assert found == []
