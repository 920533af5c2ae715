"""The example configs and the hand-labelled data that ship inside the package.

They live in `gtsteer/configs/` and `gtsteer/data/` (package data), so an installed gtsteer runs
`gtsteer solve schedule_meeting_dow` from any folder, not only from a clone: a config is given
as a path, or by the name of a shipped one (`gtsteer configs` lists them).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = PACKAGE_ROOT / "configs"
#: Labelled messages and dialogues that commands read by default (`eval judge`, `werewolf
#: styles`) or point users at (`eval reward --labelled`).
DATA_DIR = PACKAGE_ROOT / "data"
#: The config of a bare `pyspiel.load_game("gtsteer_dialogue")`: the README's demo.
DEFAULT_CONFIG = "schedule_meeting_dow"
_SUFFIXES = (".yaml", ".yml")
#: Where a clone kept the example configs before they shipped in the package: saved rows and
#: recorded commands (docs/data) say `configs/NAME.yaml`, which still names the shipped config.
LEGACY_FOLDER = "configs"


def shipped_configs() -> dict[str, Path]:
    """The shipped configs by name (the file name without `.yaml`), sorted."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.yaml"))}


def shipped_name(config: str | Path) -> str | None:
    """The shipped config that `config` names (`schedule_meeting_dow`, with `.yaml`, or as
    `configs/schedule_meeting_dow.yaml`), or None: another path with a folder in it, or a name
    no shipped config has."""
    path = Path(config)
    if len(path.parts) == 2 and path.parts[0] == LEGACY_FOLDER:
        path = Path(path.parts[1])
    elif len(path.parts) != 1:
        return None
    name = path.stem if path.suffix in _SUFFIXES else path.name
    return name if name in shipped_configs() else None


def resolve_config(config: str | Path) -> Path:
    """`config` as a file to read: a path that exists wins (a local `debate.yaml` is the
    user's, not ours), else the shipped config it names; anything else comes back as given,
    for the reader to refuse (`missing_config_message`)."""
    path = Path(config)
    if path.exists():
        return path
    name = shipped_name(path)
    return shipped_configs()[name] if name is not None else path


def missing_config_message(config: str | Path) -> str:
    """Why `config` names no config: no such file, and (for a bare name) no shipped one."""
    if len(Path(config).parts) != 1:
        return f"{config}: no such config file"
    return (f"{config}: no such config file, nor a shipped config of that name (shipped:"
            f" {', '.join(shipped_configs())}; `gtsteer configs` lists them)")
