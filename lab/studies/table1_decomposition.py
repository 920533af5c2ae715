"""The first mover's fresh-sample value, step by step: `any` -> a random instruction -> the CFR
opening -> greedy (issue 57, item 4; review science-0832c41, H1).

"The guidance helps" over `any` mixes two things: the value of giving *some* instruction and
the value of the solver's *choice* among them. The random-instruction baseline separates them:
uniform over the non-`any` instructions at the opening. It costs no model call: the saved
`uniform` baseline is uniform over all n instructions, `any` included, at the opening only,
and a value is linear in the opening mixture, so per instance

    uniform = ((n - 1) random + any) / n,  i.e.  random = (n uniform - any) / (n - 1).

(Exact for the first mover, whose baselines are played at its opening decision alone; a
later player's `uniform` baseline plays at every one of its decisions, so it is not derived
there.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from gtsteer.solvers.metrics import MeanCI, mean_ci


def random_instruction_values(uniform: Sequence[float], any_: Sequence[float],
                              n: int) -> list[float]:
    """Per instance: the value of uniform over the n - 1 non-`any` instructions, from the
    value of uniform over all n (`any` included) and the value of `any`."""
    if n < 2:
        raise ValueError(f"n: a random non-`any` instruction needs 2 or more actions, got {n}")
    if len(uniform) != len(any_):
        raise ValueError(f"uniform and any: {len(uniform)} vs {len(any_)} instances")
    return [(n * u - a) / (n - 1) for u, a in zip(uniform, any_, strict=True)]


def cell(player: int, baseline: str, side: str) -> str:
    """A saved row's per-instance key of the first mover's opening cell (`side`: "policy" or
    "baseline")."""
    return f"versus_player{player}_opening_{baseline}_others_any_{side}_value"


class Decomposition(BaseModel):
    """The first mover's mean fresh value under each opening, and each step's paired gain."""

    player: int
    n_actions: int
    #: Mean fresh value per opening: `any`, `random`, `policy` (CFR), `greedy` (if any).
    values: dict[str, MeanCI]
    #: Paired per-instance differences: random - any, policy - random, greedy - random,
    #: policy - greedy.
    steps: dict[str, MeanCI]


def decomposition(per_instance: Mapping[str, list[float]], player: int,
                  n_actions: int) -> Decomposition | None:
    """The decomposition from a saved row's per-instance values (None where the row has no
    opening cells for `player`, e.g. saved before they were kept)."""
    try:
        any_ = per_instance[cell(player, "any", "baseline")]
        uniform = per_instance[cell(player, "uniform", "baseline")]
        policy = per_instance[cell(player, "any", "policy")]
    except KeyError:
        return None
    random = random_instruction_values(uniform, any_, n_actions)
    greedy = per_instance.get(cell(player, "greedy", "baseline"))
    values = {"any": any_, "random": random, "policy": policy}
    if greedy is not None:
        values["greedy"] = greedy

    def diff(a: str, b: str) -> MeanCI:
        return mean_ci([x - y for x, y in zip(values[a], values[b], strict=True)])

    steps = {"random - any": diff("random", "any"), "policy - random": diff("policy", "random")}
    if greedy is not None:
        steps["greedy - random"] = diff("greedy", "random")
        steps["policy - greedy"] = diff("policy", "greedy")
    return Decomposition(player=player, n_actions=n_actions,
                         values={k: mean_ci(v) for k, v in values.items()}, steps=steps)
