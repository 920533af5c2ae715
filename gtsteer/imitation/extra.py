"""The `imitate` extra's check, apart from the policy and the network that both need it (the
network imports torch at import time; the policy imports the network only when it runs)."""

from gtsteer.llm.extras import require


def require_imitate() -> None:
    """torch and safetensors, the `imitate` extra, or one line naming it."""
    for module in ("torch", "safetensors"):
        require(module, "imitate", "Training or running a distilled policy")
