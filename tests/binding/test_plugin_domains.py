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

ROOT = Path(__file__).resolve().parents[2]

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


#: Modules whose import goes wrong, each a ConfigError naming the config and the module (review
#: reliability-0832c41, L3: each was a traceback, and `sys.exit(0)` ended the run with rc 0).
BROKEN = {
    "raises_on_import_l3": ("raise RuntimeError('boom')\n",
                            "importing 'raises_on_import_l3' failed: RuntimeError: boom"),
    "keyerror_on_import_l3": ("{}['nope']\n",
                              "importing 'keyerror_on_import_l3' failed: KeyError: 'nope'"),
    "syntax_error_l3": ("def broken(:\n    pass\n",
                        "importing 'syntax_error_l3' failed: SyntaxError: "),
    "exits_on_import_l3": ("import sys\nsys.exit(0)\n",
                           "importing 'exits_on_import_l3' called sys.exit(0)"),
    "missing_dependency_l3": ("import no_such_dependency_l3\n",
                              "importing 'missing_dependency_l3' failed: ModuleNotFoundError"),
}


@pytest.mark.parametrize("module", sorted(BROKEN))
def test_a_module_that_fails_at_import_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    source, words = BROKEN[module]
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = plugin_config(tmp_path, f"{module}:DOMAIN")
    with pytest.raises(ConfigError) as err:
        load_spec(config)
    message = str(err.value)
    assert message.startswith(f"{config}: field `domain`: '{module}:DOMAIN'"), message
    assert words in message and "\n" not in message


def test_a_module_that_exits_at_import_fails_the_cli_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "exits_cli_l3.py").write_text("import sys\nsys.exit(0)\n")
    config = plugin_config(tmp_path, "exits_cli_l3:DOMAIN")
    done = subprocess.run(
        [sys.executable, "-m", "gtsteer", "solve", str(config), "--llm", "fake", "-q",
         "-o", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
             "GTSTEER_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "called sys.exit(0)" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_relative_none_or_taken_reference_names_the_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "odd_records_l3.py").write_text(textwrap.dedent('''
        from gtsteer.binding import Domain

        async def utility(ctx):
            return [1.0, 1.0]

        NONE_ATTR = None
        TAKES_BUILTIN = Domain(name="fruit_trade", utility=utility)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    for domain, words in ((".bikes_plugin:BIKE_HAGGLE", "a relative module cannot be imported"),
                          ("odd_records_l3:NONE_ATTR", "'NONE_ATTR' is None, not a gtsteer Domain"),
                          ("odd_records_l3:TAKES_BUILTIN",
                           "domain 'fruit_trade' is already registered")):
        config = plugin_config(tmp_path, domain)
        with pytest.raises(ConfigError) as err:
            load_spec(config)
        assert str(err.value).startswith(f"{config}: field `domain`: '{domain}'"), err.value
        assert words in str(err.value), domain
