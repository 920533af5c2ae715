"""How a model's answer reads as a message: whole sentences, narration, stage directions.

Shared by the dialogue games' cleaning (`binding.prompts`), the Werewolf bots' public lines and
the lab's line measures, so a "cut" message means the same everywhere."""

from __future__ import annotations

import re

#: A sentence end: ., !, ? or an ellipsis, with closing quotes or brackets, before a space or
#: the end of the text.
SENTENCE_END = re.compile(r"[.!?\u2026][\"'\u201d)\]]*(?=\s|$)")


def whole_sentences(text: str) -> str:
    """`text` up to its last sentence end (all of it when it has none)."""
    ends = list(SENTENCE_END.finditer(text))
    return text[: ends[-1].end()] if ends else text


def ends_sentence(text: str) -> bool:
    """Whether `text` ends where a sentence does (not mid-sentence, as a cut answer does)."""
    text = text.rstrip()
    return bool(text) and any(m.end() == len(text) for m in SENTENCE_END.finditer(text))


#: A closed stage direction: "(glancing at Ben)", "*smiles*".
_STAGE_SPAN = re.compile(r"\([^()]*\)|\*[^*\n]+\*")


def drop_stage_directions(text: str) -> str:
    """`text` without its stage directions: spans in parentheses or asterisks, and an unclosed
    parenthesis up to the end of its sentence ("(The story is now starting, with ... killed.",
    SmolLM2 as a Werewolf bot). What is left is what the speaker says aloud."""
    text = _STAGE_SPAN.sub(" ", text)
    while (open_at := text.find("(")) >= 0:
        end = SENTENCE_END.search(text, open_at)
        text = text[:open_at] + " " + (text[end.end():] if end else "")
    text = re.sub(r"\s+([,.;:!?])", r"\1", " ".join(text.split()))
    return text.strip(" ,;:")
