"""`DistilledPolicy`: the trained network behind a plain `probs(text) -> {instruction: p}`.

No pyspiel here: Werewolf steering and any other caller use it directly; the OpenSpiel adapter
lives in `pyspiel_policy`. A policy is a directory:

    config.json         PolicyConfig: embedder name and dim, feature mode, action labels, domain
    model.safetensors   the MLP's weights

`load` checks the directory before trusting it (missing file, bad JSON, shapes that disagree with
the config) and says which file is wrong.

torch (and the network module) are imported only where a network is run, saved or loaded:
the CLI and the Werewolf server import this module, and torch costs them seconds and ~200 MiB.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gtsteer.imitation.extra import require_imitate

if TYPE_CHECKING:
    from gtsteer.imitation.model import PolicyMLP

FORMAT: Final = "gtsteer-distilled-policy"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FeatureMode = Literal["text", "struct", "both"]


class PolicyError(ValueError):
    """A policy cannot be loaded or used as asked; the message names the file or field."""


class ActionSetMismatchError(PolicyError):
    """The caller's instructions are not the ones the policy was trained on."""


class PolicyInput(BaseModel):
    """What a policy reads at one decision: a view's text and, where the view has them, its
    structured features. Every caller that steers live play (the dialogue `Advisor`, Werewolf's
    distilled playstyle chooser) builds one from its own view and asks `probs_for`."""

    model_config = ConfigDict(frozen=True)

    text: str
    features: list[float] | None = None


class TextEmbedder(Protocol):
    """What a policy needs from an embedder (`gtsteer.llm.embed.Embedder` is one)."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class PolicyConfig(BaseModel):
    """`config.json` of a policy directory."""

    format: Literal["gtsteer-distilled-policy"] = FORMAT
    format_version: int = FORMAT_VERSION
    embedder: str | None  # None only for feature mode "struct" (no text input)
    embedding_dim: int = Field(ge=0)
    features: FeatureMode
    feature_dim: int = Field(ge=0)
    actions: list[str] = Field(min_length=1)
    hidden: list[int]
    domain: str | None = None
    #: Free-form provenance (training config, dataset size, held-out instances...).
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def input_dim(self) -> int:
        dims = {"text": self.embedding_dim, "struct": self.feature_dim}
        return dims.get(self.features, self.embedding_dim + self.feature_dim)

    @property
    def uses_text(self) -> bool:
        return self.features in ("text", "both")

    @property
    def uses_features(self) -> bool:
        return self.features in ("struct", "both")


class DistilledPolicy:
    """A distribution over instructions for any information-state text (and features)."""

    def __init__(
        self, config: PolicyConfig, network: PolicyMLP, embedder: TextEmbedder | None = None
    ):
        if config.uses_text:
            if embedder is None:
                raise PolicyError(f"policy uses text: needs the embedder {config.embedder!r}")
            _check_embedder(config, embedder)
        self.config = config
        self.network = network.eval()
        self.embedder = embedder

    @property
    def actions(self) -> list[str]:
        return list(self.config.actions)

    def __repr__(self) -> str:
        return (
            f"DistilledPolicy(actions={self.actions}, embedder={self.config.embedder!r}, "
            f"features={self.config.features!r})"
        )

    # ---- inference ----------------------------------------------------------------------

    def probs(
        self,
        text: str,
        features: Sequence[float] | None = None,
        actions: Sequence[str] | None = None,
    ) -> dict[str, float]:
        """P(instruction) for one information state, over `actions` (default: all labels)."""
        labels = self.actions if actions is None else list(actions)
        row = self.probs_batch([text], None if features is None else [features], labels)[0]
        return {label: float(p) for label, p in zip(labels, row, strict=True)}

    def probs_for(self, view: PolicyInput, actions: Sequence[str] | None = None
                  ) -> dict[str, float]:
        """P(instruction) at one live decision: the one way a view becomes this policy's input.
        The text goes in where the policy reads text, the features where it reads features (a
        view without them is a `PolicyError` naming what is missing)."""
        if self.config.uses_features and view.features is None:
            raise PolicyError(
                f"features: this policy was trained with features={self.config.features!r} and "
                f"needs {self.config.feature_dim} structured features per state; the view has "
                "none (gtsteer.Advisor builds them from a dialogue)"
            )
        return self.probs(view.text, view.features if self.config.uses_features else None,
                          actions)

    def probs_batch(
        self,
        texts: Sequence[str],
        features: Sequence[Sequence[float]] | np.ndarray | None = None,
        actions: Sequence[str] | None = None,
        *,
        embeddings: np.ndarray | None = None,
    ) -> np.ndarray:
        """(n, len(actions)) probabilities; each row sums to 1 over `actions`.

        `embeddings` skips the embedder when the caller already has the rows (evaluation)."""
        require_imitate()
        import torch

        from gtsteer.imitation.model import assemble_inputs, masked_log_probs, torch_threads

        labels = self.actions if actions is None else list(actions)
        index = self.action_index(labels)
        n = len(texts)
        emb = None
        if self.config.uses_text:
            if embeddings is None:
                assert self.embedder is not None
                embeddings = self.embedder.embed(list(texts))
            emb = np.asarray(embeddings, np.float32)
            if emb.shape != (n, self.config.embedding_dim):
                raise PolicyError(
                    f"embeddings: shape {emb.shape}, expected ({n}, {self.config.embedding_dim})"
                )
        feats = self._features(features, n)
        x = torch.from_numpy(assemble_inputs(self.config.features, emb, feats))
        mask = torch.zeros((n, len(self.config.actions)), dtype=torch.bool)
        mask[:, index] = True
        with torch.no_grad(), torch_threads(1):  # one small forward pass: threads only cost
            probs = masked_log_probs(self.network(x), mask).exp().numpy()
        out = probs[:, index].astype(np.float64)
        return out / out.sum(axis=1, keepdims=True)

    def action_index(self, labels: Sequence[str]) -> list[int]:
        """Column of each label; an unknown or repeated label is an `ActionSetMismatchError`."""
        known = {a: i for i, a in enumerate(self.config.actions)}
        unknown = [a for a in labels if a not in known]
        if unknown or not labels:
            raise ActionSetMismatchError(
                f"actions: {unknown or 'none given'} not among the policy's instructions "
                f"{self.config.actions} (trained on a different action set?)"
            )
        if len(set(labels)) != len(labels):
            raise ActionSetMismatchError(f"actions: duplicate labels in {list(labels)}")
        return [known[a] for a in labels]

    def _features(self, features: Any, n: int) -> np.ndarray | None:
        if not self.config.uses_features:
            return None
        if features is None:
            raise PolicyError(
                f"features: this policy was trained with features={self.config.features!r} and "
                f"needs {self.config.feature_dim} structured features per state (gtsteer.Advisor "
                "builds the text view and the features from a dialogue)"
            )
        arr = np.asarray(features, np.float32)
        if arr.shape != (n, self.config.feature_dim):
            raise PolicyError(
                f"features: shape {arr.shape}, expected ({n}, {self.config.feature_dim})"
            )
        return arr

    # ---- persistence --------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        """Write config.json and model.safetensors into `directory` (created if needed)."""
        require_imitate()
        from safetensors.torch import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous() for k, v in self.network.state_dict().items()}
        save_file(state, str(out / WEIGHTS_FILE), metadata={"format": FORMAT})
        (out / CONFIG_FILE).write_text(self.config.model_dump_json(indent=2) + "\n", "utf-8")
        return out

    @classmethod
    def load(cls, directory: str | Path, embedder: TextEmbedder | None = None) -> DistilledPolicy:
        """Read a policy directory; loads the embedder it names unless one is given."""
        config = read_config(directory)
        network = _read_network(Path(directory), config)
        if config.uses_text and embedder is None:
            from gtsteer.llm.embed import get_embedder

            embedder = get_embedder(config.embedder, strict=True)
        return cls(config, network, embedder if config.uses_text else None)


def read_config(directory: str | Path) -> PolicyConfig:
    path = Path(directory) / CONFIG_FILE
    if not Path(directory).is_dir():
        raise PolicyError(f"{directory}: not a policy directory (no such folder)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise PolicyError(f"{path}: corrupted (invalid JSON: {exc})") from None
    try:
        return PolicyConfig.model_validate(data)
    except ValidationError as exc:
        fields = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise PolicyError(f"{path}: not a valid policy config ({fields})") from None


def _read_network(directory: Path, config: PolicyConfig) -> PolicyMLP:
    require_imitate()
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from gtsteer.imitation.model import PolicyMLP

    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise PolicyError(f"{path}: missing (the policy directory is incomplete)")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise PolicyError(f"{path}: corrupted ({exc})") from None
    network = PolicyMLP(config.input_dim, len(config.actions), config.hidden)
    expected = {k: tuple(v.shape) for k, v in network.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in state.items()}
    if expected != found:
        raise PolicyError(
            f"{path}: weights do not match {CONFIG_FILE} (expected {expected}, found {found})"
        )
    network.load_state_dict(state)
    return network


def _check_embedder(config: PolicyConfig, embedder: TextEmbedder) -> None:
    if embedder.dim != config.embedding_dim:
        raise PolicyError(
            f"embedder: {embedder.name!r} gives {embedder.dim}-dim vectors, the policy expects "
            f"{config.embedding_dim} from {config.embedder!r}"
        )
    if embedder.name != config.embedder:
        raise PolicyError(
            f"embedder: the policy was trained on {config.embedder!r}, got {embedder.name!r}"
        )
