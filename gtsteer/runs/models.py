"""Which model plays each role of a run: the command line first, then the config's `models:`
block, then the default (`local` for the writer; the writer for the reader and the proposer).

`Endpoint` is where served (litellm) models live: the `--api-base`/`--api-key-env` flags of
the CLI, or a config role's `api_base`/`api_key_env`. It is the one factory every model of a
run is built through, so flags and config spell, check and apply endpoints the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from gtsteer.binding.run_models import Role, RoleModel, env_name_problem, shown_env_name
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, ModelConfigError, as_llm, in_process, model_string
from gtsteer.llm.backends.litellm_backend import API_MODES
from gtsteer.llm.cache import public_url
from gtsteer.llm.client import REQUEST_TIMEOUT_S, RETRY_AFTER_MAX_S

#: The key sent where none is given: OpenAI-compatible servers without auth take it, and the
#: OpenAI SDK insists on holding some key.
NO_KEY = "no-key"


@dataclass(frozen=True)
class Endpoint:
    """Where served (litellm) models of one run live; in-process models ignore it.
    `key_field` names where `api_key_env` was given, for the error when it is unset."""

    api_base: str | None = None
    api_key_env: str | None = None
    key_field: str = "--api-key-env"
    #: `--request-timeout`: seconds one try may take (None: the client's default, 120).
    timeout_s: float | None = None
    #: `--max-wait`: the longest wait between tries, a `Retry-After` included (None: 300).
    max_wait_s: float | None = None
    #: False where the user did not give `api_base` this run (a Werewolf game's stored
    #: endpoint, which a database from elsewhere may point anywhere): a served model then
    #: sends `api_key_env`'s key or the placeholder, never a key litellm finds in the
    #: environment (OPENAI_API_KEY and its kin).
    env_keys: bool = True
    #: `--api-mode`: `chat` or `completions` (a base model's `/v1/completions`); None: the
    #: config role's `api_mode`, else chat.
    api_mode: str | None = None

    def __post_init__(self) -> None:
        if self.api_key_env is not None and (problem := env_name_problem(self.api_key_env)):
            raise ModelConfigError(f"{self.key_field}: {problem}")
        if self.api_mode not in (None, *API_MODES):
            raise ModelConfigError(f"--api-mode: expected one of {', '.join(API_MODES)}, got"
                                   f" {self.api_mode!r}")

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ModelConfigError(
                f"{self.key_field} {shown_env_name(self.api_key_env)}: that environment"
                " variable is not set."
            )
        return key

    def resolve(self, model: str) -> str | LLM:
        """What a driver takes as its model: the string itself unless the flags concern it
        (drivers build the client then, after checking their config)."""
        given = (self.api_base or self.api_key_env or self.timeout_s is not None
                 or self.max_wait_s is not None or self.api_mode is not None)
        return self.llm(model) if given and not in_process(model) else model

    def llm(self, model: str) -> LLM:
        """The client of `model`: served models get the base URL and key."""
        if in_process(model):
            return LLM(model)
        key = self.api_key()
        if key is None and self.api_base and not self.env_keys:
            key = NO_KEY  # a stored endpoint never gets the environment's key
        # Otherwise, with no key, an `openai/` model at an --api-base gets the placeholder from
        # the backend (the SDK must hold some key; a keyless server's docs send this one).
        return LLM(model, api_base=self.api_base, api_key=key,
                   timeout_s=REQUEST_TIMEOUT_S if self.timeout_s is None else self.timeout_s,
                   max_wait_s=RETRY_AFTER_MAX_S if self.max_wait_s is None else self.max_wait_s,
                   api_mode=self.api_mode or "chat")

    def check(self, *models: str | None) -> None:
        """Flags given for a run without a served model are a mistake worth one line."""
        if ((self.api_base or self.api_key_env or self.api_mode not in (None, "chat"))
                and all(not m or in_process(m) for m in models)):
            raise ModelConfigError(
                "--api-base/--api-key-env/--api-mode apply to served models (litellm ids such as"
                " openai/NAME or hosted_vllm/NAME); this run uses only"
                f" {', '.join(m for m in models if m)}."
            )

    def under(self, role: RoleModel, field: str) -> Endpoint:
        """This endpoint for a config role: each flag given wins over the role's own value."""
        mode = self.api_mode or role.api_mode
        if self.api_key_env is not None:
            return Endpoint(self.api_base or role.api_base, self.api_key_env, self.key_field,
                            self.timeout_s, self.max_wait_s, self.env_keys, mode)
        return Endpoint(self.api_base or role.api_base, role.api_key_env, f"{field}.api_key_env",
                        self.timeout_s, self.max_wait_s, self.env_keys, mode)


Source = Literal["given", "config", "default", "writer"]


class RoleRecord(BaseModel):
    """Which model played a role, as a run summary records it (no key, no URL credentials)."""

    model: str
    api_base: str | None = None
    #: given: the command line (--llm, --classifier-llm, --proposer-llm) or the driver's
    #: argument; config: the config's `models:` block; default: `local`; writer: the writer's.
    source: Source


def _base(llm: str | LLM) -> str | None:
    return None if isinstance(llm, str) else public_url(getattr(llm.backend, "api_base", None))


def pick(spec: DomainSpec, role: Role, given: str | LLM | None, endpoint: Endpoint | None = None,
         default: str | LLM = "local") -> tuple[str | LLM, RoleRecord]:
    """The model of `role`: `given` if not None, else the config's `models.<role>`, else
    `default` (`local`, or the writer's model for the reader and the proposer). Served models
    get `endpoint` (the CLI flags), a config role its own `api_base`/`api_key_env` where no
    flag says otherwise."""
    endpoint = endpoint or Endpoint()
    configured = getattr(spec.models, role) if spec.models is not None else None
    source: Source
    if given is not None:
        chosen, source = (endpoint.resolve(given) if isinstance(given, str) else given), "given"
    elif configured is not None:
        chosen = endpoint.under(configured, f"models.{role}").resolve(configured.model)
        source = "config"
    else:
        chosen = endpoint.resolve(default) if isinstance(default, str) else default
        source = "default" if role == "writer" else "writer"
    return chosen, RoleRecord(model=model_string(chosen), api_base=_base(chosen), source=source)


def pick_roles(spec: DomainSpec, endpoint: Endpoint | None, writer: str | LLM | None,
               **others: str | LLM | None) -> tuple[LLM, dict[str, LLM], dict[str, RoleRecord]]:
    """The writer and the `others` roles (reader, proposer) as clients, one client per distinct
    model (a role that falls back to the writer, or names the writer's model and endpoint,
    shares its client and cache meter), and what each role got. Flags that concern no served
    model of the run are refused (`Endpoint.check`)."""
    chosen, records = {}, {}
    chosen["writer"], records["writer"] = pick(spec, "writer", writer, endpoint)
    for role, given in others.items():
        chosen[role], records[role] = pick(spec, role, given, endpoint,  # type: ignore[arg-type]
                                           default=chosen["writer"])
    (endpoint or Endpoint()).check(*(r.model for r in records.values()))
    clients: dict[tuple[str, str | None, str | None], LLM] = {}
    out: dict[str, LLM] = {}
    for role, llm in chosen.items():
        mode = None if isinstance(llm, str) else getattr(llm.backend, "api_mode", None)
        key = (records[role].model, records[role].api_base, mode)
        out[role] = clients.get(key) or clients.setdefault(key, as_llm(llm))
    return out["writer"], {r: out[r] for r in others}, records


def writer_name(spec: DomainSpec, given: str | LLM | None) -> str:
    """The writer's model string as `pick` will choose it, without building a client (for the
    default output folder, checked before any work)."""
    if given is not None:
        return model_string(given)
    configured = spec.models.writer if spec.models is not None else None
    return configured.model if configured is not None else "local"
