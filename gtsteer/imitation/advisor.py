"""`Advisor`: a distilled policy steering a live dialogue of any domain.

    from gtsteer import Advisor
    from gtsteer.imitation import Line
    advisor = Advisor("trade_fruit_tone", "results/imitate-.../model")
    dialogue = advisor.dialogue(advisor.instance(0), speaker="responder",
                                messages=[Line(speaker=0, text="I give you 2 kiwis for 1 apple.")])
    advisor.advise(dialogue)                  # {"calm": 0.61, "assertive": 0.30, ...}
    advisor.choose(dialogue, random.Random(0))  # one instruction, drawn from that

The policy sees exactly what it was trained on: `views.decision_input`, the function every
dataset record is built by, turns the `Dialogue` into the text view and the features, and
`DistilledPolicy.probs_for` hands them to the network as its feature mode (`text`, `struct` or
`both`) wants. A policy trained on another config (its instructions or its domain) is refused
when the advisor is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gtsteer.binding.instances import Instance, make_instance
from gtsteer.binding.spec import DomainSpec
from gtsteer.imitation.dialogue import Dialogue, Line
from gtsteer.imitation.policy import (
    ActionSetMismatchError,
    DistilledPolicy,
    PolicyError,
    PolicyInput,
    TextEmbedder,
)
from gtsteer.imitation.views import decision_input

#: A message as `Advisor.dialogue` takes it: a `Line`, or (speaker, text) or
#: (speaker, text, instruction), the speaker an index, a name or a role.
MessageLike = Line | tuple[int | str, str] | tuple[int | str, str, str | None]


class DomainMismatchError(PolicyError):
    """The policy was trained on another config than the one it is asked to play."""


class DialogueMismatchError(ValueError):
    """The dialogue does not fit the config (player count, turn order, a finished dialogue)."""


class Uniform(Protocol):
    """A random source with `random() -> float in [0, 1)`: `random.Random` or a numpy
    `Generator`."""

    def random(self) -> float: ...


class Advisor:
    """The policy's distribution over the config's instructions at a dialogue's decision."""

    def __init__(self, config: str | Path | DomainSpec, policy: DistilledPolicy | str | Path,
                 *, embedder: TextEmbedder | None = None):
        if isinstance(config, DomainSpec):
            self.spec = config
        else:
            from gtsteer.domains import load_spec

            self.spec = load_spec(config)
        self.policy = (policy if isinstance(policy, DistilledPolicy)
                       else DistilledPolicy.load(policy, embedder))
        check_policy(self.spec, self.policy)

    def __repr__(self) -> str:
        return f"Advisor(config={self.spec.name!r}, policy={self.policy!r})"

    @property
    def actions(self) -> list[str]:
        """The config's instructions, in action order."""
        return self.spec.instructions()

    # ---- building a dialogue ----------------------------------------------------------

    def instance(self, index: int, seed: int = 0) -> Instance:
        """Instance `index` of the config's run seeded `seed` (as `gtsteer solve` makes it)."""
        return make_instance(self.spec, index, seed)

    def player(self, who: int | str, instance: Instance) -> int:
        """A player's index from its index, name ("Bob") or role ("responder")."""
        if isinstance(who, int):
            if not 0 <= who < self.spec.num_players:
                raise DialogueMismatchError(f"speaker: {who} is not a player index "
                                            f"(0..{self.spec.num_players - 1})")
            return who
        for names in (instance.names, self.spec.players):
            if who in names:
                return list(names).index(who)
        raise DialogueMismatchError(f"speaker: {who!r} is neither a player of this instance "
                                    f"{instance.names} nor a role {self.spec.players}")

    def dialogue(self, instance: Instance, speaker: int | str,
                 messages: Sequence[MessageLike] = ()) -> Dialogue:
        """The `Dialogue` of `speaker` deciding after `messages` in `instance` (its names,
        the speaker's private information and the config's opening)."""
        me = self.player(speaker, instance)
        opening = (None if instance.opening is None
                   else Line(speaker=self.spec.opening_speaker, text=instance.opening))
        lines = []
        for m in messages:
            if isinstance(m, Line):
                lines.append(m)
                continue
            who, text, *rest = m
            lines.append(Line(speaker=self.player(who, instance), text=text,
                              instruction=rest[0] if rest else None))
        return Dialogue(names=list(instance.names), speaker=me,
                        private_info=dict(instance.private_info[me]), opening=opening,
                        messages=lines)

    # ---- advice -----------------------------------------------------------------------

    def policy_input(self, dialogue: Dialogue) -> PolicyInput:
        """The text view and features the policy reads at `dialogue` (as in its dataset)."""
        self.check_dialogue(dialogue)
        return decision_input(self.spec, dialogue, self.policy.config.uses_features)

    def advise(self, dialogue: Dialogue) -> dict[str, float]:
        """P(instruction) over the config's instructions at `dialogue`'s decision."""
        view = self.policy_input(dialogue)
        want = self.policy.config.feature_dim
        if view.features is not None and len(view.features) != want:
            raise PolicyError(
                f"features: the config gives {len(view.features)} features per state, the "
                f"policy was trained on {want} (another num_max_replies, instruction set or "
                "domain features?)")
        return self.policy.probs_for(view, actions=self.actions)

    def choose(self, dialogue: Dialogue, rng: Uniform) -> str:
        """One instruction drawn from `advise(dialogue)` with `rng.random()` (inverse CDF in
        action order), so the same generator state gives the same choice."""
        return draw(self.advise(dialogue), rng.random())

    def check_dialogue(self, dialogue: Dialogue) -> None:
        """A `DialogueMismatchError` for a dialogue this config's game never has: another
        number of players, a speaker out of turn, or a dialogue already at its reply limit."""
        n = self.spec.num_players
        if len(dialogue.names) != n:
            raise DialogueMismatchError(f"dialogue: {len(dialogue.names)} players, the config "
                                        f"{self.spec.name!r} has {n}")
        if dialogue.speaker != dialogue.next_speaker:
            raise DialogueMismatchError(
                f"dialogue: it is {dialogue.names[dialogue.next_speaker]}'s turn after "
                f"{len(dialogue.messages)} message(s), not {dialogue.name}'s")
        if len(dialogue.messages) >= self.spec.reply_limit:
            raise DialogueMismatchError(
                f"dialogue: {len(dialogue.messages)} messages reach the config's reply limit "
                f"({self.spec.reply_limit}); the dialogue is over")


def check_policy(spec: DomainSpec, policy: DistilledPolicy) -> None:
    """Refuse a policy trained on another config: its domain (the config's name) or its
    instructions differ from `spec`'s."""
    trained = policy.config.domain
    if trained is not None and trained != spec.name:
        raise DomainMismatchError(
            f"policy: trained on config {trained!r}, asked to play {spec.name!r}; train one on "
            "this config (gtsteer imitate CONFIG)")
    labels = spec.instructions()
    missing = [a for a in labels if a not in policy.actions]
    extra = [a for a in policy.actions if a not in labels]
    if missing or extra:
        raise ActionSetMismatchError(
            f"actions: the policy was trained on other instructions than {spec.name!r} has "
            f"(the config's not in the policy: {missing}; the policy's not in the config: "
            f"{extra})")


def draw(probs: dict[str, float], u: float) -> str:
    """The label at `u` in [0, 1) of the cumulative distribution, in `probs`' order."""
    acc = 0.0
    names = list(probs)
    for name in names:
        acc += probs[name]
        if u < acc:
            return name
    return names[-1]


__all__ = ["Advisor", "DialogueMismatchError", "DomainMismatchError", "check_policy", "draw"]
