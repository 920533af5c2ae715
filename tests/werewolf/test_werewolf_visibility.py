"""`gtsteer.werewolf.visibility` is the one rule set for who may see what: a bot (its prompt and
hook), a human seat (web page, terminal), a spectator and the god view all ask it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gtsteer.cli import werewolf as cli_werewolf
from gtsteer.cli.common import console
from gtsteer.werewolf.context import build_context
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.prompts import action_line
from gtsteer.werewolf.replay import replay, replay_events
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.visibility import GOD, PUBLIC, Viewer, bot_viewer, for_viewer

PACKAGE = Path(__file__).resolve().parents[2] / "gtsteer"


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    """A finished bot-only game (fake model) with pack chat and night actions, and its steps."""
    store = GameStore(tmp_path_factory.mktemp("vis") / "v.sqlite")
    config = GameConfig(n_players=8, max_days=2, max_messages_per_day=2)
    final = GameRunner(store).run(create_game(store, config, seed=4, game_id="v"))
    steps = list(replay(final, store.steps("v")))
    tagged = [e for b, a, d in steps for e in step_events(b, a, d)]
    wolf = final.wolves()[0]
    villager = next(p.name for p in final.players if p.role is Role.VILLAGER)
    assert any(e["type"] == "message" and e["channel"] == "pack" for e in tagged)
    assert any(e["type"] == "night_action" and villager not in e["audience"] for e in tagged)
    return store, final, steps, tagged, wolf, villager


def seat(name: str) -> Viewer:
    return Viewer(kind="seat", name=name)


def test_each_viewer_receives_exactly_its_audience(game):
    _, final, _, tagged, wolf, villager = game
    pack = [e["text"] for e in tagged if e["type"] == "message" and e["channel"] == "pack"]
    public = for_viewer(tagged, PUBLIC)
    assert len(public) == sum(e["audience"] == "all" for e in tagged)
    assert len(for_viewer(tagged, GOD)) == len(tagged)
    for viewer, reads_pack in ((seat(villager), False), (seat(wolf), True), (PUBLIC, False)):
        got = for_viewer(tagged, viewer)
        texts = {e["text"] for e in got if e["type"] == "message"}
        if reads_pack:
            assert set(pack) <= texts
        else:
            assert not set(pack) & texts
        assert not any("secret" in e or "audience" in e or "reason" in e for e in got)
        assert not any(e["type"] in ("decision", "notes") for e in got)
    seen = {(e["night"], e["actor"], e["verb"]) for e in for_viewer(tagged, seat(villager))
            if e["type"] == "night_action"}
    assert seen == {(a.night, a.actor, a.verb) for a in final.night_actions
                    if villager in a.observers}
    votes = [e for e in for_viewer(tagged, GOD) if e["type"] == "vote"]
    assert votes and all("reason" in e and "fallback" in e for e in votes)


def test_a_bot_sees_what_its_seat_sees(game):
    *_, tagged, wolf, villager = game
    for name in (wolf, villager):
        assert for_viewer(tagged, bot_viewer(name)) == for_viewer(tagged, seat(name))


def test_a_bots_prompt_holds_pack_chat_only_for_wolves(game):
    _, _, steps, _, wolf, villager = game
    # the state right after the first night's pack chat, before anyone is asked anything else
    after = next(a for b, a, _ in steps
                 if len(a.messages) > len(b.messages) and a.messages[-1].channel == "pack")
    line = after.messages[-1].text
    for bot in (wolf, villager):
        want = pending(after)
        prompt = build_context(after, bot, want, "balanced").completion("")
        assert (line in prompt) is bot_viewer(bot).sees(after.wolves())


def test_the_replay_hands_each_viewer_its_filtered_events(game):
    store, final, steps, _, _, villager = game
    got = [events for _, events in replay_events(final, store.steps("v"), seat(villager))]
    assert got == [for_viewer(step_events(b, a, d), seat(villager)) for b, a, d in steps]


def printed(steps, human: str | None) -> str:
    """What the terminal printed for `human`'s seat, one unwrapped line per event: the shared
    console is made wide for the capture (COLUMNS alone does not do it once an earlier test has
    set the console's width; at 80 columns a long pack line wrapped and this test failed)."""
    on_step = cli_werewolf._printer(human)
    width = console._width  # rich keeps a width once set; restored after
    console.width = 400
    try:
        with console.capture() as out:
            for b, a, d in steps:
                on_step(b, a, d)
    finally:
        console._width = width
    return out.get()


def test_the_terminal_shows_a_seat_only_what_it_may_see(game):
    _, final, steps, tagged, wolf, villager = game
    pack_lines = [f"[pack] {e['author']}: {e['text']}" for e in tagged
                  if e["type"] == "message" and e["channel"] == "pack"]
    hidden = [a for a in final.night_actions if villager not in a.observers]
    god, wolf_seat, village_seat = (printed(steps, None), printed(steps, wolf),
                                    printed(steps, villager))
    assert all(p in god and p in wolf_seat and p not in village_seat for p in pack_lines)
    assert all(action_line(a) in god and action_line(a) not in village_seat for a in hidden)
    assert f"Winner: {final.winner}" in village_seat


VIEWS = ["werewolf/context.py", "werewolf/hook_view.py", "werewolf/events.py",
         "werewolf/replay.py", "werewolf/web/live.py", "werewolf/web/manager.py",
         "cli/werewolf.py"]


@pytest.mark.parametrize("module", VIEWS)
def test_every_view_imports_the_visibility_module(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "gtsteer.werewolf.visibility" in imported


def test_nothing_else_reads_who_observed_or_was_notified() -> None:
    """`observers` and `notified` are written by the engine, stored by the store and read by
    `visibility` alone: no view keeps its own copy of the rule."""
    readers = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Attribute) and n.attr in ("observers", "notified")
               for n in ast.walk(tree)):
            readers.add(str(path.relative_to(PACKAGE)))
    assert readers <= {"werewolf/visibility.py", "werewolf/engine.py", "werewolf/store.py"}
    assert "werewolf/visibility.py" in readers
