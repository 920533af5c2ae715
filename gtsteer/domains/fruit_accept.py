"""Whether a message says yes or no, read in code: the words of the offer domain's exact
acceptance reading (`fruit_offer.read_agreement`).

The reward model is also the writer, and the default writer (SmolLM2-135M) asked "did both
agree?" as a calibrated yes/no answered no to every one of 20 plain agreements ("Deal, I
accept.") of `gtsteer eval reward trade_fruit_offer --cases 20`. Saying yes to an
offer is a closed vocabulary, so it is read here instead, clause by clause (`clauses`): the
word lists below are the vocabulary, `says_yes` and `says_no` the rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from gtsteer.domains.fruit_trade_cases import plural

#: Words and phrases that say yes to what was offered.
CUES = (
    r"deal", r"it's\s+a\s+deal", r"you've\s+got\s+a\s+deal", r"accept(?:s|ed|ing)?",
    r"agree(?:s|d)?", r"yes", r"yeah", r"yep", r"yup", r"sure", r"ok(?:ay)?", r"alright",
    r"all\s+right", r"sounds\s+(?:good|great|fair|fine|perfect|like\s+a\s+(?:plan|deal))",
    r"(?:i'll|i\s+will|i'd|i\s+would)\s+take\s+(?:it|that|you\s+up\s+on\s+(?:it|that))",
    r"happy\s+to", r"glad\s+to", r"gladly", r"with\s+pleasure", r"works?\s+for\s+(?:me|us)",
    r"that\s+works", r"fine\s+(?:by|with)\s+me", r"of\s+course", r"absolutely",
    r"let's\s+do\s+(?:it|that|this)", r"i'm\s+in", r"count\s+me\s+in", r"fair\s+enough",
    r"why\s+not", r"definitely", r"certainly", r"happy\s+with\s+(?:that|this|it)",
    r"let's\s+(?:trade|swap|make\s+(?:the|that|this|a)\s+(?:trade|swap|deal))",
)
#: Words that say yes only as a clause of their own ("Great!", "Perfect, Alice."), not in
#: "Great to see you".
ALONE = ("fine", "great", "perfect", "done", "excellent", "wonderful", "cool", "awesome")
#: Words that, beside a fruit, change the trade a yes would take: a condition ("Sure, if you
#: add a banana") or an addition ("Deal, and I want 2 kiwis too").
CHANGES = (r"if", r"unless", r"as\s+long\s+as", r"provided", r"on\s+condition", r"too",
           r"also", r"extra", r"more", r"another", r"as\s+well", r"plus", r"in\s+addition",
           r"throw\s+in", r"add")
#: A word that refuses, in the clause of a cue ("not a deal", "I can't accept", "not sure").
REFUSALS = (r"no", r"not", r"never", r"nope", r"nah", r"cannot", r"\w+n't")
#: A refusal anywhere in the message, whatever else it says.
FIRM_REFUSALS = (
    r"reject(?:s|ed|ing)?", r"declin(?:e|es|ed|ing)", r"refus(?:e|es|ed|ing)",
    r"rather\s+(?:keep|not|hold)", r"(?:i'll|i\s+will|i'd|i\s+would|i\s+must|i\s+have\s+to)"
    r"\s+(?:have\s+to\s+)?pass", r"pass\s+on", r"no\s+deal", r"not\s+a\s+deal",
    r"no,?\s+thanks?", r"no,?\s+thank\s+you", r"not\s+interested",
)
#: Set phrases that hold a refusal word without refusing.
NOT_REFUSALS = (
    r"no\s+problem", r"not\s+a\s+problem", r"no\s+worries", r"no\s+doubt", r"why\s+not",
    r"don't\s+worry", r"don't\s+mind", r"can't\s+wait", r"couldn't\s+agree\s+more",
    r"no\s+hesitation",
)
#: A clause that opens this way refuses ("No.", "Nope, ...").
OPENING_REFUSAL = re.compile(r"^(?:no|nope|nah|never)\b")
#: A clause that opens this way and refuses takes back a yes before it.
TAKE_BACK = re.compile(r"^(?:but|however|though|although|except|actually|wait|on\s+second"
                       r"\s+thought|no|nope|nah)\b")

_CUE = re.compile(r"\b(?:" + "|".join(CUES) + r")\b|^(?:" + "|".join(ALONE) + r")$")
_CHANGES = re.compile(r"\b(?:" + "|".join(CHANGES) + r")\b")
_REFUSAL = re.compile(r"\b(?:" + "|".join(REFUSALS) + r")\b")
_FIRM = re.compile(r"\b(?:" + "|".join(FIRM_REFUSALS) + r")\b")
_NEUTRAL = re.compile(r"\b(?:" + "|".join(NOT_REFUSALS) + r")\b")
#: Where a clause ends: punctuation (kept, to tell a question) or before a contrast word.
_BREAK = re.compile(r"([.!?;:,]+|\s+[-\u2013\u2014]+\s+|\u2014)|(?=\b(?:but|however|though|"
                    r"although|except)\b)")


#: A clause that opens as a question.
_ASKING = re.compile(r"^(?:are|is|am|was|were|do|does|did|would|will|can|could|should|shall|"
                     r"may|might|what|how|why|who|which|when|where|have|has|had|so)\b")


@dataclass(frozen=True)
class Clause:
    """A piece of a message, lower-cased; `question`: its sentence ends with "?"."""

    text: str
    question: bool


def normalise(text: str) -> str:
    """Lower case, straight apostrophes, single spaces."""
    return " ".join(text.lower().replace("\u2019", "'").split())


def clauses(text: str) -> list[Clause]:
    """`text` cut into clauses, each knowing whether its sentence is a question."""
    pieces: list[tuple[str, str]] = []  # (clause, the punctuation that ended it)
    start = 0
    for m in _BREAK.finditer(text):
        pieces.append((text[start:m.start()].strip(), m.group(1) or ""))
        start = m.end()
    pieces.append((text[start:].strip(), "."))
    out: list[Clause] = []
    sentence: list[str] = []
    for piece, end in pieces:
        sentence.append(piece)
        if not any(c in end for c in ".!?"):
            continue
        # In a sentence ending in "?", its last clause asks ("Deal?") and so does one that
        # opens as a question ("Are you sure, Bob?"); "Okay, can you hand it over?" says okay,
        # and "Sure, why not?" asks nothing.
        asks = "?" in end and not re.search(r"\bwhy\s+not$", piece)
        last = len(sentence) - 1
        out.extend(Clause(s, asks and (i == last or bool(_ASKING.match(s))))
                   for i, s in enumerate(sentence) if s)
        sentence = []
    return out


def _refuses(clause: str) -> bool:
    return bool(_REFUSAL.search(_NEUTRAL.sub(" ", clause)))


def firm_refusal(text: str) -> bool:
    """A refusal that no cue elsewhere in the message outweighs ("No deal.", "I'll pass")."""
    return bool(_FIRM.search(_NEUTRAL.sub(" ", normalise(text))))


def says_no(text: str) -> bool:
    """The message refuses: a firm refusal anywhere, or a clause that opens with "no"."""
    if firm_refusal(text):
        return True
    return any(OPENING_REFUSAL.match(_NEUTRAL.sub(" ", c.text).strip())
               for c in clauses(normalise(text)))


@lru_cache(maxsize=16)
def _fruit_words(fruits: tuple[str, ...]) -> re.Pattern[str] | None:
    forms = {form for f in fruits for form in (f, plural(f, 2), f + "s")}
    if not forms:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(forms, key=len,
                                                                 reverse=True))) + r")\b")


def says_yes(text: str, fruits: Sequence[str] = ()) -> bool:
    """The message has an acceptance cue in a clause without a refusal, outside a question,
    not taken back by a later "but ..." clause that refuses, nor by a condition or an
    addition that names one of `fruits` after it ("Sure, if you add a banana"); and no firm
    refusal anywhere."""
    if firm_refusal(text):
        return False
    named = _fruit_words(tuple(fruits))
    parts = clauses(normalise(text))
    for i, clause in enumerate(parts):
        cue = _CUE.search(clause.text)
        if clause.question or cue is None or _refuses(clause.text):
            continue
        later = parts[i + 1:]
        if any(TAKE_BACK.match(c.text) and _refuses(c.text) for c in later):
            continue
        after = [clause.text[cue.end():], *(c.text for c in later)]
        if named is not None and any(_CHANGES.search(t) and named.search(t) for t in after):
            continue
        return True
    return False
