"""A domain written outside the package is used from the command line: named as
`module:ATTRIBUTE` in its YAML (imported when the config is loaded, in the CLI and in every Ray
worker), or registered by an installed package's `gtsteer.domains` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import yaml

from gtsteer.binding import ConfigError
from gtsteer.domains import load_spec, registry

ROOT = Path(__file__).resolve().parents[1]

#: A user's own domain module: a bike haggle whose payoffs are computed exactly.
PLUGIN = '''
from gtsteer.binding import Domain


async def haggle_utility(ctx):
    moves = [ctx.instructions(p)[0] for p in range(2)]
    price = 5 + (moves[0] == "firm") - (moves[1] == "firm")
    return [float(price), float(10 - price)]


BIKE_HAGGLE = Domain(name="bike_haggle", utility=haggle_utility)
'''

SPEC = {
    "name": "bike_haggle",
    "players": ["seller", "buyer"],
    "names": ["Ada", "Ben"],
    "actions": {"stance": ["firm", "soft", "any"]},
    "scenario": "{name0} sells a bike to {name1}.",
    "message_prompt": "{scenario}\n{transcript}{instruction}{name}:",
    "num_llm_seeds": 2,
    "num_max_replies": 1,
    "payoff": {"min": 0, "max": 10, "prompt": "{transcript}"},
}


def plugin_config(tmp_path: Path, domain: str) -> Path:
    (tmp_path / "bikes_plugin.py").write_text(textwrap.dedent(PLUGIN))
    path = tmp_path / "bike_haggle.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "domain": domain}))
    return path


def solve_cli(tmp_path: Path, config: Path, out: str, *extra: str) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "GTSTEER_CACHE_DIR": str(tmp_path / out / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "gtsteer", "solve", str(config), "--llm", "fake", "--games",
         "3", "-q", "-o", str(tmp_path / out), *extra],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / out / "summary.json").read_text())


@pytest.mark.ray
def test_a_domain_in_a_users_module_solves_from_the_cli_serially_and_on_ray(tmp_path: Path) -> None:
    config = plugin_config(tmp_path, "bikes_plugin:BIKE_HAGGLE")
    serial = solve_cli(tmp_path, config, "serial")
    on_ray = solve_cli(tmp_path, config, "ray", "--ray", "local", "--workers", "2")
    assert serial["num_solved"] == 3 and serial["domain"] == "bike_haggle"
    assert on_ray["metrics"] == serial["metrics"]
    # The user's exact utility was played: `firm` is the seller's dominant instruction.
    opening = json.loads((tmp_path / "serial" / "games" / "0.json").read_text())["policy"][0]
    assert opening["player"] == 0 and opening["probs"]["firm"] == pytest.approx(1.0, abs=1e-3)
    assert serial["metrics"]["nash_conv"]["mean"] == pytest.approx(0.0, abs=1e-3)


def test_a_bad_reference_names_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    for domain, words in (("no_such_module_xyz:THING", "cannot import 'no_such_module_xyz'"),
                          ("bikes_plugin:MISSING", "has no 'MISSING'"),
                          ("bikes_plugin:haggle_utility", "not a gtsteer Domain"),
                          ("bikes_plugin:", "expected `module:ATTRIBUTE`")):
        with pytest.raises(ConfigError, match="field `domain`") as err:
            load_spec(plugin_config(tmp_path, domain))
        assert words in str(err.value), domain
    # A plain name nobody registered says how to name one's own.
    with pytest.raises(ConfigError, match="module:ATTRIBUTE"):
        load_spec(plugin_config(tmp_path, "bike_haggle_unregistered"))


def test_an_installed_package_registers_its_domain_by_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin_config(tmp_path, "bike_haggle")
    point = EntryPoint(name="bike_haggle", value="bikes_plugin:BIKE_HAGGLE",
                       group=registry.ENTRY_POINT_GROUP)

    def installed(group: str, name: str):
        assert group == registry.ENTRY_POINT_GROUP
        return [point] if name == point.name else []

    monkeypatch.setattr(registry, "entry_points", installed)
    monkeypatch.delitem(registry.DOMAINS, "bike_haggle", raising=False)
    spec = load_spec(tmp_path / "bike_haggle.yaml")
    assert spec.hooks.name == "bike_haggle" and spec.hooks.utility is not None
    monkeypatch.delitem(registry.DOMAINS, "bike_haggle")
