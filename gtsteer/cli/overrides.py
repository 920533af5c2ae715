"""`key=value` overrides after a command's config, and `--show-config`.

`@overridable` on a command whose first argument is a config adds the `OVERRIDES...` argument
and `--show-config`. The overrides are applied to the config's YAML mapping and validated as
the file is (`gtsteer.binding.overrides`); the resolved config is written once, named by its
content, under `<GTSTEER_CACHE_DIR>/configs/` (`<stem>-<hash>.yaml`), and the run reads that
file: every process of the run (a Ray worker rebuilding a game from its config path) sees the
same config, a rerun with the same overrides finds the same default folder, and a run with
other overrides gets its own. `--show-config` prints the resolved config and exits. The
command runs inside `gtsteer.runs.provenance.invocation`, so every folder it writes holds its
provenance.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path
from typing import Any

import typer
import yaml

from gtsteer.binding.overrides import apply_overrides
from gtsteer.binding.shipped import resolve_config
from gtsteer.binding.spec import read_config_data
from gtsteer.cli.common import F, friendly_errors, retyped
from gtsteer.cli.options import Overrides, ShowConfig
from gtsteer.domains.load import spec_from_dict
from gtsteer.llm.cache import default_cache_dir
from gtsteer.runs.atomic import write_text
from gtsteer.runs.provenance import invocation


class _Dumper(yaml.SafeDumper):
    """YAML as a person writes it: a text of several lines as a `|` block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def resolve(config: Path, overrides: list[str]) -> tuple[Path, Any]:
    """The config file the run reads and its data: `config` itself without overrides, else
    the resolved config written under the cache folder (see the module docstring)."""
    data = apply_overrides(read_config_data(config), overrides)
    source = f"{config} with {' '.join(overrides)}" if overrides else str(config)
    spec_from_dict(data, source)  # validated and its domain's checks run: errors name fields
    if not overrides:
        return config, data
    text = dump(data)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    path = default_cache_dir() / "configs" / f"{resolve_config(config).stem}-{digest}.yaml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, f"# {source}\n{text}")
    return path, data


def overridable(command: F) -> F:
    """Give a config command its overrides and `--show-config` (see the module docstring)."""
    signature = inspect.signature(command, eval_str=True)

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        overrides = list(kwargs.pop("overrides", None) or [])
        show = kwargs.pop("show_config", False)
        given = kwargs["config"]
        with friendly_errors():
            kwargs["config"], data = resolve(given, overrides)
        if show:
            typer.echo(dump(data), nl=False)
            return None
        params = {k: v for k, v in kwargs.items() if not isinstance(v, typer.Context)}
        with invocation(command.__name__.replace("_", " "), params, str(given), overrides):
            return command(*args, **kwargs)

    return retyped(run, signature, signature.parameters.values(),
                   {"overrides": Overrides, "show_config": ShowConfig})
