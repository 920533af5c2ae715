"""`gtsteer eval ...`: measurements that say whether a domain's game can be trusted.

Each command lives in the driver of its own module under `gtsteer.runs` (the CLI only parses,
calls and prints): `steering` (does the model follow its instructions?), `reward` (does the
reward path score transcripts correctly?) and `verdict` (verdict-game policies' win rates).
"""

from __future__ import annotations

import typer

eval_app = typer.Typer(
    help="Evaluate a domain: steering accuracy, reward error, verdict-game win rates.",
    no_args_is_help=True,
)
