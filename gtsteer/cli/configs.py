"""`gtsteer configs`: the example configs that ship with the package, and `configs copy` to
take one out to edit. Any command that reads a config takes one of these names as well as a
path (`gtsteer solve schedule_meeting_dow`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
import yaml

from gtsteer.binding.shipped import shipped_configs, shipped_name
from gtsteer.cli.common import console, friendly_errors

configs_app = typer.Typer(
    help="The example configs shipped with gtsteer: list them, or copy one out to edit.",
    invoke_without_command=True,
)


def describe(path: Path) -> tuple[str, str]:
    """A shipped config's domain and one-line description, read without validating it."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return str(data.get("domain", "")), " ".join(str(data.get("description", "")).split())


@configs_app.callback()
def list_configs(ctx: typer.Context) -> None:
    """List the shipped configs (name, domain, description); `gtsteer solve NAME` runs one."""
    if ctx.invoked_subcommand is not None:
        return
    rows = [("name", "domain", "description")]
    rows += [(name, *describe(path)) for name, path in shipped_configs().items()]
    # Plain aligned columns, one line a config at any terminal width (a rich table wrapped
    # descriptions onto lines of their own on a narrow one), so the list stays greppable.
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        typer.echo("  ".join(cells).rstrip())


@configs_app.command("copy")
def copy(
    name: Annotated[str, typer.Argument(help="A shipped config (`gtsteer configs`).")],
    dest: Annotated[Path | None, typer.Argument(
        help="File or folder to write (default: NAME.yaml here).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Copy a shipped config out to edit; then run it as `gtsteer solve FILE`."""
    with friendly_errors():
        shipped = shipped_name(name)
        if shipped is None:
            raise ValueError(f"{name}: no shipped config of that name (shipped:"
                             f" {', '.join(shipped_configs())})")
        target = dest if dest is not None else Path(f"{shipped}.yaml")
        if target.is_dir():
            target = target / f"{shipped}.yaml"
        if target.exists() and not force:
            raise ValueError(f"{target}: exists; pass --force to overwrite it")
        shutil.copyfile(shipped_configs()[shipped], target)
    console.print(f"wrote {target}", highlight=False, soft_wrap=True)
