"""The werewolf CLI prints what players and models write as plain text, and refuses setups it
could not honour (issue 27, items 1 and 8)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, FakeBackend, GenerationRequest, RawCompletion
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore

#: Rich markup (unbalanced, a hyperlink, a chat-template tag), an ANSI colour, an OSC-8 terminal
#: hyperlink, a backspace and a bell, and a right-to-left override.
HOSTILE = ["[/bold] hello", "[link=file:///etc/passwd]x[/link]", "[/INST] [red", "\x1b[31mred",
           "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07", "a\x08b\x07c", "\u202eevil"]
ESCAPED = ["[/bold] hello", "[link=file:///etc/passwd]x[/link]", "[/INST] [red", "\\x1b[31mred",
           "\\x1b]8;;http://evil.example\\x07click", "a\\x08b\\x07c", "\\u202eevil"]


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the strings checked below


def assert_inert(output: str) -> None:
    for text in ESCAPED:
        assert text in output
    assert "\x1b" not in output and "\r" not in output and "\u202e" not in output


class HostileBackend(FakeBackend):
    """The fake model, with markup and terminal escapes in every free-text answer."""

    async def complete(self, request: GenerationRequest, json_schema=None) -> RawCompletion:
        raw = await super().complete(request, json_schema)
        if json_schema is not None:
            return raw
        return RawCompletion(text=f"{' '.join(HOSTILE)} {raw.text}", usage=raw.usage)


def hostile_pool() -> LLMPool:
    return LLMPool(lambda model: LLM(model, backend=HostileBackend(model)))


def test_show_prints_markup_and_escapes_in_chat_and_names_as_text(tmp_path):
    db = tmp_path / "w.sqlite"
    store = GameStore(db)
    state = create_game(store, GameConfig(n_players=5, max_days=1, max_messages_per_day=2), seed=1,
                        game_id="m", pool=hostile_pool())
    GameRunner(store, pool=hostile_pool()).run(state)
    # A name from a snapshot or another tool: the CLI's own name checks are not the last line.
    conn = store.conn
    old = state.players[1].name
    conn.execute("UPDATE games SET state=replace(state, ?, ?) WHERE id='m'",
                 (f'"{old}"', '"[/i]\\u001b[2JZed"'))
    res = CliRunner().invoke(app, ["werewolf", "show", "m", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert_inert(res.output)
    assert "[/i]\\x1b[2JZed" in res.output


def test_bots_only_play_prints_model_markup_as_text(tmp_path, monkeypatch):
    from gtsteer.cli import werewolf as cli_werewolf

    # the CLI builds the game's model pool (served endpoints included): hand it the hostile one
    monkeypatch.setattr(cli_werewolf, "LLMPool", lambda factory=None: hostile_pool())
    res = CliRunner().invoke(app, ["werewolf", "play", "--llm", "fake", "--seed", "3", "--db",
                                   str(tmp_path / "p.sqlite"), "--game-id", "p", "--players",
                                   "5", "--max-days", "1", "--max-messages", "2"])
    assert res.exit_code == 0, res.output
    assert_inert(res.output)
    assert "Winner" in res.output


def test_a_human_line_with_markup_is_echoed_as_typed(tmp_path):
    db = str(tmp_path / "h.sqlite")
    line = "[/bold] hello [link=file:///etc/passwd]x[/link]"
    res = CliRunner().invoke(
        app, ["werewolf", "play", "--llm", "fake", "--seed", "3", "--db", db, "--game-id", "h1",
              "--with-human", "--human", "Robin", "--players", "5", "--max-days", "1",
              "--max-messages", "3"],
        input=f"{line}\n" + "1\n" * 200,
    )
    assert res.exit_code == 0, res.output
    said = [m.text for m in GameStore(db).load("h1").messages if m.author == "Robin"]
    assert line in said
    assert f"Robin: {line}" in res.output
    res = CliRunner().invoke(app, ["werewolf", "show", "h1", "--db", db])
    assert res.exit_code == 0 and f"Robin: {line}" in res.output


def test_too_many_players_names_the_range(tmp_path):
    res = CliRunner().invoke(app, ["werewolf", "play", "--players", "13", "--llm", "fake",
                                   "--db", str(tmp_path / "x.sqlite")])
    assert res.exit_code == 2
    assert "players must be between 5 and 12 (got 13)" in res.output
    assert "model per player" not in res.output


@pytest.mark.parametrize(("flag", "value", "allowed"), [
    ("--rules", "bogus", "'reference' or 'simple'"), ("--ties", "coin", "'none' or 'random'")])
def test_a_bad_rules_or_ties_value_names_the_flag_and_the_value(tmp_path, flag, value, allowed):
    db = tmp_path / "x.sqlite"
    res = CliRunner().invoke(app, ["werewolf", "play", "--llm", "fake", "--db", str(db),
                                   "--players", "5", flag, value])
    assert res.exit_code == 2
    assert f"{flag}: Input should be {allowed} (got '{value}')" in res.output
    assert GameStore(db).games() == []


@pytest.mark.parametrize("game_id", ["a/b", "../x", "a b", "x" * 41, "é"])
def test_a_game_id_the_web_app_cannot_open_is_refused(tmp_path, game_id):
    db = tmp_path / "x.sqlite"
    res = CliRunner().invoke(app, ["werewolf", "play", "--llm", "fake", "--db", str(db),
                                   "--game-id", game_id, "--players", "5"])
    assert res.exit_code == 2
    assert "letters, digits, '-' or '_'" in res.output
    assert GameStore(db).games() == []


def test_a_second_resume_of_one_game_stops_with_one_line(tmp_path, monkeypatch):
    """Two `resume`s of one game: the one whose step the other already committed stops with a
    clear message, not a StaleStep traceback, and writes nothing."""
    import gtsteer.cli.werewolf as cli

    db = tmp_path / "r.sqlite"
    store = GameStore(db)
    state = create_game(store, GameConfig(n_players=5, max_messages_per_day=3), seed=2, game_id="r")
    GameRunner(store).run(state, max_steps=3)
    moved_on = GameRunner(store).run(store.load("r"), max_steps=1)  # "the other process"
    before = store.load("r")
    assert before == moved_on

    class StaleLoad(GameStore):
        def load(self, game_id):  # this process read the game one step earlier
            return state if game_id == "r" else super().load(game_id)

    monkeypatch.setattr(cli, "_store", lambda _db: StaleLoad(db))
    res = CliRunner().invoke(app, ["werewolf", "resume", "r", "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "another process is playing game r" in res.output
    assert "Traceback" not in res.output and res.exception is None or isinstance(
        res.exception, SystemExit)
    assert GameStore(db).load("r") == before


def test_an_error_that_quotes_markup_is_printed_literally(tmp_path):
    res = CliRunner().invoke(app, ["werewolf", "show", "[/bold]x", "--db",
                                   str(tmp_path / "x.sqlite")])
    assert res.exit_code == 2
    assert "no game '[/bold]x'" in res.output


def test_show_is_labelled_the_god_view_and_prints_what_only_god_sees(tmp_path):
    """`show` prints roles, pack chat and night actions, which a spectator may not see
    (`visibility.PUBLIC`), so it says it is the god view (issue 41 item 6)."""
    from gtsteer.werewolf.events import step_events
    from gtsteer.werewolf.replay import replay
    from gtsteer.werewolf.visibility import PUBLIC, for_viewer

    db = tmp_path / "g.sqlite"
    store = GameStore(db)
    config = GameConfig(n_players=7, max_days=1, max_messages_per_day=2)
    final = GameRunner(store).run(create_game(store, config, seed=2, game_id="g"))
    res = CliRunner().invoke(app, ["werewolf", "show", "g", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("God view of game g: ")
    pack = next(m for m in final.messages if m.channel == "pack")
    assert f"[pack] {pack.author}: {pack.text}"[:60] in res.output.replace("\n", " ")
    assert "werewolf" in res.output and " abducted " in res.output
    public = [e for b, a, d in replay(final, store.steps("g"))
              for e in for_viewer(step_events(b, a, d), PUBLIC)]
    assert not any(e.get("channel") == "pack" for e in public)
    assert not any(e["type"] == "night_action" for e in public)
    helped = CliRunner().invoke(app, ["werewolf", "show", "--help"])
    assert "god view" in helped.output and "spectator's view)" not in helped.output
