"""`gtsteer werewolf play|resume|show|export|act|list`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gtsteer.cli.common import console, friendly_errors, parse_options
from gtsteer.cli.options import (
    BotLlm,
    Db,
    GameSeed,
    LobbyLlms,
    MaxDays,
    MaxMessages,
    Players,
    SeatLlms,
    Served,
    SnapshotOut,
    Steer,
    SteerTeam,
)
from gtsteer.cli.spend import spending
from gtsteer.llm import in_process
from gtsteer.runs.output import check_in_file
from gtsteer.werewolf.bots import bot_decision, human_line
from gtsteer.werewolf.engine import pending_for
from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.prompts import action_line
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import (
    MODERATOR,
    Decision,
    GameConfig,
    GameState,
    Pending,
    load_snapshot,
)
from gtsteer.werewolf.store import GameStore, StaleStep, default_db_path
from gtsteer.werewolf.visibility import GOD, Viewer, for_viewer, me_view, players_view

werewolf_app = typer.Typer(help="Play Werewolf with LLM bots (bot-only or with you at the table).")

def _store(db: str | None, *, read_only: bool = False) -> GameStore:
    return GameStore(Path(db) if db else default_db_path(), read_only=read_only)


def shown(text: object) -> str:
    """Player- or model-written text made inert for a terminal: non-printable characters (ANSI
    escapes, carriage returns, bidi overrides) are written as escapes. Rich markup is never
    parsed in such text because it only ever reaches the console inside `Text` (see `line`)."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in s)


def line(*parts: str | tuple[object, str]) -> Text:
    """A console line from (text, style) parts; no part is read as markup."""
    out = Text()
    for part in parts:
        text, style = part if isinstance(part, tuple) else (part, "")
        out.append(shown(text), style=style)
    return out


def say(*parts: str | tuple[object, str]) -> None:
    console.print(line(*parts), highlight=False)


def _printer(human: str | None):
    """Live transcript: a human's seat sees only what their player may know, a bot-only game is
    shown in the god view; `visibility.for_viewer` decides, as for the web app."""
    viewer = Viewer(kind="seat", name=human) if human else GOD

    def on_step(before: GameState, after: GameState, decision: Decision) -> None:
        for e in for_viewer(step_events(before, after, decision), viewer):
            if e["type"] == "vote":
                say("  ", (f"vote {e['order']}", "cyan"), f": {e['voter']} -> {e['target']}",
                    (" (fallback)" if e.get("fallback") else "", "red"))
            elif e["type"] == "night_action":
                say("  ", (e["text"], "magenta"))
            elif e["type"] == "notice" and e["player"] == viewer.seat:
                say("  ", (e["text"], "magenta"))  # the god view has the action line already
            elif e["type"] == "message" and e["channel"] == "pack":
                say((f"[pack] {e['author']}: {e['text']}", "dim"))
            elif e["type"] == "message":
                say((e["author"], "bold yellow" if e["author"] == MODERATOR else "bold"), ": ",
                    e["text"])
            elif e["type"] == "over":
                say((f"Winner: {e['winner']}", "bold green"), f" ({e['end_reason']})")

    return on_step


def _human_agent(state: GameState, want: Pending) -> Decision:
    """Ask the terminal for the human's decision (chat line, or a numbered target)."""
    me = state.player(want.actor or "")
    if want.kind in ("speak", "pack_chat"):
        where = "pack chat" if want.kind == "pack_chat" else f"day {state.day}"
        while True:
            typed = typer.prompt(f"[{where}] {me.name}, say something (empty to pass)",
                                 default="", show_default=False)
            try:
                text = human_line(typed)
                break
            except ValueError as exc:
                console.print(f"[red]not sent: {escape(str(exc))}; say it again[/]")
        return Decision(kind=want.kind, actor=me.name, text=text)
    if want.kind == "summary":
        return Decision(kind="summary", actor=me.name)
    what = "vote for" if want.kind == "vote" else " or ".join(want.actions or [want.verb or ""])
    say((f"{me.name} ({me.role.value}), choose whom to {what}:", "bold"))
    actions = want.actions or {want.kind: want.legal_targets}
    menu = [(a, t) for a, targets in actions.items() for t in targets]
    for i, (a, name) in enumerate(menu, 1):
        say(f"  {i}. {name}" + (f" ({a})" if len(actions) > 1 else ""))
    while True:
        pick = typer.prompt("number", type=int)
        if 1 <= pick <= len(menu):
            break
        console.print(f"[red]pick a number from 1 to {len(menu)}[/]")
    action, target = menu[pick - 1]
    return Decision(kind=want.kind, actor=me.name, target=target, reason="(human)",
                    action=action if want.kind == "night" else None)


def _human_of(state: GameState) -> str | None:
    return next((p.name for p in state.players if p.human), None)


def _chooser(steer: str | None, team: str):
    """The distilled chooser for `--steer DIR` (steering only `team`), else the default."""
    if not steer:
        return None
    from gtsteer.werewolf.playstyles import TeamChooser
    from gtsteer.werewolf.steering import DistilledPlaystyleChooser

    return TeamChooser(DistilledPlaystyleChooser.load(steer), team)


def _run(store: GameStore, state: GameState, chooser=None, pool: LLMPool | None = None
         ) -> GameState:
    human = _human_of(state)
    runner = GameRunner(store, pool=pool, chooser=chooser, human=_human_agent if human else None,
                        on_step=_printer(human))
    card = me_view(state, Viewer(kind="seat", name=human)) if human else None
    if card is not None:
        say("You are ", (card["name"], "bold"), ", the ", (card["role"], "bold"), ".")
        if card["role"] == Role.WEREWOLF.value:
            say(f"Your pack: {', '.join(card['pack']) or 'just you'}.")
    try:
        return runner.run(state)
    except StaleStep as exc:  # the store refused the step: nothing of it was written
        raise ValueError(f"{exc}: another process is playing game {state.game_id} (run one "
                         "`werewolf resume` per game at a time); this one stopped") from None


#: `play`'s flags by the GameConfig field they set, so a bad value names the flag.
PLAY_FLAGS = {"n_players": "--players", "n_wolves": "--wolves",
              "max_messages_per_day": "--max-messages"}


@werewolf_app.command()
@spending(budget=True, display=False)
def play(
    players: Players = 7,
    wolves: Annotated[
        int | None, typer.Option("--wolves", "-k", help="Werewolves (default by size).")
    ] = None,
    theme: Annotated[
        str | None, typer.Option("--theme", help='Theme for a generated cast, e.g. "pirates".')
    ] = None,
    bots_only: Annotated[
        bool, typer.Option("--bots-only/--with-human", help="Only bots play.")
    ] = True,
    human: Annotated[
        str | None, typer.Option("--human", help="Play yourself under this name.")
    ] = None,
    llm: SeatLlms = "local",
    seed: GameSeed = 0,
    db: Db = None,
    max_days: MaxDays = None,
    max_messages: MaxMessages = None,
    game_id: Annotated[
        str | None, typer.Option("--game-id", help="Id for the new game (default random).")
    ] = None,
    rules: Annotated[
        str, typer.Option("--rules", help="Night rules: reference (the reference app) or simple.")
    ] = "reference",
    ties: Annotated[
        str, typer.Option("--ties", help="Tied vote: none (nobody is eliminated) or random.")
    ] = "none",
    steer: Steer = None,
    steer_team: SteerTeam = "both",
    served: Served = Served(),
) -> None:
    """Start a new game and play it to the end (resume a killed game with `resume`)."""
    with friendly_errors():
        if not bots_only and not human:
            raise ValueError("--with-human needs --human NAME (the name you play under)")
        chooser = _chooser(steer, steer_team)
        names = [m.strip() for m in llm.split(",") if m.strip()] or ["local"]
        endpoint = served.endpoint()
        endpoint.check(*names)
        pool = LLMPool(factory=endpoint.llm)
        store = _store(db)
        config = parse_options(GameConfig, PLAY_FLAGS, n_players=players, n_wolves=wolves,
                               max_days=max_days, max_messages_per_day=max_messages,
                               rules=rules, ties=ties)
        state = create_game(
            store, config, seed=seed, model=names[0],
            models=[names[i % len(names)] for i in range(players)], theme=theme,
            human=human, game_id=game_id, pool=pool,
            api_base=served.api_base if not all(map(in_process, names)) else None,
        )
        say((f"Game {state.game_id}", "bold"), f" ({store.path}). {state.scene}")
        say("Players: " + ", ".join(p.name for p in state.players))
        _run(store, state, chooser, pool)
        say(f"Game id: {state.game_id}")


@werewolf_app.command()
@spending(budget=True, display=False)
def resume(
    game_id: Annotated[str, typer.Argument(help="Game to continue.")],
    db: Db = None,
    steer: Steer = None,
    steer_team: SteerTeam = "both",
    served: Served = Served(),
) -> None:
    """Continue a game from its last committed step (with the --steer it started with)."""
    with friendly_errors():
        chooser = _chooser(steer, steer_team)
        store = _store(db)
        state = store.load(game_id)
        if state.over:
            say(f"Game {game_id} is over: {state.winner} ({state.end_reason}).")
            return
        # The game's own server unless told otherwise. The key is never stored, and a stored
        # URL (a database may come from anywhere) gets only the key --api-key-env names.
        stored = served.api_base is None and state.api_base is not None
        endpoint = replace(served, api_base=served.api_base or state.api_base).endpoint(
            env_keys=not stored)
        endpoint.check(state.router_model, *{p.model for p in state.players})
        if stored:
            sent = ("the key in --api-key-env" if served.api_key_env
                    else "no key (--api-key-env sends one)")
            say(f"Served models at {state.api_base} (stored with the game); {sent}.")
        say(f"Resuming {game_id} at step {state.step} (day {state.day}, {state.phase}).")
        _run(store, state, chooser, LLMPool(factory=endpoint.llm))


@werewolf_app.command("list")
def list_games(db: Db = None) -> None:
    """List stored games."""
    with friendly_errors():
        games = _store(db, read_only=True).games()
    table = Table("game", "phase", "winner", "steps")
    for gid, status, winner, steps in games:
        table.add_row(line(gid), line(status), line(winner or ""), str(steps))
    console.print(table)


@werewolf_app.command()
def show(
    game_id: Annotated[str, typer.Argument()],
    db: Db = None,
) -> None:
    """Print the god view of a game: every role, playstyle and model, the public and pack chat,
    the votes and the night actions (the players and spectators see far less)."""
    with friendly_errors():
        state = _store(db, read_only=True).load(game_id)
        say(("God view", "bold"), f" of game {game_id}: roles, pack chat and night actions "
            "included (a spectator's view is the web app's table).")
        roles = Table("player", "role", "playstyle", "model", "fate")
        for p in players_view(state, GOD):
            fate = "alive" if p["alive"] else f"died day {p['died_day']} ({p['cause']})"
            roles.add_row(line(p["name"] + (" (human)" if p["human"] else "")), p["role"],
                          p["playstyle"], line(p["model"]), fate)
        console.print(roles)
        for day in range(1, state.day + 1):
            console.rule(f"Day {day}")
            for m in (m for m in state.messages if m.day == day):
                say(("[pack] " if m.channel == "pack" else "", "dim"), (m.author, "bold"), ": ",
                    m.text)
                if m.author == "Moderator" and m.phase == "vote":
                    for v in (v for v in state.votes if v.day == day):
                        flag = " (fallback)" if v.fallback else ""
                        say(f"  vote {v.order}: {v.voter} -> {v.target}{flag}")
            for a in (a for a in state.night_actions if a.night == day):
                say("  ", (action_line(a), "magenta"))
        if state.over:
            say((f"Winner: {state.winner}", "bold green"), f" ({state.end_reason})")
        else:
            say(f"In progress: day {state.day}, {state.phase}, step {state.step}.")


@werewolf_app.command()
def export(
    game_id: Annotated[str, typer.Argument()],
    out: SnapshotOut = None,
    db: Db = None,
) -> None:
    """Write the game's state snapshot as JSON (usable with `act --snapshot`)."""
    with friendly_errors():
        text = _store(db, read_only=True).load(game_id).model_dump_json(indent=2)
        if out:
            Path(out).write_text(text)
            say(f"wrote {out}")
        else:
            typer.echo(text)


@werewolf_app.command()
@spending(budget=True)
def act(
    snapshot: Annotated[str, typer.Option("--snapshot", help="State JSON from `export`.")],
    bot: Annotated[str, typer.Option("--bot", help="The bot that decides.")],
    action: Annotated[str, typer.Option("--action", help="vote | night | speak")],
    llm: BotLlm = None,
    served: Served = Served(),
) -> None:
    """Run one bot decision on a snapshot and print the validated action as JSON."""
    with friendly_errors():
        state = load_snapshot(check_in_file(snapshot, "--snapshot").read_bytes(), snapshot)
        if action not in ("vote", "night", "speak"):
            raise ValueError(f"--action must be vote, night or speak (got {action!r})")
        want = pending_for(state, bot, action)
        me = state.player(bot)
        if llm:
            me.model = llm
        endpoint = served.endpoint()
        endpoint.check(me.model)
        decision, records = bot_decision(state, want, LLMPool(factory=endpoint.llm))
        payload = decision.model_dump(exclude={"info_state", "notes"}, exclude_defaults=True)
        payload["legal_targets"] = want.legal_targets
        payload["llm_calls"] = [{"purpose": r.purpose, "cached": r.cached,
                                 "attempts": r.attempts, "error": r.error} for r in records]
        typer.echo(json.dumps(payload, indent=2))


@werewolf_app.command()
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    db: Db = None,
    llm: LobbyLlms = "local",
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host",
        help="Another Host name the server answers (repeatable; e.g. a name that points at "
        "this machine). Requests for other names are refused (DNS rebinding); '*' allows any.",
    )] = None,
) -> None:
    """Run the web app: lobby, live tables, a human seat, god view and replays."""
    with friendly_errors():
        from gtsteer.werewolf.web import serve as serve_web

        models = [m.strip() for m in llm.split(",") if m.strip()] or ["local"]
        if "fake" not in models:
            models.append("fake")
        if not 0 < port < 65536:
            raise ValueError(f"--port must be between 1 and 65535 (got {port})")
        path = Path(db) if db else default_db_path()
        say("Werewolf at ", (f"http://{host}:{port}/", "bold"), f" (games in {path})")
        serve_web(host, port, path, models, warn=lambda msg: say((msg, "red")),
                  allow_hosts=allow_host or [])
