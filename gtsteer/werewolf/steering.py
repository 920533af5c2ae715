"""The distilled chooser: a `DistilledPolicy` (trained on CFR solutions of playstyle games)
picks each steered bot's playstyle from the hook's text view.

One policy serves both teams (the role and team open the hook text). Its distribution is
masked to the decision's options and drawn from with the decision seed, so a game replays and
resumes with the same draws. It steers only the decisions the playstyle game contains
(discussion turns); elsewhere the bot keeps its baseline style. The only import of
`gtsteer.imitation` in the Werewolf package lives here (DESIGN.md).
"""

from __future__ import annotations

from pathlib import Path

from gtsteer.imitation.policy import DistilledPolicy, PolicyError, PolicyInput, TextEmbedder
from gtsteer.werewolf.playstyles import (
    STYLE_OPTIONS,
    AssignedPlaystyle,
    HookInput,
    PlaystyleChooser,
    StyleChoice,
    legal_style,
    sample_style,
    solved_decision,
)

#: The policy's directory inside a `steer-train` output folder.
POLICY_DIR = "policy"


def hook_policy_input(text: str) -> PolicyInput:
    """What a playstyle policy reads: the hook's text view, no features."""
    return PolicyInput(text=text)


class DistilledPlaystyleChooser:
    """A pure function of the hook input: probabilities from the policy, a seeded draw, at
    the decisions the policy was trained on; `baseline`'s choice at every other one."""

    def __init__(self, policy: DistilledPolicy, baseline: PlaystyleChooser | None = None):
        unknown = [a for a in policy.actions if a not in STYLE_OPTIONS]
        if unknown:
            raise PolicyError(f"policy actions {unknown} are not playstyles "
                              f"(expected a subset of {list(STYLE_OPTIONS)})")
        self.policy = policy
        self.baseline = baseline or AssignedPlaystyle()

    @classmethod
    def load(cls, directory: str | Path, embedder: TextEmbedder | None = None
             ) -> DistilledPlaystyleChooser:
        """From a `steer-train` output folder (or the policy folder itself)."""
        path = Path(directory)
        if (path / POLICY_DIR).is_dir():
            path = path / POLICY_DIR
        if not path.is_dir():
            raise FileNotFoundError(f"--steer: {directory} holds no trained policy")
        return cls(DistilledPolicy.load(path, embedder))

    def choose(self, info: HookInput) -> StyleChoice | str:
        if not solved_decision(info.phase, info.decision):  # never in the solved game
            return self.baseline.choose(info)
        allowed = [o for o in info.options if o in self.policy.actions]
        if not allowed:  # the policy knows none of this decision's options
            style = legal_style("", info.options)
            return StyleChoice(style=style, probs={style: 1.0})
        # masked and renormalised over the decision's options
        probs = self.policy.probs_for(hook_policy_input(info.text), actions=allowed)
        return StyleChoice(style=sample_style(probs, info.seed), probs=probs)
