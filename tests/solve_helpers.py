"""A known-equilibrium dialogue domain for solver tests: constant-text backend + matrix utility.

Not a test module; imported by tests (and by subprocesses that put tests/ on sys.path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gtsteer.binding import Domain
from gtsteer.domains import register_domain
from gtsteer.llm import Backend, LLMCallError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

MIXED_2X2 = Path(__file__).parent / "data" / "mixed_2x2.yaml"
GUESS_SECRET = Path(__file__).parent / "data" / "guess_secret.yaml"
MOVES = ["a", "b", "any"]
#: Proposer's payoff (rows: proposer a/b/any; columns: responder a/b/any); zero-sum.
PAYOFF = [[0.0, 2.0, 3.0], [1.0, 0.0, 3.0], [-1.0, -1.0, 0.0]]


class ConstantBackend(Backend):
    """Every message is the same sentence, so nobody can infer another's instruction."""

    kind = "constant"
    max_concurrency = 16
    supports_grammar = True

    def __init__(self, model: str = "constant"):
        super().__init__(model)
        self.calls = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.calls += 1
        return RawCompletion(text="I have made my choice.", usage=Usage(completion_tokens=5))


async def mixed_2x2_utility(ctx: Any) -> list[float]:
    if ctx.instance.index in ctx.spec.params.get("fail_instances", []):
        raise LLMCallError("reward model unavailable (injected)")
    if ctx.instance.index in ctx.spec.params.get("crash_instances", []):
        raise ZeroDivisionError(ctx.spec.params.get("crash_message", "utility bug (injected)"))
    row = MOVES.index(ctx.instructions(0)[0])
    col = MOVES.index(ctx.instructions(1)[0])
    return [PAYOFF[row][col], -PAYOFF[row][col]]


def secret_info(spec: Any, rng: Any, player: int, names: list[str]) -> dict[str, str]:
    """The guesser knows nothing private; the keeper's secret is low or high."""
    return {"role": "guesser"} if player == 0 else {"secret": rng.choice(["low", "high"])}


async def guess_secret_utility(ctx: Any) -> list[float]:
    move = ctx.instructions(0)[0]
    low = ctx.instance.private_info[1]["secret"] == "low"
    value = {"bold": 3.0 if low else 0.0, "safe": 1.0, "any": 0.0}[move]
    return [value, 0.0]


MIXED_2X2_DOMAIN = register_domain(Domain(name="test_mixed_2x2", utility=mixed_2x2_utility))
GUESS_SECRET_DOMAIN = register_domain(
    Domain(name="test_guess_secret", private_info=secret_info, utility=guess_secret_utility)
)


class PricedBackend(ConstantBackend):
    """ConstantBackend whose every answer costs 0.002 USD, as litellm prices a provider's."""

    kind = "priced"
    PRICE = 0.002

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        raw = await super().complete(request, json_schema)
        return RawCompletion(text=raw.text, usage=Usage(completion_tokens=5, cost_usd=self.PRICE))


#: The README job's config (`gtsteer solve gtsteer/configs/schedule_meeting_dow.yaml --games 1`).
MEETING = Path(__file__).parent.parent / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"


def small_meeting(tmp: Path, days: tuple[str, ...] = ("Monday", "Friday", "any"),
                  samples: int = 1) -> Path:
    """The README job's config with fewer day actions and samples per message, written into
    `tmp`: the same domain, prompts, reward and model, on a tree a fraction of the size (the
    full README instance takes about 5 minutes on one thread, the small one well under one)."""
    import yaml

    data = yaml.safe_load(MEETING.read_text(encoding="utf-8"))
    data["actions"] = {"day": list(days)}
    defined = data.get("instruction_definitions", {}).get("day", {})
    data["instruction_definitions"] = {"day": {d: v for d, v in defined.items() if d in days}}
    data["num_llm_seeds"] = samples
    path = tmp / "small_meeting.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
