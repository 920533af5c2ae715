"""Information isolation: audit every prompt of many complete fake-model games.

No bot (nor the router) may receive another player's hidden role, pack chat it is not in, or a
night action it neither took nor observed. The prompts follow fixed conventions that make this
checkable (see gtsteer/werewolf/prompts.py): roles only as "Name (role)", night actions only as
`action_line`, pack chat only as "[pack] ...".
"""

from __future__ import annotations

import re

import pytest

from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.prompts import abduction_notice, action_line
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig, GameState
from gtsteer.werewolf.store import GameStore

ROLE_TAG = re.compile(r"\b([A-Z][A-Za-z0-9]*) \((" + "|".join(r.value for r in Role) + r")\)")


class AuditRunner(GameRunner):
    """Keeps each request with the state it was built from."""

    def __init__(self, store: GameStore):
        super().__init__(store)
        self.seen: list[tuple[GameState, CallRecord]] = []

    def decide(self, state, want):
        decision, records = super().decide(state, want)
        self.seen += [(state, r) for r in records]
        return decision, records


def audit(state: GameState, rec: CallRecord) -> list[str]:
    problems: list[str] = []
    bot = rec.bot
    me = state.player(bot) if not bot.startswith("(") else None
    wolf = me is not None and me.role is Role.WEREWOLF
    prompt = rec.prompt
    for name, role in ROLE_TAG.findall(prompt):
        p = state.player(name)
        if p.role.value != role:
            problems.append(f"{bot}: false role tag {name} ({role})")
        allowed = (name == bot or not p.alive
                   or (wolf and p.role is Role.WEREWOLF))
        if not allowed:
            problems.append(f"{bot}: sees hidden role {name} ({role})")
    if not wolf:
        if "[pack]" in prompt:
            problems.append(f"{bot}: sees pack chat")
        for m in state.messages:
            if m.channel == "pack" and m.text in prompt:
                problems.append(f"{bot}: sees pack line {m.text!r}")
    for a in state.night_actions:
        if bot not in a.observers and action_line(a) in prompt:
            problems.append(f"{bot}: sees {action_line(a)!r}")
        if a.verb == "abduct" and a.target != bot and abduction_notice(a.night,
                                                                        a.target) in prompt:
            problems.append(f"{bot}: sees the abduction of {a.target}")
    return problems


GAMES = [(seed, 5 + seed % 8) for seed in range(20)]


def test_no_prompt_leaks_hidden_information(tmp_path):
    store = GameStore(tmp_path / "audit.sqlite")
    problems: list[str] = []
    observed_lines = 0
    audited = 0
    for seed, n in GAMES:
        runner = AuditRunner(store)
        state = create_game(store, GameConfig(n_players=n, max_messages_per_day=4), seed=seed,
                            game_id=f"a{seed}")
        final = runner.run(state)
        assert final.over and pending(final) is None
        for before, rec in runner.seen:
            problems += audit(before, rec)
            audited += 1
            # the audit is not vacuous: what a bot did observe does reach it
            for a in before.night_actions:
                if rec.bot in a.observers and action_line(a) in rec.prompt:
                    observed_lines += 1
        # the stored prompts are the same ones that were audited
        assert len(store.calls(f"a{seed}")) == len(runner.seen)
    assert not problems, problems[:10]
    assert audited > 1000 and observed_lines > 100


def test_audit_catches_a_planted_leak(tmp_path):
    store = GameStore(tmp_path / "plant.sqlite")
    runner = AuditRunner(store)
    final = runner.run(create_game(store, GameConfig(n_players=8, max_messages_per_day=3), seed=1,
                                   game_id="p"))
    wolf = final.wolves()[0]
    villager = next(p.name for p in final.players if p.role is not Role.WEREWOLF)
    state, rec = next((s, r) for s, r in runner.seen if r.bot == villager)
    alive_wolf_state = state.model_copy(deep=True)
    alive_wolf_state.player(wolf).alive = True
    planted = rec.model_copy(update={"prompt": rec.prompt + f"\n{wolf} (werewolf)"})
    assert any("hidden role" in p for p in audit(alive_wolf_state, planted))
    acts = [a for a in final.night_actions if villager not in a.observers and not a.blocked]
    if acts:
        leaked = rec.model_copy(update={"prompt": rec.prompt + action_line(acts[0])})
        assert any("sees" in p for p in audit(final, leaked))


@pytest.mark.parametrize("seed", [3, 11])
def test_wolves_do_see_their_pack(tmp_path, seed):
    store = GameStore(tmp_path / "w.sqlite")
    runner = AuditRunner(store)
    final = runner.run(create_game(store, GameConfig(n_players=9, max_messages_per_day=3),
                                   seed=seed, game_id="w"))
    wolves = final.wolves()
    for _, rec in runner.seen:
        if rec.bot in wolves:
            dealt = rec.prompt.split("The werewolves, as dealt: ", 1)[1].split(".")[0]
            assert set(dealt.split(", ")) == set(wolves)
