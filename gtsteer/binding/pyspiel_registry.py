"""Registering Python games with OpenSpiel so that the process can still exit cleanly.

`pyspiel.register_game` stores the factory in a C++ static map. That map is destroyed by the C
runtime's exit handlers, after Python has shut down; if it holds the last reference to the
factory by then (the factory's module was cleared and freed during finalisation, as happens in
a long pytest run), its destructor frees a Python function without the GIL and the process
aborts at exit ("Fatal Python error: PyThreadState_Get", exit status 134) after all its work is
done. One deliberately leaked reference keeps the factory alive past that point; it lives as
long as the process anyway.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pyspiel


def register_game(game_type: pyspiel.GameType, factory: Callable[[dict[str, Any]], Any]) -> None:
    """`pyspiel.register_game`, with the factory kept alive for the life of the process."""
    pyspiel.register_game(game_type, factory)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(factory))
