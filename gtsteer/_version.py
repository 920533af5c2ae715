"""The version of gtsteer, in one place: pyproject.toml reads it, `gtsteer --version` prints it."""

__version__ = "0.1.0"
