"""What every driver gets besides its config and its options: a `RunContext`.

A command's run is `run(config, ctx, options) -> RunResult`: `config` says what is played,
`options` how (one pydantic model per command, data only), and the context where and with
what: the models given per role and where served models live (`Endpoint`), the output folder,
the executor (serial or Ray) and who hears of the run as it goes. Models are resolved in one
place, `RunContext.roles` (`gtsteer.runs.models.pick_roles`); a Werewolf run's bots name their
models per seat, so its role is a pool of clients (`RunContext.pool`). Each client carries its
response cache and usage meter, so a driver meters a run by the clients the context gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from gtsteer.binding.run_models import Role
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, model_string
from gtsteer.llm.cache import public_url
from gtsteer.runs.executor import SERIAL, Executor
from gtsteer.runs.models import Endpoint, RoleRecord, pick_roles, writer_name
from gtsteer.runs.output import run_folder
from gtsteer.runs.provenance import check_same_run, note_run
from gtsteer.runs.units import RayOptions

if TYPE_CHECKING:
    from gtsteer.werewolf.llmcalls import LLMPool

D = TypeVar("D", bound=Callable[..., Any])
#: A role of `RunContext.models`; the two that are no language model are not in provenance.
Given = Role | Literal["pool", "embedder", "chooser"]
#: Every command's driver, `run(config, ctx, options) -> RunResult`, by command, as `@driver`
#: registered it when its module was imported (tests/runs/test_driver_shape.py checks each).
DRIVERS: dict[str, Callable[..., Any]] = {}


class Options(BaseModel):
    """The base of every command's options: data only, unknown names refused, never changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def driver(command: str) -> Callable[[D], D]:
    """Register the decorated `run` as the driver of `command` (e.g. "eval reward")."""
    def register(run: D) -> D:
        DRIVERS[command] = run
        return run
    return register


@dataclass(frozen=True)
class RunContext:
    """Where and with what a driver runs (see the module docstring)."""

    #: The models given per role (unset: the config's `models:` block, else the default): a
    #: model string, a client (its cache and meter shared with the caller), or for the reader
    #: of `eval steering` a steering classifier or its spelling (`embed`, `pairwise:MODEL`,
    #: `parse`); for a Werewolf run, `pool`: an `LLMPool` whose clients the caller shares;
    #: `embedder`: a sentence embedder's name or an `Embedder` (a name on Ray); for
    #: `werewolf evaluate`, `chooser`: an in-process `PlaystyleChooser` for the policy's.
    models: Mapping[Given, Any] = field(default_factory=dict)
    #: Where served models live (`--api-base`, `--api-key-env`, timeouts).
    endpoint: Endpoint = field(default_factory=Endpoint)
    #: The output folder (None: the command's default under results/).
    out: Path | None = None
    executor: Executor = SERIAL
    #: Where one-line notes go (the tree-size estimate, a resumed run); None: nowhere.
    report: Callable[[str], None] | None = None
    #: Told what the run is doing now ("iteration 2: oracle of player 0"); None: nobody.
    on_phase: Callable[[str], None] | None = None
    #: Handed each step's result as it finishes (a PSRO iteration's report, a played turn).
    on_step: Callable[[Any], None] | None = None
    #: Asked for a human seat's message (`gtsteer play`); None: a human seat is refused.
    ask_human: Callable[[Any], str] | None = None

    @classmethod
    def of(cls, *, llm: str | LLM | None = None, reader: Any = None,
           proposer: str | LLM | None = None, pool: LLMPool | None = None,
           embedder: Any = None, chooser: Any = None, endpoint: Endpoint | None = None,
           out: str | Path | None = None, ray: RayOptions | None = None, progress: bool = True,
           report: Callable[[str], None] | None = None,
           on_phase: Callable[[str], None] | None = None,
           on_step: Callable[[Any], None] | None = None,
           ask_human: Callable[[Any], str] | None = None) -> RunContext:
        """A context from the command line's words (a role left None is not given)."""
        given = {"writer": llm, "reader": reader, "proposer": proposer, "pool": pool,
                 "embedder": embedder, "chooser": chooser}
        return cls(models={r: m for r, m in given.items() if m is not None},  # type: ignore[misc]
                   endpoint=endpoint or Endpoint(), out=None if out is None else Path(out),
                   executor=Executor(ray, progress), report=report, on_phase=on_phase,
                   on_step=on_step, ask_human=ask_human)

    @property
    def progress(self) -> bool:
        return self.executor.progress

    @property
    def ray(self) -> RayOptions | None:
        return self.executor.ray

    def given(self, role: Given) -> Any:
        """The model given for `role`, or None."""
        return self.models.get(role)

    def roles(self, spec: DomainSpec, *others: Role
              ) -> tuple[LLM, dict[str, LLM], dict[str, RoleRecord]]:
        """The writer's client, the `others` roles' clients and what each role got: the one
        place a run's models are resolved (`pick_roles`)."""
        return pick_roles(spec, self.endpoint, self.given("writer"),
                          **{role: self.given(role) for role in others})

    def pool(self, *names: str) -> LLMPool:
        """A Werewolf run's models: the pool given, else one client per model string, served
        models through the endpoint (each of `names` checked first, before any game)."""
        from gtsteer.werewolf.llmcalls import LLMPool  # Werewolf loads only for its runs

        given: LLMPool | None = self.given("pool")
        if given is not None:
            return given
        for name in names:
            self.endpoint.check(name)
        return LLMPool(factory=self.endpoint.llm)

    def writer_name(self, spec: DomainSpec) -> str:
        """The writer's model string as `roles` will choose it, without building a client."""
        return writer_name(spec, self.given("writer"))

    def folder(self, kind: str, config: str | Path, model: str | LLM, seed: int) -> Path:
        """The run's folder: `out` as given, else the default `run_dir` of `kind`. Notes the
        run's facts for its `provenance.json`; an `out` holding another run's results is
        refused (`check_same_run`)."""
        folder = run_folder(kind, config, model, seed, self.out)
        if self.out is not None:  # a default folder is named by the run itself
            check_same_run(folder, kind, config)
        given: dict[str, str] = {role: model_string(m) if isinstance(m, str | LLM) else str(m)
                 for role, m in self.models.items() if role not in ("embedder", "chooser")}
        note_run(folder, kind, config, model_string(model), given,
                 public_url(self.endpoint.api_base), seed)
        return folder
