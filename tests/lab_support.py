"""`python -m lab ...` in-process for the tests, as a one-command typer app so
`CliRunner().invoke(lab, [NAME, *ARGS])` captures its printout and exit code the way it does
for `gtsteer`'s app."""

from __future__ import annotations

import typer

from lab.__main__ import main

lab = typer.Typer(add_completion=False)


@lab.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                               "allow_interspersed_args": False, "help_option_names": []})
def run(ctx: typer.Context) -> None:
    """`python -m lab *ARGS`."""
    raise SystemExit(main(list(ctx.args)))
