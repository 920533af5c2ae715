"""A leak audit that does not depend on wording (issue 8.3).

1. Non-interference: for decisions sampled from complete games, everything the bot may not know
   is perturbed (roles outside its knowledge, hidden night targets and results, pack chat for
   non-wolves, other bots' notes, reasons, playstyles, stories and models, the abductee); the
   prompt in both forms, the legal targets, the options and the chooser's input must stay
   byte-identical.
2. Canary games: a backend writes a unique nonce into every free-text output; stories and
   playstyle texts carry nonces too. Every request that reached the backend (retries and schema
   hints included) may contain only nonces whose source the bot may see. The audit reads
   nothing but the game's SQLite file.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3

import pytest
from werewolf_helpers import NONCE, CanaryBackend

from gtsteer.llm import LLM
from gtsteer.werewolf import context as context_module
from gtsteer.werewolf.context import build_context, choice_options
from gtsteer.werewolf.engine import legal_targets, night_actions_for
from gtsteer.werewolf.hook_view import hook_input
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES, PLAYSTYLES
from gtsteer.werewolf.prompts import router_prompt
from gtsteer.werewolf.router import least_active
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig, GameState, Pending, SummaryNotes
from gtsteer.werewolf.store import GameStore

# ---- 1. non-interference ------------------------------------------------------------------


class SamplingRunner(GameRunner):
    def __init__(self, store):
        super().__init__(store)
        self.asked: list[tuple[GameState, Pending]] = []

    def decide(self, state, want):
        self.asked.append((state, want))
        return super().decide(state, want)


def known_roles(state: GameState, bot: str) -> set[str]:
    """Players whose role (or evil/good reading) the bot knows."""
    me = state.player(bot)
    known = {bot} | {p.name for p in state.players if not p.alive}
    if me.role is Role.WEREWOLF:
        known |= set(state.wolves())
    known |= {a.target or "" for a in state.night_actions if bot in a.observers}
    return known


def perturb(state: GameState, bot: str, r: random.Random) -> GameState:
    """The same information set for `bot`, different hidden facts."""
    s = state.model_copy(deep=True)
    me = s.player(bot)
    known = known_roles(s, bot)
    hidden = [p for p in s.players if p.name not in known]
    roles = [p.role for p in hidden]
    r.shuffle(roles)
    for p, role in zip(hidden, roles, strict=True):
        p.role = role
    others = [p.name for p in s.players if p.name != bot]
    for p in s.players:
        if p.name != bot:
            p.story = f"secret story {r.random()}"
            p.playstyle = r.choice(PLAYSTYLE_NAMES)
            p.model = r.choice(["fake:a", "fake:b", "openai/gpt-4o-mini"])
    if me.role is not Role.WEREWOLF:
        for m in s.messages:
            if m.channel == "pack":
                m.text = f"secret pack line {r.random()}"
    for summary in s.summaries:
        if summary.bot != bot:
            summary.notes = SummaryNotes(suspects=f"secret {r.random()}")
    for v in s.votes:
        if v.voter != bot:
            v.reason, v.fallback = f"secret reason {r.random()}", r.random() < 0.5
    for a in s.night_actions:
        if bot in a.observers or bot in a.notified:
            continue
        a.reason = f"secret {r.random()}"
        if a.target is not None:
            a.target = r.choice(others)
            a.notified = [a.target] if a.verb == "abduct" and a.target != bot else []
        if a.result is not None:
            a.result = r.choice(["good", "evil"])
        a.failed = r.random() < 0.5
    if s.abducted is not None and bot != s.abducted and me.role is not Role.MANIAC:
        s.abducted = r.choice([n for n in s.living() if n != bot])
    return s


def view(state: GameState, bot: str, want: Pending) -> dict:
    """Everything a bot decision is built from: prompts, legal targets, options, chooser input."""
    if want.kind == "vote":
        want = want.model_copy(update={"legal_targets": legal_targets(state, bot, "vote")})
    elif want.kind == "night":
        actions = night_actions_for(state, bot, want.verb)
        want = want.model_copy(update={"actions": actions,
                                       "legal_targets": actions.get(want.verb, [])})
    ctx = build_context(state, bot, want, "balanced")
    return {
        "messages": [m.model_dump() for m in ctx.messages()],
        "completion": ctx.completion(f"{bot}:"),
        "legal": want.legal_targets,
        "actions": want.actions,
        "options": choice_options(state, bot, want),
        "chooser": hook_input(state, bot, want).model_dump(),
    }


def router_view(state: GameState) -> str:
    legal = legal_targets(state, "", "route")
    return router_prompt(state.living(), state.spoken_today(),
                         context_module.public_chat_lines(state), legal,
                         least_active(state, legal))


def sampled_decisions(tmp_path, games=((0, 7), (1, 9), (2, 12), (3, 8))):
    store = GameStore(tmp_path / "ni.sqlite")
    out = []
    for seed, n in games:
        runner = SamplingRunner(store)
        runner.run(create_game(store, GameConfig(n_players=n, max_messages_per_day=5), seed=seed,
                               game_id=f"n{seed}"))
        r = random.Random(seed)
        out += r.sample(runner.asked, min(60, len(runner.asked)))
    return out


def non_interference_failures(samples, k: int = 3) -> list[str]:
    failures = []
    for i, (state, want) in enumerate(samples):
        r = random.Random(i)
        if want.kind == "route":
            continue  # the router has its own test below
        base = view(state, want.actor, want)
        for _ in range(k):
            other = view(perturb(state, want.actor, r), want.actor, want)
            for key in base:
                if other[key] != base[key]:
                    failures.append(f"{want.actor} ({state.player(want.actor).role.value}, "
                                    f"{want.kind}, step {state.step}): {key} changed")
    return failures


def test_non_interference_every_sampled_decision(tmp_path):
    samples = sampled_decisions(tmp_path)
    kinds = {w.kind for _, w in samples}
    assert {"speak", "vote", "night", "summary", "pack_chat"} <= kinds
    assert len(samples) > 150
    failures = non_interference_failures(samples)
    assert not failures, failures[:10]


def test_router_sees_nothing_hidden(tmp_path):
    samples = [(s, w) for s, w in sampled_decisions(tmp_path) if w.kind == "route"]
    assert samples
    for i, (state, _) in enumerate(samples):
        # a "bot" that knows nothing: perturb from the point of view of a fresh villager name
        s = perturb(state, state.living()[0], random.Random(i))
        for p in s.players:  # even the first living player's own secrets
            if p.name == state.living()[0]:
                p.story, p.playstyle = "other", "trickster"
        assert router_view(s) == router_view(state)


def test_non_interference_catches_a_planted_leak(tmp_path, monkeypatch):
    samples = sampled_decisions(tmp_path, games=((5, 8),))
    original = context_module.day_header

    def leaky(day, alive, extra=""):
        return original(day, alive, extra) + " Hint: " + ",".join(alive)

    # leaking only the *living* list is fine (public); leaking roles is not:
    def leaky_roles(state, bot, day):
        entries = real_day_entries(state, bot, day)
        roles = ", ".join(f"{p.name}={p.role.value}" for p in state.players)
        return [*entries, context_module.Entry(text=roles)]

    real_day_entries = context_module.day_entries
    monkeypatch.setattr(context_module, "day_header", leaky)
    assert not non_interference_failures(samples[:20], k=1)
    monkeypatch.setattr(context_module, "day_entries", leaky_roles)
    assert non_interference_failures(samples[:20], k=2)


# ---- 2. canary games, audited from the SQLite file alone --------------------------------


def canary_game(tmp_path, seed: int, n: int, monkeypatch) -> tuple[str, CanaryBackend]:
    for style in PLAYSTYLE_NAMES:
        monkeypatch.setitem(PLAYSTYLES, style, {
            "village": f"{PLAYSTYLES[style]['village']} styv{style}",
            "wolf": f"{PLAYSTYLES[style]['wolf']} styw{style}",
        })
    backend = CanaryBackend()
    pool = LLMPool(lambda model: LLM(backend=backend, use_cache=False, structured_attempts=3))
    db = tmp_path / f"canary{seed}.sqlite"
    store = GameStore(db)
    names = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim",
             "Leo"][:n]
    cast = [(name, f"A villager, storyq{name}q.", PLAYSTYLE_NAMES[i % 6])
            for i, name in enumerate(names)]
    state = create_game(store, GameConfig(n_players=n, max_messages_per_day=4), cast=cast,
                        seed=seed, model="canary", pool=pool, game_id="k")
    GameRunner(store, pool=pool).run(state)
    store.close()
    return str(db), backend


def audit_db(db: str) -> tuple[list[str], dict[str, int]]:
    """Check every request a game sent to a model against what its bot may see, reading
    nothing but the database: roles, stories and styles from `players`, message visibility
    from `messages.visible_to`, and every request from `llm_calls.sent`."""
    c = sqlite3.connect(db)
    players = {name: (role, story, style) for name, role, story, style in c.execute(
        "SELECT name, role, story, playstyle FROM players")}
    wolves = {n for n, (role, _, _) in players.items() if role == "werewolf"}
    everyone = set(players) | {"(router)"}
    allowed: dict[str, set[str]] = {}  # secret -> who may read it
    for name, (_role, story, _style) in players.items():
        allowed[re.search(r"storyq\w+q", story).group()] = {name}
    for (style,) in c.execute("SELECT DISTINCT playstyle FROM steps WHERE playstyle IS NOT NULL"):
        users = {a for (a,) in c.execute("SELECT DISTINCT actor FROM steps WHERE playstyle=?",
                                         (style,))}
        allowed[f"styv{style}"] = {u for u in users if u not in wolves}
        allowed[f"styw{style}"] = {u for u in users if u in wolves}
    calls = c.execute("SELECT bot, response, sent FROM llm_calls ORDER BY id").fetchall()
    for bot, response, sent in calls:
        produced = set(re.findall(NONCE, response or ""))
        requests = json.loads(sent)
        for retry in requests[1:]:  # answers rejected by validation come back in retries
            produced |= set(re.findall(NONCE, retry)) - set(re.findall(NONCE, requests[0]))
        for nonce in produced:
            allowed.setdefault(nonce, set()).add(bot)
    for text, visible in c.execute("SELECT text, visible_to FROM messages"):
        readers = everyone if json.loads(visible) == ["*"] else set(json.loads(visible))
        for nonce in re.findall(NONCE, text):
            allowed[nonce] = allowed.get(nonce, set()) | readers
    problems, counts = [], {"requests": 0, "secrets_seen": 0, "retries": 0}
    for bot, _, sent in calls:
        requests = json.loads(sent)
        counts["retries"] += max(0, len(requests) - 1)
        for text in requests:
            counts["requests"] += 1
            for secret in set(re.findall(rf"{NONCE}|storyq\w+q|sty[vw]\w+", text)):
                counts["secrets_seen"] += 1
                if bot not in allowed.get(secret, set()):
                    problems.append(f"{bot} read {secret} (allowed: "
                                    f"{sorted(allowed.get(secret, []))})")
    return problems, counts


@pytest.mark.parametrize(("seed", "n"), [(0, 7), (1, 10)])
def test_canary_game_leaks_nothing(tmp_path, monkeypatch, seed, n):
    db, backend = canary_game(tmp_path, seed, n, monkeypatch)
    problems, counts = audit_db(db)
    assert not problems, problems[:10]
    # not vacuous: many secrets were read by their rightful readers, retries were audited
    assert counts["secrets_seen"] > 500 and counts["retries"] > 3
    # every request that reached the backend is in the database, attributed to its call
    with sqlite3.connect(db) as c:
        stored = [t for (sent,) in c.execute("SELECT sent FROM llm_calls")
                  for t in json.loads(sent)]
        hinted = sum("JSON schema" in t for t in stored)
    assert sorted(stored) == sorted(backend.seen)
    assert hinted > 10  # the schema hints of a non-grammar backend were audited too


def test_canary_audit_catches_a_planted_leak(tmp_path, monkeypatch):
    db, _ = canary_game(tmp_path, 2, 8, monkeypatch)
    c = sqlite3.connect(db)
    pack = c.execute("SELECT text FROM messages WHERE channel='pack'").fetchone()[0]
    villager = c.execute("SELECT name FROM players WHERE role='villager'").fetchone()[0]
    row_id, sent = c.execute("SELECT id, sent FROM llm_calls WHERE bot=? ORDER BY id DESC",
                             (villager,)).fetchone()
    requests = json.loads(sent)
    requests[0] += f"\n(overheard: {pack})"
    c.execute("UPDATE llm_calls SET sent=? WHERE id=?", (json.dumps(requests), row_id))
    c.commit()
    problems, _ = audit_db(db)
    assert any(villager in p for p in problems)


def test_abduction_notice_and_retries_are_in_the_database(tmp_path, monkeypatch):
    db, _ = canary_game(tmp_path, 5, 9, monkeypatch)
    c = sqlite3.connect(db)
    rows = c.execute("SELECT night, target, notified, observers FROM night_actions "
                     "WHERE verb='abduct'").fetchall()
    assert rows
    for night, target, notified, observers in rows:
        assert json.loads(notified) == [target] and target not in json.loads(observers)
        notice = f"Night {night}: {target}, you were abducted"
        readers = {bot for bot, sent in c.execute("SELECT bot, sent FROM llm_calls")
                   if notice in sent}
        assert readers <= {target}
    retried = c.execute("SELECT sent FROM llm_calls WHERE attempts > 1").fetchall()
    assert retried and all("Your previous answer was" in json.loads(s)[-1] for (s,) in retried)
