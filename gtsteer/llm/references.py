"""`module:ATTRIBUTE` references to a user's code (a config's `domain:`, `--llm pkg.mod:Backend`),
as Gymnasium's `entry_point="module:Class"`: imported on first use, so also in every Ray worker
that meets the reference. Every way the import can go wrong is one `ReferenceProblem` line."""

from __future__ import annotations

import importlib
import re
from typing import Any

#: A Python module path, a colon, an attribute path: `pkg.mod:Attr` (never a litellm id, whose
#: provider is followed by a slash, nor a path).
_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class ReferenceProblem(ValueError):
    """A reference that cannot be resolved; the message says why in one line."""


def is_reference(text: str) -> bool:
    """True where `text` is spelled `module:ATTRIBUTE`."""
    return _REFERENCE.fullmatch(text) is not None


def resolve(reference: str, kind: str) -> Any:
    """The object `reference` names. Whatever goes wrong (the import raises, even `SystemExit`;
    the attribute is missing) is a `ReferenceProblem`; `kind` ("domain") words its messages."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ReferenceProblem("expected `module:ATTRIBUTE`")
    if module_name.startswith("."):
        raise ReferenceProblem("a relative module cannot be imported from a config; give the"
                               " module's full name (`package.module:ATTRIBUTE`)")
    found: Any = _import(module_name, kind)
    for part in attribute.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            raise ReferenceProblem(f"module {module_name!r} has no {attribute!r}")
    return found


#: `getattr`'s default: an attribute that exists but is None is not a missing one.
_MISSING = object()


def kind_of_value(value: Any) -> str:
    """What `value` is, for a message: `None`, `a function`, `a Backend`."""
    return "None" if value is None else f"a {type(value).__name__}"


def _import(module_name: str, kind: str) -> Any:
    """`importlib.import_module`, every failure of the module's own code a `ReferenceProblem`:
    a reference names trusted code, but its bug must not end the run with a traceback, nor its
    `sys.exit(0)` with success and no output."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module_name}.".startswith(f"{exc.name}."):
            raise ReferenceProblem(f"cannot import {module_name!r} ({exc}); install it or put"
                                   " its folder on PYTHONPATH") from None
        raise ReferenceProblem(f"importing {module_name!r} failed: {one_line(exc)}") from None
    except SystemExit as exc:
        raise ReferenceProblem(f"importing {module_name!r} called sys.exit({exc.code!r}); a"
                               f" {kind} module must not exit when imported") from None
    except Exception as exc:  # noqa: BLE001 - the module's own error, named in one line
        raise ReferenceProblem(f"importing {module_name!r} failed: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """`exc` in one line, with where a `SyntaxError` is (its message alone says neither)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"
