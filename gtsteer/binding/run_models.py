"""The optional `models:` block of a domain config: which model plays each role of a run.

A run that uses two models (the writer of the messages and rewards, the reader that classifies
them in `eval steering`, the proposer of new instructions in `psro`) can name them in the
config instead of on the command line; a command-line flag still wins. A role names a model
string and, for a served model, its base URL and the *name* of the environment variable that
holds its key: a key itself never goes into a config (nor into the cache or a summary).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Role = Literal["writer", "reader", "proposer"]
ROLES: tuple[Role, ...] = ("writer", "reader", "proposer")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_name_problem(value: str) -> str | None:
    """Why `value` is no environment variable's name (None if it is one). The value itself is
    never quoted: what lands in a name field by mistake is often the key."""
    if _ENV_NAME.fullmatch(value):
        return None
    return (f"must name an environment variable (letters, digits, _), got a value of"
            f" {len(value)} characters that is not one (a key?)")


class RoleModel(BaseModel):
    """One role's model: `writer: fake` or `writer: {model: openai/x, api_base: URL}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    api_base: str | None = Field(None, min_length=1)
    #: The environment variable holding the key (its name, e.g. OPENAI_API_KEY).
    api_key_env: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"model": data}
        if isinstance(data, dict) and "api_key" in data:
            raise ValueError("`api_key`: a key never goes into a config; put it in an"
                             " environment variable and name that variable in `api_key_env`")
        return data

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and (problem := env_name_problem(v)):
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _endpoint_for_served_only(self) -> RoleModel:
        in_process = self.model in ("local", "fake") or self.model.startswith(("local:", "fake:"))
        if in_process and (self.api_base or self.api_key_env):
            raise ValueError(f"api_base/api_key_env apply to served models (litellm ids such as"
                             f" openai/NAME); `{self.model}` runs in-process")
        return self


class RunModels(BaseModel):
    """`models:` in a config; every role optional (unset: the command line, else `local`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writer: RoleModel | None = None
    reader: RoleModel | None = None
    proposer: RoleModel | None = None
