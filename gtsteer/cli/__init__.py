"""The `gtsteer` command line: parse, call, print. Each command group lives in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from gtsteer._version import __version__
from gtsteer.cli.check import register as register_check
from gtsteer.cli.configs import register as register_configs
from gtsteer.cli.eval import eval_app
from gtsteer.cli.evaluate import register as register_evaluate
from gtsteer.cli.export import register as register_export
from gtsteer.cli.imitate import register as register_imitate
from gtsteer.cli.instances import instances
from gtsteer.cli.llm import llm_app
from gtsteer.cli.play import register as register_play
from gtsteer.cli.psro import register as register_psro
from gtsteer.cli.solve import register as register_solve
from gtsteer.cli.werewolf import werewolf_app
from gtsteer.cli.werewolf_steer import register as register_werewolf_steer

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
register_solve(app)
register_export(app)
register_imitate(app)
register_psro(app)
register_play(app)
register_evaluate(app)
register_werewolf_steer(werewolf_app)
app.add_typer(werewolf_app, name="werewolf")
app.add_typer(eval_app, name="eval")
app.command("instances")(instances)
register_configs(app)
register_check(app)
