"""docs/WEREWOLF_STEERING.md's results sections, rendered from the folder a product command
wrote, with no model call: `python -m lab werewolf-fresh|werewolf-paired|werewolf-styles
--results RUN_DIR [--doc PATH]`. The product commands (`gtsteer werewolf steer-heldout`,
`evaluate`, `styles`) write only their run folder unless given `--doc`; the sections' text is
theirs (gtsteer/runs/werewolf_*_doc.py), the repository's doc is the lab's."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from lab.bench import benchdoc

#: The doc whose sections these write by default.
DOC = benchdoc.ROOT / "docs" / "WEREWOLF_STEERING.md"


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


def styles(argv: Sequence[str] | None = None) -> None:
    """A writer model's section from a `gtsteer werewolf styles` folder (its summary recomputed
    from the saved lines)."""
    from gtsteer.cli.common import console, note
    from gtsteer.cli.werewolf_steer import print_styles
    from gtsteer.runs.werewolf_styles import render_only
    from gtsteer.runs.werewolf_styles_doc import document

    results, doc = _args("werewolf-styles", "writer model's werewolf_styles", argv)
    with _metered():
        summary = render_only(results, note)
        print_styles(summary)
        console.print(f"wrote its section of {document(summary, summary.folder, doc)}")
