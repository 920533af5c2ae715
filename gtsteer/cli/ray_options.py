"""`--ray ADDRESS` and `--workers N`: run a command's units of work as Ray tasks
(docs/SCALE.md). One definition, so every command spells, documents and checks them alike."""

from __future__ import annotations

from typing import Annotated

import typer

from gtsteer.runs.units import RayOptions

RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run the units of work (instances, games) as Ray tasks: `local` starts Ray on this"
        " machine (--workers N), `auto` or HOST:PORT joins a cluster (pip install"
        # help is rich markup, where a bare [ray] is a style tag
        " 'gtsteer\\[ray]'; docs/SCALE.md). Results equal the serial run's.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option("--workers", help="CPUs of the Ray instance `--ray local` starts (default:"
                 " all of this machine's).", min=1),
]


def ray_options(address: str | None, workers: int | None) -> RayOptions | None:
    """The run's Ray settings; None (serial, Ray not imported) without --ray."""
    if address is None:
        if workers is not None:
            raise typer.BadParameter("only with --ray local", param_hint="--workers")
        return None
    try:
        options = RayOptions(address.strip(), workers)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--ray") from None
    try:
        import ray  # noqa: F401 - the extra is optional: say how to get it, in one line
    except ImportError:
        raise typer.BadParameter("Ray is not installed: pip install 'gtsteer[ray]'",
                                 param_hint="--ray") from None
    return options
