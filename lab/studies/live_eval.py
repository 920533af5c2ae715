"""docs/LIVE_EVAL.md's section: `gtsteer evaluate`'s fresh-dialogue tables, from docs/data.

One table per domain, rendered from committed per-instance files with no model call.

    python -m lab live-eval --run RUN_DIR [--run RUN_DIR ...]   # copy, then render
    python -m lab live-eval --render-only                       # render from docs/data alone

`--run` copies an evaluate run folder into `--data`/<domain>/: `evaluate.json`, every
`instances/<index>.json` it names, its `provenance.json` and that of the `gtsteer imitate` run
whose `model/` it evaluated (`imitate/provenance.json`). The copy is refused when an instance
file is not the run's (another run key), when the policy folder is not the one evaluated (the
run key recomputed from its files differs; a relative `--policy` is looked up from here and
from the run folder's parents), or when a file names a folder of this machine. Then, and alone
with `--render-only`, every domain under `--data` is rendered from its files only: each seat's
gain over `any`, greedy and uniform recomputed from the dialogues' payoffs (with the policy
minus with the baseline, mean over the samples; mean over instances with the 95% Student-t
interval, `mean_ci`, as evaluate's summary states it; how many instances it is above, below
and at 0), refused where it differs from the run's `evaluate.json`, and the two commands read
back from the provenance.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gtsteer.domains import load_spec
from gtsteer.imitation.policy import CONFIG_FILE
from gtsteer.runs.evaluate_live import (
    ROWS_DIR,
    SUMMARY_FILE,
    EvaluateLiveResult,
    LiveInstanceRow,
    policy_digest,
    run_key,
)
from gtsteer.runs.output import IN_PROGRESS
from gtsteer.runs.provenance import PROVENANCE_FILE
from gtsteer.solvers.metrics import MeanCI, mean_ci
from lab.bench import benchdoc
from lab.bench.benchdoc import repo_relative
from lab.studies.table1 import signed

COMMAND = "python -m lab live-eval"
SECTION = "live_eval"
DOC = benchdoc.ROOT / "docs" / "LIVE_EVAL.md"
DATA = benchdoc.ROOT / "docs" / "data" / "live_eval"
IMITATE_DIR = "imitate"
#: A folder of one machine (tests/project/test_docs.py keeps docs/data free of them).
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|home|Users)/[\w.-]+")


class LiveEvalDataError(ValueError):
    """A run folder or a docs/data copy that cannot be shown as it is (one line, exit 2)."""


# ---- reading a run (or its copy) ---------------------------------------------------------------


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LiveEvalDataError(f"{path}: not readable ({exc})") from None


def read_summary(folder: Path) -> EvaluateLiveResult:
    if (folder / IN_PROGRESS).exists() or not (folder / SUMMARY_FILE).is_file():
        raise LiveEvalDataError(f"{folder}: no {SUMMARY_FILE} (not a finished gtsteer evaluate "
                                "run folder)")
    return EvaluateLiveResult.model_validate_json((folder / SUMMARY_FILE).read_text("utf-8"))


def read_rows(folder: Path, summary: EvaluateLiveResult) -> list[LiveInstanceRow]:
    """The instance files the summary names, in its order, each made under its run key."""
    rows = []
    for index in summary.instances:
        path = folder / ROWS_DIR / f"{index}.json"
        if not path.is_file():
            raise LiveEvalDataError(f"{path}: missing (the summary names instance {index})")
        row = LiveInstanceRow.model_validate_json(path.read_text(encoding="utf-8"))
        if row.run_key != summary.run_key or row.index != index:
            raise LiveEvalDataError(f"{path}: instance {row.index} of run key {row.run_key}, "
                                    f"not of this run ({summary.run_key})")
        rows.append(row)
    return rows


def read_provenance(path: Path, command: str) -> dict[str, Any]:
    prov = _json(path) if path.is_file() else None
    if not isinstance(prov, dict) or prov.get("command") != command:
        raise LiveEvalDataError(f"{path}: no provenance of a `gtsteer {command}` command line")
    return prov


# ---- the numbers, from the dialogues -------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """A seat's gain over a baseline across instances, as the table shows it."""

    player: int
    baseline: str
    gain: MeanCI
    above: int
    below: int
    policy_value: float
    baseline_value: float


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def recompute(summary: EvaluateLiveResult, rows: Sequence[LiveInstanceRow],
              where: Path) -> list[Stat]:
    """Each player's payoff with the policy minus with each baseline, per instance (mean over
    the samples), then across instances; refused where a row's `versus` or the summary's
    `stats` say otherwise."""

    def value(row: LiveInstanceRow, condition: str, player: int) -> float:
        got = [d.returns[player] for d in row.dialogues if d.condition == condition
               and d.player == (None if condition == "any" else player)]
        if not got:
            raise LiveEvalDataError(f"{where}: instance {row.index} has no `{condition}` "
                                    f"dialogue of player {player}")
        return sum(got) / len(got)

    per: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for row in rows:
        for v in row.versus:
            pair = (value(row, "policy", v.player), value(row, v.baseline, v.player))
            if not (_close(pair[0], v.policy_value) and _close(pair[1], v.baseline_value)
                    and _close(pair[0] - pair[1], v.gain)):
                raise LiveEvalDataError(f"{where}: instance {row.index}, player {v.player} vs "
                                        f"{v.baseline}: its versus is not its dialogues' payoffs")
            per.setdefault((v.player, v.baseline), []).append(pair)
    out = []
    for s in summary.stats:
        pairs = per.get((s.player, s.baseline), [])
        gains = [p - b for p, b in pairs]
        stat = Stat(s.player, s.baseline, mean_ci(gains), sum(g > 0 for g in gains),
                    sum(g < 0 for g in gains), sum(p for p, _ in pairs) / max(len(pairs), 1),
                    sum(b for _, b in pairs) / max(len(pairs), 1))
        said = (s.gain.mean, s.gain.ci_low, s.gain.ci_high, s.policy_value, s.baseline_value)
        found = (stat.gain.mean, stat.gain.ci_low, stat.gain.ci_high, stat.policy_value,
                 stat.baseline_value)
        if s.gain.n != stat.gain.n or not all(map(_close, said, found)):
            raise LiveEvalDataError(f"{where}: {summary.domain} player {s.player} vs "
                                    f"{s.baseline}: the instance files give {found} (n "
                                    f"{stat.gain.n}), {SUMMARY_FILE} says {said} (n {s.gain.n})")
        out.append(stat)
    if len(per) != len(out):
        raise LiveEvalDataError(f"{where}: the instance files compare more seats and baselines "
                                f"than {SUMMARY_FILE} states")
    return out


# ---- copying a run into docs/data ---------------------------------------------------------------


def _candidates(run: Path, given: str) -> list[Path]:
    """Where a path the run was given may be now: as given, from here, from the run's
    parents (the folder the command ran in is one of them when its --out was relative)."""
    path = Path(given)
    if path.is_absolute():
        return [path]
    return [Path.cwd() / path, *(parent / path for parent in run.resolve().parents)]


def evaluated_policy(run: Path, summary: EvaluateLiveResult) -> Path:
    """The policy folder whose files give the run's key (the one the run evaluated)."""
    # the config as the run named it: a file from here or the run's parents, else a shipped name
    configs: list[str | Path] = [c for c in _candidates(run, summary.config) if c.is_file()]
    configs = configs or [summary.config]
    seen = []
    for folder in _candidates(run, summary.policy):
        if not (folder / CONFIG_FILE).is_file():
            continue
        seen.append(str(folder))
        digest = policy_digest(folder)
        for config in configs:
            key = run_key(load_spec(config), summary.model, digest, summary.seed,
                          summary.samples, summary.baselines)
            if key == summary.run_key:
                return folder
    if seen:
        raise LiveEvalDataError(f"--run {run}: the policy at {', '.join(seen)} is not the one "
                                f"the run evaluated (its files give another run key than "
                                f"{summary.run_key}: retrained or changed since)")
    raise LiveEvalDataError(f"--run {run}: its policy {summary.policy!r} is not found from here "
                            "or from the run folder's parents; run this where evaluate ran")


def _portable(prov: dict[str, Any]) -> dict[str, Any]:
    """The provenance with the executable named, not its folder (argv[0] is this machine's)."""
    argv = list(prov.get("argv") or [])
    return {**prov, "argv": [Path(argv[0]).name, *argv[1:]] if argv else argv}


def copy_run(run: Path, data: Path) -> str:
    """Check `run` and copy what the table needs into `data/<domain>/` (replaced whole);
    returns the domain."""
    summary = read_summary(run)
    rows = read_rows(run, summary)
    recompute(summary, rows, run)
    policy = evaluated_policy(run, summary)
    files: dict[str, str] = {
        SUMMARY_FILE: (run / SUMMARY_FILE).read_text(encoding="utf-8"),
        PROVENANCE_FILE: _dump(_portable(read_provenance(run / PROVENANCE_FILE, "evaluate"))),
        f"{IMITATE_DIR}/{PROVENANCE_FILE}": _dump(_portable(
            read_provenance(policy.parent / PROVENANCE_FILE, "imitate"))),
        **{f"{ROWS_DIR}/{i}.json": (run / ROWS_DIR / f"{i}.json").read_text(encoding="utf-8")
           for i in summary.instances},
    }
    for name, text in files.items():
        found = MACHINE_PATH.search(text)
        if found:
            raise LiveEvalDataError(f"--run {run}: {name} names {found.group(0)}, a folder of "
                                    "this machine, which docs/data must not hold (run imitate and"
                                    " evaluate with relative paths)")
    target = data / summary.domain
    staging = data / f".{summary.domain}.copying"
    shutil.rmtree(staging, ignore_errors=True)
    for name, text in files.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_text(text, encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return summary.domain


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


# ---- the section ------------------------------------------------------------------------------


def command_line(prov: dict[str, Any]) -> str:
    """The gtsteer command a provenance records, as typed minus its defaults: the config as
    given, its overrides, then each option whose value differs from the default, in the
    command's own order (argv is not used: in-process runs, such as tests, have another)."""
    from typer.main import get_command

    from gtsteer.cli import app

    command = get_command(app).commands[prov["command"]]  # type: ignore[attr-defined]
    params = prov.get("params", {})
    words = ["gtsteer", prov["command"], str(prov.get("config_given") or params.get("config")),
             *prov.get("overrides", [])]
    for p in command.params:
        value = params.get(p.name)
        if p.param_type_name != "option" or value is None or value == p.default or (
                p.default is not None and str(value) == str(p.default)):
            continue
        flag = next((o for o in p.opts if o.startswith("--")), p.opts[0])
        if getattr(p, "is_flag", False):
            words.append(flag if value else (p.secondary_opts or [flag])[0])
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [flag, str(item)]
    return shlex.join(words)


def _commit(prov: dict[str, Any]) -> str:
    commit = str(prov.get("git_commit") or "unknown")
    return commit.removesuffix("-dirty") + (" (uncommitted changes)"
                                            if commit.endswith("-dirty") else "")


def render_domain(folder: Path) -> str:
    """One domain's table, settings and commands, from its folder under docs/data."""
    summary = read_summary(folder)
    rows = read_rows(folder, summary)
    stats = recompute(summary, rows, folder)
    played = [d for row in rows for d in row.dialogues]
    unpaid = sum(all(r == 0 for r in d.returns) for d in played)
    evaluate = read_provenance(folder / PROVENANCE_FILE, "evaluate")
    imitate = read_provenance(folder / IMITATE_DIR / PROVENANCE_FILE, "imitate")
    roles = {s.player: s.role for s in summary.stats}
    described = (evaluate.get("resolved_config") or {}).get("description")
    trained = summary.training
    models = ", ".join(f"{role} `{r.model}`" for role, r in summary.roles.items()) \
        or f"`{summary.model}`"
    lines = [f"### `{summary.domain}`", ""]
    if described:
        lines += [str(described).strip(), ""]
    lines += [
        f"Models: {models}; the policy (`{summary.features}` features) "
        f"trained by `gtsteer imitate` on `{imitate.get('model')}`'s games "
        f"(instances {trained.train_instances}, held out {trained.heldout_instances}, seed "
        f"{trained.seed}). {len(summary.instances)} fresh instances of seed {summary.seed} "
        f"({len(summary.skipped)} generated ones skipped: in the policy's dataset), "
        f"K = {summary.samples} sample(s) of each dialogue, code at commit {_commit(evaluate)}.",
        "",
        "| seat | policy vs | mean difference | 95% interval (Student t) | n | instances +"
        " / − / 0 | policy payoff | baseline payoff |",
        "|---|---|---:|---|---:|---|---:|---:|",
    ]
    for s in stats:
        interval = ("—" if s.gain.ci_low is None or s.gain.ci_high is None
                    else f"[{signed(s.gain.ci_low)}, {signed(s.gain.ci_high)}]")
        lines.append(f"| {roles[s.player]} | `{s.baseline}` | {signed(s.gain.mean)} | "
                     f"{interval} | {s.gain.n} | {s.above} / {s.below} / "
                     f"{s.gain.n - s.above - s.below} | {signed(s.policy_value)} | "
                     f"{signed(s.baseline_value)} |")
    lines += ["", f"- {unpaid} of the {len(played)} dialogues played (every condition and"
              " sample) paid 0 to every player", *[f"- {note}" for note in summary.notes]]
    lines += ["", "```", command_line(imitate), command_line(evaluate), "```", ""]
    return "\n".join(lines)


def render(data: Path, doc: Path) -> str:
    """The section body: every domain folder under `data`, by name."""
    folders = sorted(p for p in data.iterdir() if (p / SUMMARY_FILE).is_file()
                     and not p.name.startswith(".")) if data.is_dir() else []
    if not folders:
        raise LiveEvalDataError(f"--data {data}: no copied evaluate run (copy one with --run)")
    shown = [repo_relative(p) for p in (data, doc)]
    again = " ".join([COMMAND, "--render-only",
                      *([] if data.resolve() == DATA else ["--data", shown[0]]),
                      *([] if doc.resolve() == DOC else ["--doc", shown[1]])])
    head = (f"Rendered from the per-instance files under `{shown[0]}` by `{again}` (no model "
            "call). Each seat plays its policy, the "
            "others `any`; a row is that seat's payoff with the policy minus with the baseline "
            "(`any`: every seat unguided), per instance the mean over the samples, then the "
            "mean over instances with a 95% Student-t interval and how many instances are "
            "above, below and at 0.")
    return "\n".join([head, "", *(render_domain(f) for f in folders)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--run", action="append", type=Path, default=[], metavar="RUN_DIR",
                        help="a `gtsteer evaluate` run folder to copy into --data (repeatable)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="the per-domain copies (default: docs/data/live_eval)")
    parser.add_argument("--doc", type=Path, default=DOC,
                        help="the doc whose live_eval section is written (default: "
                             "docs/LIVE_EVAL.md)")
    parser.add_argument("--render-only", action="store_true",
                        help="copy nothing: render the section from --data alone")
    args = parser.parse_args(argv)
    if bool(args.run) == args.render_only:
        parser.error("give --run RUN_DIR (one or more) or --render-only")
    domains = [read_summary(run).domain for run in args.run]
    twice = sorted({d for d in domains if domains.count(d) > 1})
    if twice:
        parser.error(f"--run: two runs of {', '.join(twice)} (one run a domain)")
    for run in args.run:
        print(f"copied {run} to {args.data / copy_run(run, args.data)}")
    text = render(args.data, args.doc)
    start, end = benchdoc.markers(SECTION)
    benchdoc.write_section(args.doc, start, end, benchdoc.wrap(start, end, text))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
