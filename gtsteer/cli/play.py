"""`gtsteer play CONFIG`: one live dialogue, each seat a policy, a person, greedy, fixed or the
unguided model (docs/IMITATION.md, "Live play")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer
from rich.markup import escape

from gtsteer.cli.common import console, final, friendly_errors, note, parse_options
from gtsteer.cli.options import ConfigArg, Out, Seed, Served, WriterLlm
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.runs.play import SUMMARY_FILE, HumanTurn, PlayedTurn, PlayOptions, PlayResult
from gtsteer.runs.play import run as run_play


def _line(turn: PlayedTurn, show_instruction: bool) -> str:
    who = f"[bold]{escape(turn.name)}[/]"
    if turn.seat == "opening":
        return f"{who} (opening): {escape(turn.text)}"
    if turn.seat == "human":
        return f"{who} (you): {escape(turn.text)}"
    if not show_instruction:
        return f"{who}: {escape(turn.text)}"
    tag = f"[cyan]\\[{escape(turn.instruction or '-')}][/]"
    if turn.probs:
        top = sorted(turn.probs.items(), key=lambda kv: -kv[1])[:3]
        tag += " [dim](policy: " + ", ".join(f"{escape(k)} {v:.2f}" for k, v in top) + ")[/]"
    return f"{who} {tag}: {escape(turn.text)}"


def _printer(show_instructions: bool) -> Callable[[PlayedTurn], None]:
    """Each message as it is said; a bot's instruction only when no person plays (a person
    sees the others' instructions at the end)."""

    def on_turn(turn: PlayedTurn) -> None:
        console.print(_line(turn, show_instructions), highlight=False, soft_wrap=True)

    return on_turn


def _ask(turn: HumanTurn) -> str:
    """A person's message, typed at the terminal; they see only their own private notes."""
    console.print(f"[bold green]Your turn, {escape(turn.name)} ({escape(turn.role)}).[/] "
                  "Your private notes:", highlight=False)
    console.print(escape(turn.notes) or "(none)", highlight=False, soft_wrap=True)
    while True:
        text: str = typer.prompt(f"{turn.name}, your message", default="", show_default=False)
        if text.strip():
            return text
        console.print("[red]an empty message is not sent; type your message[/]")


def print_result(result: PlayResult, revealed: bool) -> None:
    """The instructions behind each message (when they were hidden), the reward's reading and
    each player's payoff."""
    if revealed:
        console.print("[bold]The dialogue with each seat's instruction:[/]")
        for turn in result.turns:
            console.print("  " + _line(turn, True), highlight=False, soft_wrap=True)
    term = result.terminal
    reading = f"ended by {result.ended_by}"
    if term.verdict is not None:
        reading += f", verdict {escape(term.verdict)}"
    raw = ", ".join(f"{v:g}" for v in term.raw)
    console.print(f"reward: {reading}; the reward model/utility said [{raw}]", highlight=False)
    console.print("payoffs: " + ", ".join(
        f"{escape(name)} ({escape(seat.seat)}) {value:+.2f}"
        for (name, value), seat in zip(result.payoffs.items(), result.seats, strict=True)),
        highlight=False)
    print_roles(result.roles)
    final(f"saved: {result.folder / SUMMARY_FILE}")


@overridable
@spending(budget=True, display=False)
def play(
    config: ConfigArg,
    seat: Annotated[
        list[str] | None,
        typer.Option("--seat", help="NAME=KIND, NAME a role or the instance's player name;"
                     " KIND: any (the unguided model), greedy (the domain's greedy"
                     " instruction), fixed:INSTRUCTION, policy:DIR (a `gtsteer imitate`"
                     " model folder) or human (you type the message). Repeat per seat;"
                     " unnamed seats play any."),
    ] = None,
    instance: Annotated[int, typer.Option("--instance", min=0,
                                          help="Which generated instance to play.")] = 0,
    sample: Annotated[int, typer.Option("--sample", min=0, help="Bot messages are this sample"
                                        " of each position (0: the solved tree's first).")] = 0,
    llm: WriterLlm = None,
    served: Served = Served(),
    seed: Seed = 0,
    out: Out = None,
) -> None:
    """Play one dialogue of CONFIG: each message with the instruction it was given (hidden
    until the end when a person plays), the reward's reading and each player's payoff; the
    transcript goes to DIR/play.json."""
    seats = tuple(seat or ())
    humans = any(s.partition("=")[2].strip() == "human" for s in seats)
    with friendly_errors():
        ctx = served.context(llm=llm, out=out, progress=False, report=note,
                             on_step=_printer(not humans), ask_human=_ask if humans else None)
        result = run_play(config, ctx, parse_options(
            PlayOptions, {"seats": "--seat"}, seed=seed, instance=instance, sample=sample,
            seats=seats))
    print_result(result, revealed=humans)
