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

from gtsteer.llm import in_process

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


#: How common provider keys begin (Hugging Face, Groq, GitHub, GitLab, Slack, AWS, Google,
#: Replicate, Stripe-style `sk_`/`pk_`/`rk_`, ...): a value beginning so is a pasted key.
_KEY_PREFIXES = ("hf_", "gsk_", "sk_", "pk_", "rk_", "r8_", "fw_", "ghp_", "gho_", "ghu_",
                 "ghs_", "ghr_", "github_pat_", "glpat", "xox", "AKIA", "ASIA", "AIza")
#: A name's underscore-separated parts are words (OPENAI_API_KEY, HUGGINGFACEHUB_API_TOKEN);
#: a longer run of letters and digits is a key's random body.
_LONGEST_WORD = 16


def shown_env_name(value: str) -> str:
    """`value`, given as an environment variable's name, as a message may show it: in full when
    it reads like a name, else its first two characters and its length. Many keys (`hf_...`,
    `gsk_...`, 32 random letters) are valid names too, so `env_name_problem` cannot catch them."""
    if _key_like(value):
        return f"{value[:2]}... ({len(value)} characters, not shown: a key?)"
    return value


def _key_like(value: str) -> bool:
    if value.startswith(_KEY_PREFIXES) or len(value) > 3 * _LONGEST_WORD:
        return True
    for word in value.split("_"):
        digits = sum(c.isdigit() for c in word)
        mixed_case = word.lower() != word and word.upper() != word
        # Names are words (API, KEY, GPT4); a key's body is long, or mixes case and digits,
        # or letters and many digits.
        if (len(word) > _LONGEST_WORD or (mixed_case and digits)
                or (digits >= 4 and len(word) - digits >= 4)):
            return True
    return False


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
        if in_process(self.model) and (self.api_base or self.api_key_env):
            raise ValueError(f"api_base/api_key_env apply to served models (litellm ids such as"
                             f" openai/NAME); `{self.model}` runs in-process")
        return self


class RunModels(BaseModel):
    """`models:` in a config; every role optional (unset: the command line, else `local`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writer: RoleModel | None = None
    reader: RoleModel | None = None
    proposer: RoleModel | None = None
