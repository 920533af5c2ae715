"""The error of an unusable run path; its own module so that `output` and `provenance`, which
both raise it, need not import each other."""

from __future__ import annotations


class RunDirError(ValueError):
    """An output or input path is unusable (a file where a folder is needed, or the reverse,
    or a folder holding someone else's files); raised before any work."""
