"""The errors a run folder or a saved result raises; their own module so that `output` and
`provenance`, which both raise them, need not import each other."""

from __future__ import annotations


class RunDirError(ValueError):
    """An output or input path is unusable (a file where a folder is needed, or the reverse,
    or a folder holding someone else's files); raised before any work."""


class DamagedFileError(ValueError):
    """A saved result file cannot be read as what it should hold (cut by a kill, emptied,
    overwritten, hand-edited); the message names the file and why, in one line."""
