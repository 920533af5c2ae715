"""Prompts for messages, reward and termination, and the cleaning of sampled messages.

Each prompt is a pure function of (spec, instance, transcript, ...), so the expansion and every
later traversal build byte-identical requests and therefore hit the same cache keys.

A message is asked for in one of two forms, by the kind of model (`reads_chat`): a base model
continues the domain's prompt (`message_prompt`), an embedded instruct model answers it as the
speaker (`chat_message_prompt`); each form has its own stop strings (`message_stop`) and
cleaning (`clean_message`, `clean_chat_message`).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gtsteer.binding.spec import ANY, DomainSpec
from gtsteer.llm import LLM, Message
from gtsteer.llm.speech import ends_sentence, whole_sentences

if TYPE_CHECKING:
    from gtsteer.binding.instances import Instance

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
DEFAULT_INSTRUCTION = "{name} chooses {key}: {value}."


class Turn(BaseModel):
    """One public message; `instruction` is the speaker's private action (None: the opening)."""

    speaker: int
    instruction: str | None
    text: str


def fill_template(template: str, fields: dict[str, str]) -> str:
    """Replace `{field}` placeholders; other braces (JSON examples in prompts) stay untouched."""
    return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), m.group(0)), template)


def render_transcript(turns: list[Turn], names: list[str], empty: str = "(no messages yet)") -> str:
    if not turns:
        return empty
    return "\n".join(f"{names[t.speaker]}: {t.text}" for t in turns)


def render_private_info(info: dict[str, str]) -> str:
    return "\n".join(f"{key.replace('_', ' ')}: {value}" for key, value in info.items())


def instruction_parts(spec: DomainSpec, instruction: str, name: str) -> list[str]:
    """One rendered sentence per key that is not "any" (the private text a message must not
    repeat)."""
    parts = []
    for key, value in spec.parse_instruction(instruction).items():
        if value == ANY:
            continue
        template = spec.instruction_templates.get(key, DEFAULT_INSTRUCTION)
        parts.append(fill_template(template, {"name": name, "key": key, "value": value}).strip())
    return parts


#: A stage direction in an instruction template's form needs this many literal words (besides
#: the name and the value) to be recognised whatever name and value it carries; a template with
#: fewer ("{value}.") is matched only with the chosen value, so ordinary words are never removed.
MIN_LITERAL_WORDS = 2
_NAME_SLOT = r"\w[\w'-]*"
_VALUE_SLOT = r"[\w'-]+(?:\s+[\w'-]+){0,3}"


def _words(text: str) -> str:
    """`text`'s words in order, any case, any punctuation or spacing between them ("a" and
    "an" alike: "in a calm tone" is "in an assertive tone" with another value)."""
    words = re.findall(r"[^\W_]+", text)
    return r"[\W_]+".join("an?" if w.lower() in ("a", "an") else re.escape(w) for w in words)


def _template_pattern(template: str, key: str, value: str | None) -> re.Pattern[str]:
    """The template as a pattern: any name, `value` (None: any value), the key and the
    literal words in order, with the surrounding parentheses and final stop."""
    tokens = []
    for piece in re.split(r"(\{\w+\})", template.strip()):
        if piece == "{name}":
            tokens.append(_NAME_SLOT)
        elif piece == "{value}":
            tokens.append(_VALUE_SLOT if value is None else _words(value))
        else:
            tokens.append(_words(key if piece == "{key}" else piece))
    core = r"[\W_]+".join(tok for tok in tokens if tok)
    return re.compile(r"\(?\s*\b" + core + r"\b[.!?]?\s*\)?", re.IGNORECASE)


def echo_patterns(spec: DomainSpec, instruction: str) -> list[re.Pattern[str]]:
    """Stage directions a message must not carry: each key's instruction sentence in its
    template's form, under any name (a model may copy "(Bob writes in a calm tone.)" with the
    wrong name) and, where the template has enough literal words, with any value (an invented
    "(Bob writes in a stern tone.)" is no dialogue either)."""
    chosen = spec.parse_instruction(instruction)
    patterns = []
    for key in spec.actions:
        template = spec.instruction_templates.get(key, DEFAULT_INSTRUCTION)
        literal = _PLACEHOLDER.sub(" ", template.replace("{key}", key))
        if len(re.findall(r"[^\W_]+", literal)) >= MIN_LITERAL_WORDS:
            patterns.append(_template_pattern(template, key, None))
        elif chosen.get(key, ANY) != ANY:
            patterns.append(_template_pattern(template, key, chosen[key]))
    return patterns


def contains_instruction(text: str, patterns: list[re.Pattern[str]]) -> bool:
    """Whether `text` carries a stage direction matched by `echo_patterns`."""
    return any(p.search(text) for p in patterns)


def strip_instruction_echo(text: str, patterns: list[re.Pattern[str]]) -> tuple[str, bool]:
    """`text` without instruction-shaped stage directions, and whether there were any.

    The instruction is a private action: a message that repeats it would show it to everyone,
    and the solved game would no longer be the one described."""
    echoed = False
    for pattern in patterns:
        text, count = pattern.subn(" ", text)
        echoed = echoed or count > 0
    if not echoed:
        return text, False
    return " ".join(text.split()).strip(" ,;:") or "...", True


def message_prompt(
    spec: DomainSpec, instance: Instance, turns: list[Turn], speaker: int, instruction: str
) -> str:
    names = instance.names
    name = names[speaker]
    line = " ".join(instruction_parts(spec, instruction, name))  # "any": no line at all
    fields = {
        "scenario": instance.scenario,
        "name": name,
        "other": ", ".join(instance.other_names(speaker)),
        "players": join_names(instance.names),
        "private_info": render_private_info(instance.private_info[speaker]),
        # Both end with a newline when present, so "{transcript}{instruction}{name}:" never
        # leaves a blank line (which a base model reads as the end of the conversation).
        "transcript": "".join(f"{names[t.speaker]}: {t.text}\n" for t in turns),
        "instruction": f"{line}\n" if line else "",
    }
    return fill_template(spec.message_prompt, fields).rstrip()


def reads_chat(llm: LLM) -> bool:
    """Whether `llm` is an embedded instruct model, prompted through its chat template (its
    backend's `chat`), rather than a base model reading text to continue. API models keep the
    plain prompt: not every provider continues a started assistant turn."""
    return bool(getattr(llm.backend, "chat", False))


def chat_message_prompt(
    spec: DomainSpec, instance: Instance, turns: list[Turn], speaker: int, instruction: str
) -> list[Message]:
    """The message prompt for an instruct model: the domain's prompt as the user's turn, and
    the assistant's turn already opened with the speaker's `Name:` cue, so the answer is the
    speaker's own line, as a base model continues the same cue. Asked to "write Alice's next
    message" without it, small instruct models narrate ("Alice proposes Monday.") or answer as
    an assistant instead of speaking as Alice."""
    name = instance.names[speaker]
    return [
        Message(role="user", content=message_prompt(spec, instance, turns, speaker, instruction)),
        Message(role="assistant", content=f"{name}:"),
    ]


def message_request_prompt(
    spec: DomainSpec, instance: Instance, turns: list[Turn], speaker: int, instruction: str,
    chat: bool,
) -> str | list[Message]:
    if chat:
        return chat_message_prompt(spec, instance, turns, speaker, instruction)
    return message_prompt(spec, instance, turns, speaker, instruction)


def message_stop(
    spec: DomainSpec, instance: Instance, speaker: int | None = None, chat: bool = False
) -> list[str]:
    """Base models: stop at a blank line or when the model starts writing a speaker's turn.
    Chat models end their turn themselves, and may open it with a blank line or their own
    `Name:` tag, so they stop only at another speaker's turn."""
    if chat:
        others = [n for i, n in enumerate(instance.names) if i != speaker]
        stops = [*(f"\n{n}:" for n in others), *spec.generation.stop]
    else:
        stops = ["\n\n", *(f"\n{n}:" for n in instance.names), *spec.generation.stop]
    return list(dict.fromkeys(stops))


_QUOTES = {'"': '"', "\u201c": "\u201d"}


def _name_tag(names: list[str]) -> re.Pattern[str]:
    """A leading speaker tag as chat models write it: `Alice:`, `**Alice:**`, `Alice (to Bob):`."""
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"^[*_\s]*(?:{alternatives})(?:\s*\([^)\n]*\))?[*_]*\s*:[*_]*\s*")


def clean_message(text: str, instance: Instance, chat: bool = False, cut: bool = False) -> str:
    """Trim a sample to the speaker's own words (backends that ignore stop strings), without a
    leading "<Name>:" tag. `chat`: an instruct model's answer (`clean_chat_message`); `cut`:
    the answer ran into the token limit."""
    if chat:
        return clean_chat_message(text, instance, cut)
    text = text.strip()
    for name in instance.names:
        if text.startswith(f"{name}:"):
            text = text[len(name) + 1 :]
            break
    text = text.strip().split("\n\n")[0]
    for name in instance.names:
        text = text.split(f"\n{name}:")[0]
    return " ".join(text.split()) or "..."


def clean_chat_message(text: str, instance: Instance, cut: bool = False) -> str:
    """A chat model's answer as one message: leading blank lines, a repeated `Name:` tag (once or
    more) and a lead-in line ("Here is Alice's message:") dropped, cut at the first blank line
    after the content (what follows is commentary) or at a line opening another turn, lines
    joined, a quoted message unquoted; when the answer was `cut` at the token limit, its
    unfinished last sentence is dropped (where a whole one precedes it)."""
    message = _chat_kept(text, instance)[0]
    return (whole_sentences(message) if cut else message) or "..."


#: The rule `message_end` names to the response cache (a new name whenever the chat cleaner
#: changes what it keeps, so answers ended by the old rule are not reused).
CHAT_MESSAGE_END = "chat-message-kept-1"


def message_end(instance: Instance, chat: bool) -> dict[str, Any]:
    """`LLM.generate`'s early end for a message: a chat model's answer ends once the message
    `clean_chat_message` keeps from it is final (`chat_message_decided`), the same message a
    full answer gives. A base model's answer already ends at `message_stop`'s blank line."""
    if not chat:
        return {}
    return {"end_rule": CHAT_MESSAGE_END,
            "decided": functools.partial(chat_message_decided, instance=instance)}


def chat_message_decided(text: str, instance: Instance) -> bool:
    """Whether `clean_chat_message` keeps the same message from every continuation of `text`,
    cut at the token limit or not: the paragraphs it keeps are closed by a blank line, and the
    message ends a sentence (so a cut, which drops an unfinished last sentence, changes
    nothing). Generation can stop there: the rest would be discarded (issue 45)."""
    message, closed = _chat_kept(text, instance)
    return closed and bool(message) and ends_sentence(message)


def _chat_kept(text: str, instance: Instance) -> tuple[str, bool]:
    """`clean_chat_message`'s message before the cut rule, and whether a blank line follows
    its last kept paragraph in `text` (no continuation of `text` can then change it)."""
    tag = _name_tag(instance.names)
    names = "|".join(re.escape(n) for n in instance.names)
    lead_in = re.compile(rf"\b(?:message|reply|response|{names})\b", re.IGNORECASE)
    text = text.lstrip()
    while (opening := tag.match(text)) is not None:  # the tag may come twice ("Iris:\nIris:")
        text = text[opening.end():]
    # Each paragraph with whether a blank line follows it in `text` (trailing blank kept).
    parts = re.split(r"\n\s*\n", text)
    paragraphs = [(p.strip(), i < len(parts) - 1) for i, p in enumerate(parts) if p.strip()]
    # Lead-in paragraphs are dropped; a last one is kept (it may be the message itself), so
    # while it is the only one, the next paragraph can still change what is kept.
    lead_in_pending = False
    while paragraphs and paragraphs[0][0].endswith(":") and lead_in.search(paragraphs[0][0]):
        if len(paragraphs) == 1:
            lead_in_pending = True
            break
        paragraphs = paragraphs[1:]
    kept: list[str] = []
    closed = False
    for paragraph, followed in paragraphs:
        lines = paragraph.splitlines()
        for i, line in enumerate(lines):
            if (i > 0 or kept) and tag.match(line):
                lines = lines[:i]  # another turn starts here
                break
        kept += lines
        if len(lines) < len(paragraph.splitlines()) or not kept or not kept[-1].endswith(":"):
            closed = followed and not lead_in_pending
            break  # a paragraph ending in ":" introduces the next one
    return _unquote(" ".join(" ".join(kept).split())), closed


def _unquote(text: str) -> str:
    """The quoted part of `"Hi Bob," Alice says.`, or of a message wrapped in quotes."""
    close = _QUOTES.get(text[:1])
    if close is None:
        return text
    end = text.find(close, 1)
    return (text[1:end] if end != -1 else text[1:]).strip()


def reward_prompt(
    spec: DomainSpec,
    instance: Instance,
    turns: list[Turn],
    template: str | None = None,
    transcript: str | None = None,
) -> str:
    """`template` (default: the spec's reward prompt) on this dialogue; `transcript` replaces
    the rendered turns (a content-free "N/A" for calibration)."""
    everyone = "\n".join(
        f"{instance.names[p]}'s {key.replace('_', ' ')}: {value}"
        for p in range(len(instance.names))
        for key, value in instance.private_info[p].items()
    )
    fields = {**public_fields(instance, turns), "private_info_all": everyone}
    if transcript is not None:
        fields["transcript"] = transcript
    return fill_template(
        spec.payoff.prompt if template is None else template, fields
    ).rstrip() + "\n"


def public_fields(instance: Instance, turns: list[Turn]) -> dict[str, str]:
    """The placeholders every prompt about the public dialogue fills."""
    return {"scenario": instance.scenario, "players": join_names(instance.names),
            "transcript": render_transcript(turns, instance.names)}


def termination_prompt(spec: DomainSpec, instance: Instance, turns: list[Turn]) -> str:
    assert spec.termination_prompt is not None
    return fill_template(spec.termination_prompt, public_fields(instance, turns)).rstrip()


def join_names(names: list[str]) -> str:
    """"Alice", "Alice and Bob", "Alice, Bob and Carol"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
