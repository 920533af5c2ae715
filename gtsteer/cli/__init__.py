"""The `gtsteer` command line: parse, call, print. Each command group lives in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from gtsteer._version import __version__
from gtsteer.cli.check import check
from gtsteer.cli.configs import configs_app
from gtsteer.cli.eval import eval_app
from gtsteer.cli.evaluate import evaluate
from gtsteer.cli.export import export
from gtsteer.cli.imitate import imitate
from gtsteer.cli.instances import instances
from gtsteer.cli.llm import llm_app
from gtsteer.cli.play import play
from gtsteer.cli.psro import PsroCommand, psro
from gtsteer.cli.solve import solve
from gtsteer.cli.werewolf import werewolf_app
from gtsteer.cli.werewolf_steer import evaluate as werewolf_evaluate
from gtsteer.cli.werewolf_steer import steer_train

app = typer.Typer(
    name="gtsteer",
    help="Steer language models with game-theoretic solvers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gtsteer {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the gtsteer version and exit.")] = False,
) -> None:
    """Steer language models with game-theoretic solvers."""


app.add_typer(llm_app, name="llm")
app.command("solve")(solve)
app.command("export")(export)
app.command("imitate")(imitate)
app.command("psro", cls=PsroCommand)(psro)
app.command("play")(play)
app.command("evaluate")(evaluate)
werewolf_app.command("steer-train")(steer_train)
werewolf_app.command("evaluate")(werewolf_evaluate)
app.add_typer(werewolf_app, name="werewolf")
app.add_typer(eval_app, name="eval")
app.command("instances")(instances)
app.add_typer(configs_app, name="configs")
app.command("check")(check)
