"""`python -m lab NAME [ARGS...]`: the benchmarks and studies that write numbers into this
repository's docs (lab/bench/, lab/studies/; docs/BENCHMARKS.md). The lab is not part of the
gtsteer wheel: `make setup` installs it beside the editable gtsteer (the repository root is on
the import path), and it may import gtsteer, never the other way round.

Each keeps its own argparse flags (its one prelude is `lab.bench.benchdoc.parser`): every
argument after NAME is handed to it untouched, so `python -m lab llm --help` prints that
benchmark's flags, and a command line written into docs/BENCHMARKS.md runs again as it reads.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Sequence

#: `python -m lab NAME` -> the module whose `main(argv)` it runs (`module:function` for another
#: function): the benchmarks, then the studies and doc recorders.
BENCHES = {
    "abba": "lab.bench.bench_abba",
    "compare-served": "lab.bench.compare_served",
    "demo": "lab.bench.bench_demo",
    "imitation": "lab.bench.bench_imitation",
    "llama-tools": "lab.bench.llama_tools",
    "llm": "lab.bench.bench_llm",
    "prefill": "lab.bench.bench_prefill",
    "prefix": "lab.bench.bench_prefix",
    "profile": "lab.bench.bench_profile",
    "psro": "lab.bench.bench_psro",
    "ray": "lab.bench.bench_ray",
    "reward": "lab.bench.bench_reward",
    "served": "lab.bench.bench_served",
    "solve": "lab.bench.bench_solve",
    "steering": "lab.bench.bench_steering",
    "steering-werewolf": "lab.bench.bench_steering_werewolf",
    "web": "lab.bench.bench_web",
    "werewolf": "lab.bench.bench_werewolf",
    "werewolf-lines": "lab.bench.werewolf_lines",
}
STUDIES = {
    "demo-outcomes": "lab.studies.demo_outcomes",
    "gambit-check": "lab.studies.gambit_check",
    "live-eval": "lab.studies.live_eval",
    "misreads": "lab.studies.misreads",
    "playthroughs": "lab.studies.playthroughs",
    "psro-discovery": "lab.studies.psro_discovery",
    "samples": "lab.studies.samples_study",
    "samples-within": "lab.studies.samples_within",
    "steering-table": "lab.studies.steering_table",
    "table1": "lab.studies.table1",
    "tension": "lab.studies.tension",
    "verdict": "lab.studies.study_verdict",
    "web-screenshots": "lab.studies.web_screenshots",
    "werewolf-heldout": "lab.studies.werewolf_heldout_command",
    "werewolf-styles": "lab.studies.werewolf_styles_command",
    # docs/WEREWOLF_STEERING.md's results sections, rendered from a product command's run folder
    "werewolf-fresh": "lab.studies.werewolf_sections:fresh",
    "werewolf-paired": "lab.studies.werewolf_sections:paired",
}
COMMANDS = {**BENCHES, **STUDIES}

USAGE = ("usage: python -m lab NAME [ARGS...]  (ARGS: `python -m lab NAME --help`)\n"
         f"benchmarks: {', '.join(BENCHES)}\nstudies: {', '.join(STUDIES)}")


def run_module(target: str, argv: list[str]) -> int:
    """`module.main(argv)` (or `module:function`); a non-zero int it returns is the exit code. A
    main that takes `run_cli` (bench_prefix times the README job in-process) is handed the
    gtsteer command line. Expected failures (a bad config, an unreadable input, an unwritable
    doc) are one line and exit 2, as for every gtsteer command (`friendly_errors`)."""
    import typer

    from gtsteer.cli.common import friendly_errors

    module, _, function = target.partition(":")
    main = getattr(importlib.import_module(module), function or "main")
    try:
        with friendly_errors():
            if "run_cli" in inspect.signature(main).parameters:
                from gtsteer.cli import app

                code = main(argv, run_cli=lambda args: app(args=args, standalone_mode=False))
            else:
                code = main(argv)
    except typer.Exit as exc:  # friendly_errors' one-line failure
        return int(exc.exit_code)
    return code if isinstance(code, int) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run `NAME` with the rest of `argv`; no NAME or `--help`: the list of names."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"python -m lab: no benchmark or study {name!r}\n{USAGE}", file=sys.stderr)
        return 2
    return run_module(COMMANDS[name], rest)


if __name__ == "__main__":
    sys.exit(main())
