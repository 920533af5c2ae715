"""docs/WEREWOLF_STEERING.md's results sections, rendered from a run folder with no model call:
`python -m lab werewolf-fresh|werewolf-paired --results RUN_DIR [--doc PATH]` (and
`werewolf-styles --results RUN_DIR`, lab/studies/werewolf_styles_command.py). The product's
`gtsteer werewolf evaluate` writes only its run folder; the lab's studies `werewolf-heldout`
and `werewolf-styles` write theirs, and a section of the doc named by `--doc`. The sections'
text is the lab's (lab/studies/werewolf_*_doc.py)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated

import typer

from lab.bench import benchdoc

#: The doc whose sections these write by default.
DOC = benchdoc.ROOT / "docs" / "WEREWOLF_STEERING.md"
#: `--doc` of the studies `werewolf-heldout` and `werewolf-styles`: a section is opt-in, into
#: the doc named (a run writes its folder; the renderers here write a section from it).
SectionDoc = Annotated[
    str | None, typer.Option("--doc", help="Also write the run's section into this markdown doc"
                             " (default: none; the run folder holds every number).")
]


def _args(name: str, what: str, argv: Sequence[str] | None) -> tuple[Path, Path]:
    parser = benchdoc.parser(f"python -m lab {name}", f"Rewrite the {what} section of a doc"
                             " from a run folder, with no model call.")
    parser.add_argument("--results", required=True, metavar="RUN_DIR",
                        help="the --out folder of the run")
    parser.add_argument("--doc", type=Path, default=DOC,
                        help="the doc to write (default: docs/WEREWOLF_STEERING.md)")
    args = parser.parse_args(argv)
    return Path(args.results), args.doc


def _metered() -> AbstractContextManager[object]:
    """The product commands' session: its usage line at the end (no call is made here)."""
    from gtsteer.cli.spend import metered
    from gtsteer.llm.rate import RateLimit
    from gtsteer.llm.session import Budget

    return metered(RateLimit.of(), Budget())


def fresh(argv: Sequence[str] | None = None) -> None:
    """The werewolf_fresh section from a `python -m lab werewolf-heldout` folder."""
    from gtsteer.cli.common import console
    from lab.studies.werewolf_fresh_doc import render_only

    results, doc = _args("werewolf-fresh", "werewolf_fresh", argv)
    with _metered():
        render_only(results, doc)
        console.print(f"wrote the werewolf_fresh section of {doc}")


def paired(argv: Sequence[str] | None = None) -> None:
    """The werewolf_paired section from a `gtsteer werewolf evaluate` folder."""
    from gtsteer.cli.common import console
    from lab.studies.werewolf_paired_doc import render_only

    results, doc = _args("werewolf-paired", "werewolf_paired", argv)
    with _metered():
        render_only(results, doc)
        console.print(f"wrote the werewolf_paired section of {doc}")
