"""`python -m gtsteer ...`: the same CLI as the `gtsteer` script, for environments without it."""

from gtsteer.cli import app

app(prog_name="gtsteer")
