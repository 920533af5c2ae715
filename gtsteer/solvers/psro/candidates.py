"""Cleaning an LLM's proposed instructions before they cost a single game call.

A proposal is dropped (and counted by reason) when it is empty, over-long, not a string, the
`any` baseline, unusable as an action value (| or =), or the same instruction as one already
known or proposed earlier: equal after case, whitespace and punctuation are ignored, filler
words ("tone", "very", "a") are removed and known synonyms are mapped to one word.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gtsteer.binding import ANY

#: Longer proposals are rambling answers, not instructions (the paper's are one or two words).
MAX_INSTRUCTION_CHARS = 60

_FILLER = frozenset({
    "a", "an", "the", "be", "very", "really", "more", "most", "quite", "rather", "somewhat",
    "tone", "tones", "tonal", "style", "manner", "way", "voice", "in", "with", "of", "and",
})
#: Common tone synonyms, each group mapped to its first word. Hand-written because no library
#: ships a thesaurus offline (WordNet data is a separate download); extend per run if needed.
_SYNONYM_GROUPS = [
    "angry furious irate enraged mad",
    "happy cheerful joyful glad",
    "calm composed serene tranquil",
    "sad sorrowful unhappy melancholy",
    "polite courteous respectful",
    "rude impolite discourteous",
    "friendly amiable amicable",
    "aggressive hostile combative",
    "submissive meek docile deferential",
    "assertive forceful",
    "enthusiastic eager excited",
    "sarcastic sardonic",
    "humble modest",
    "confident selfassured",
    "curious inquisitive",
    "honest candid frank",
    "persuasive convincing",
    "anxious nervous worried",
]
SYNONYMS: dict[str, str] = {
    word: group.split()[0] for group in _SYNONYM_GROUPS for word in group.split()
}


def _adjective(word: str) -> str:
    """"angrily" -> "angry", "calmly" -> "calm" (only used when the table knows the result)."""
    if word.endswith("ily"):
        return word[:-3] + "y"
    return word[:-2] if word.endswith("ly") and len(word) > 5 else word


def canonical(text: str, synonyms: Mapping[str, str] = SYNONYMS) -> str:
    """The comparison key of an instruction ("Very  ANGRY tone!" -> "angry")."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("-", ""))
    kept = [w for w in words if w not in _FILLER] or words
    out = []
    for w in kept:
        if w not in synonyms and _adjective(w) in synonyms:
            w = _adjective(w)
        out.append(synonyms.get(w, w))
    return " ".join(out)


@dataclass
class Filtered:
    """Valid new instructions (cleaned, in proposal order) and drop counts by reason."""

    valid: list[str] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)


def filter_candidates(
    proposals: Iterable[object],
    known: Iterable[str],
    *,
    max_chars: int = MAX_INSTRUCTION_CHARS,
    synonyms: Mapping[str, str] = SYNONYMS,
) -> Filtered:
    """Keep the proposals that are new, short, plain instructions; count the rest."""
    seen = {canonical(k, synonyms) for k in known}
    out = Filtered()
    for item in proposals:
        if not isinstance(item, str):
            out.dropped["not_text"] += 1
            continue
        text = " ".join(item.split()).strip(" \"'`.,;:")
        if not text:
            out.dropped["empty"] += 1
        elif len(text) > max_chars:
            out.dropped["too_long"] += 1
        elif text.lower() == ANY or canonical(text, synonyms) == ANY:
            out.dropped["any"] += 1
        elif "|" in text or "=" in text:
            out.dropped["invalid"] += 1
        elif (key := canonical(text, synonyms)) in seen:
            out.dropped["duplicate"] += 1
        else:
            seen.add(key)
            out.valid.append(text)
    return out
