"""What a command spends: `--concurrency`, `--rpm` and the budget flags, one implementation.

`@spending()` on a command adds `--concurrency` and `--rpm` (with `budget=True` also
`--max-calls`, `--max-tokens` and `--max-cost`; a command that declares its own `--max-calls`
keeps it, and the budget reads it there), opens the run's
`gtsteer.llm.session` around the command, and ends it with one line on stderr: requests, new
calls, tokens, retries, rate-limit waits and cost ("cost unknown" where litellm cannot price a
model). A run that reaches a limit stops with one line saying how far it got and exit code 3
(`BUDGET_EXIT`); what finished is saved and every answer is cached, so a rerun with a higher
limit continues where it stopped.

`--dry-run` (every such command) runs the command inside a dry-run session
(`gtsteer.llm.dry_run`): nothing is sent, nothing it writes is kept (its output folder and its
Werewolf database are temporary copies, its tables silenced, serial whatever `--ray` says), and
one report says what the run would send and cost.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import typer

from gtsteer.binding.progress import shown
from gtsteer.cli.common import F, err_console, grouped, quieted, retyped
from gtsteer.cli.options import Concurrency, DryRunFlag, MaxCalls, MaxCost, MaxTokens, Rpm
from gtsteer.llm.dry_run import DryRun, ModelEstimate
from gtsteer.llm.rate import RateLimit
from gtsteer.llm.session import Budget, BudgetExceeded, Session, session
from gtsteer.llm.usage import UsageReport

#: The exit code of a run stopped by --max-calls, --max-tokens or --max-cost.
BUDGET_EXIT = 3


def usage_line(usage: UsageReport) -> str:
    """The final line of every command that calls a model."""
    cost = "cost unknown" if usage.cost is None else f"cost ${usage.cost:.4f}"
    waits = f"{usage.rate_waits} rate-limit waits"
    if usage.rate_waits:
        waits += f" ({usage.rate_wait_s:.1f} s)"
    return (f"LLM: {usage.requests:,} requests, {usage.new_calls:,} new calls, {usage.tokens:,}"
            f" tokens ({usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion),"
            f" {usage.retries} retries, {waits}, {cost}")


def stop_line(exc: BudgetExceeded, usage: UsageReport, out: Path | None = None) -> str:
    """How far a stopped run got and how it continues: the partial folder is the rerun's."""
    again = f"rerun with the same --out {out}" if out is not None else "rerun the same command"
    return (f"stopped: {exc} after {usage.new_calls:,} new calls; what finished is saved and"
            f" every answer is cached: raise {exc.flag} and {again} to continue"
            f" (exit {BUDGET_EXIT})")


@contextmanager
def metered(rate: RateLimit, budget: Budget, out: Path | None = None) -> Iterator[Session]:
    """The run's session; its usage line at the end, its stop line and exit 3 at a limit
    (`out`: the run's `--out`, which the rerun gives again)."""
    with session(rate, budget) as run:
        try:
            yield run
        except BudgetExceeded as exc:
            err_console.print(stop_line(exc, run.meter.snapshot(), out), highlight=False,
                              soft_wrap=True)
            err_console.print(usage_line(run.meter.snapshot()), highlight=False, soft_wrap=True)
            raise typer.Exit(code=BUDGET_EXIT) from None
        except typer.Exit as exc:
            if exc.exit_code in (0, 1):  # a finished run (1: it produced no result)
                err_console.print(usage_line(run.meter.snapshot()), highlight=False,
                                  soft_wrap=True)
            raise
        err_console.print(usage_line(run.meter.snapshot()), highlight=False, soft_wrap=True)


def _cost(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:.4f}"


def dry_run_report(name: str, dry: DryRun, usage: UsageReport) -> list[str]:
    """What `--dry-run` prints: the requests, the tokens and the cost the run would spend."""
    total = dry.totals()
    lines = [f"dry run of {name}: nothing was sent.",
             f"requests: {usage.requests:,} ({usage.cache_hits:,} answered by the cache,"
             f" {usage.new_calls:,} would be sent)"]
    basis = ("the mean of the cached answers" if dry.cached_answers
             else "no cached answers to measure: text at max_tokens")
    lines.append(f"tokens: about {total.prompt_tokens:,} prompt + {total.completion_tokens:,}"
                 f" completion ({basis}); at most {total.prompt_tokens:,} +"
                 f" {total.completion_tokens_max:,} with every answer at max_tokens")
    lines.append(f"cost: about {_cost(total.cost)}, at most {_cost(total.cost_max)}"
                 + (" (litellm has no price for " + ", ".join(
                     m.model for m in dry.models.values() if m.cost is None) + ")"
                    if total.cost is None else ""))
    for m in sorted(dry.models.values(), key=lambda m: m.model):
        lines.append(_model_line(m))
    lines.append("answers can change the tree (an early end, a retry): the count follows"
                 " stand-in answers, the worst case is the game-size line")
    return lines


def _model_line(m: ModelEstimate) -> str:
    return (f"  {m.model}: {m.requests:,} requests, {m.prompt_tokens:,} prompt +"
            f" {m.completion_tokens:,} completion tokens (at most {m.completion_tokens_max:,}),"
            f" cost {_cost(m.cost)}")


def dry_run(name: str, command: Callable[..., Any], args: tuple[Any, ...],
            kwargs: dict[str, Any], rate: RateLimit) -> None:
    """Run `command` in a dry-run session (see the module docstring) and print its report."""
    dry = DryRun()
    with tempfile.TemporaryDirectory(prefix="gtsteer-dry-run-") as tmp:
        if "out" in kwargs:
            kwargs["out"] = Path(tmp) / "out"
        if "db" in kwargs:  # a Werewolf database: a copy (resume reads its game)
            copy = Path(tmp) / "werewolf.sqlite"
            if kwargs["db"] and Path(kwargs["db"]).is_file():
                shutil.copyfile(kwargs["db"], copy)
            kwargs["db"] = str(copy)
        for name_, value in (("ray", None), ("workers", None), ("quiet", True)):
            if name_ in kwargs:
                kwargs[name_] = value
        with session(rate, Budget(), dry) as run:
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    command(*args, **kwargs)
                except typer.Exit as exc:
                    if exc.exit_code not in (0, 1):
                        raise
            usage = run.meter.snapshot()
    for line in dry_run_report(name, dry, usage):
        typer.echo(line)


_RATE = {"concurrency": Concurrency, "rpm": Rpm, "dry_run": DryRunFlag}
_BUDGET = {"max_calls": MaxCalls, "max_tokens": MaxTokens, "max_cost": MaxCost}


def spending(*, budget: bool = False, display: bool = True) -> Callable[[F], F]:
    """Give a command the rate flags (and with `budget` the budget flags) and run it inside
    `metered` (see the module docstring) and, unless it is interactive (`display` False: it
    prints as it plays), the one progress display. The flags are declared in
    `gtsteer.cli.options`."""

    def wrap(command: F) -> F:
        command = grouped(command)
        signature = inspect.signature(command, eval_str=True)
        added = {**_RATE, **(_BUDGET if budget else {})}
        added = {k: v for k, v in added.items() if k not in signature.parameters}

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            ours = {name: kwargs.pop(name, None) for name in added}
            rate = _checked(lambda: RateLimit.of(ours.get("concurrency"), ours.get("rpm")))
            if ours.get("dry_run"):
                return dry_run(command.__name__.replace("_", " "), command, args, kwargs, rate)
            # a command with its own --max-calls (solve, psro, export: it also raises their
            # tree bound) keeps it; the budget reads it there
            calls = ours["max_calls"] if "max_calls" in ours else kwargs.get("max_calls")
            limits = _checked(lambda: Budget(calls, ours.get("max_tokens"), ours.get("max_cost")))
            quiet = bool(kwargs.get("quiet"))  # -q: nothing but the final summary
            out = kwargs.get("out")
            with metered(rate, limits, Path(out) if out is not None else None), quieted(quiet), \
                    shown(_name(command), enabled=display and not quiet, console=err_console):
                return command(*args, **kwargs)

        return retyped(run, signature, signature.parameters.values(), added)

    return wrap


def _name(command: Callable[..., Any]) -> str:
    """The command as typed, less the program ("eval steering"), for the progress display."""
    where = click.get_current_context(silent=True)
    return (where.command_path.partition(" ")[2] if where else "") or command.__name__


def _checked(make: Callable[[], Any]) -> Any:
    """A limit from the flags, an unusable one (GTSTEER_RPM=abc) as a one-line error."""
    try:
        return make()
    except ValueError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2) from None
