"""What becomes a memory: durable statements of external user input.

Memories come from external user input only: never from assistant text, nor from
messages that were themselves loaded from history or added by a context provider, so
the router never feeds its own output back into what it remembers.

``StatementExtractor`` reads each sentence of a user message and keeps the ones that say
something lasting about the user: preferences and dislikes, constraints (allergies, budgets,
accessibility), people and relations, places, identifiers ("our production cluster is
prod-eu-1") and standing instructions ("always use metric units"). Questions, requests
("book a flight", "I'd like a table for two") and one-off plans ("I'm in Rome tonight") are not
memories. A model-based extractor can take its place through the ``MemoryExtractor`` protocol.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from router.common.messages import message_text
from router.sessions import passing, phrases
from router.sessions.expiry import began, expires_at
from router.sessions.history import message_source
from router.sessions.slots import slot_of

MIN_WORDS = 2
MAX_CHARS = 400
# "im vegetarian" is kept as "I'm vegetarian".
_IM = re.compile(r"^Im\b")
# "Remember to book the hotel", "remember about the dentist": a task, unless it is a standing one
# ("remember to always use metric units") or about the user's own ("remember about my nut allergy").
_REMINDER = re.compile(r"to\b(?!\s+(?:me|us)\b)|about\b(?!.*\b(?:my|our)\b)", re.IGNORECASE)
# Someone else's words: a quoted line ("> I just moved to Oslo"), and the sentence after "Anna wrote:".
# Taken for the user's, they stored another person's facts and replaced the user's own.
_QUOTED = re.compile(
    r"^[ \t]*>.*$|(?<!\bi )(?<!\bwe )\b(?:wrote|writes|said|says|texted|emailed|messaged|replied|replies|asked|asks)"
    r"[ \t]*:[^.!?\n]*[.!?]?",
    re.MULTILINE | re.IGNORECASE,
)

# "Forget that I live in Porto", "actually, forget my address", "forget what I told you about peanuts":
# what the user asks to be forgotten, when it is about them ("forget about the hotel" drops a task). It
# ends with its clause: in "Forget that I'm vegan, I'm vegetarian now" the rest is a new statement (a
# comma without a space after it, as in "1,500", ends nothing).
_FORGET = re.compile(
    rf"{phrases.FORGET}\s+(?:about\s+)?"
    r"(?:(?:what|everything|anything|all)\s+(?:i|we)\s+(?:said|told you|mentioned|shared)\s+about\s+"
    r"(?P<topic>(?:[^,;]|,(?=\S))+)"
    r"|(?:(?:that|the fact that|where|what|who|how)\s+)?(?P<said>(?:i|i'm|i've|i'd|we|we're|we've|my|our)\b"
    r"(?:[^,;]|,(?=\S))+))",
    re.IGNORECASE,
)


class MemoryExtractor(Protocol):
    """Turns one user message into the facts worth remembering."""

    def extract(self, text: str) -> list[str]:
        """The memories stated in ``text`` (may be empty)."""


def _clean(raw: str) -> str:
    text = " ".join(raw.replace("\u2019", "'").split()).strip(" -*•>")
    # A quote around the whole text goes; one that closes a quoted word ('not "Regards"') stays.
    while len(text) > 1 and text[0] in "\"'" and text.count(text[0]) % 2 == 1:
        text = text[1:].lstrip()
    while len(text) > 1 and text[-1] in "\"'" and text.count(text[-1]) % 2 == 1:
        text = text[:-1].rstrip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    return text


def _normalised(sentence: str) -> str:
    text = phrases.FILLER.sub("", _clean(sentence)).rstrip(".!;")
    for pattern, replacement in (*phrases.CONTRACTIONS, *phrases.SUBJECTLESS):
        text = pattern.sub(replacement, text)
    return text


def is_memory(sentence: str) -> bool:
    """Whether one sentence states something lasting about the user (a preference, a fact, a rule)."""
    return _states(_normalised(sentence))


def _states(text: str) -> bool:
    if (
        not text
        or text.endswith("?")
        or phrases.QUESTION.search(text)
        or phrases.DATA.search(text)
        or phrases.NEVER.search(text)
    ):
        return False
    if phrases.INSTRUCTION.search(text):
        return True
    if _passing(text):
        return False
    if phrases.IMPERATIVE.search(text):
        # "Book me aisle seats from now on": a standing instruction (not "find one who never ...").
        return bool(phrases.ORDER.search(text)) and not re.search(
            r"\b(?:can|could|would|will)\s+you\b", text, phrases.FLAGS
        )
    reason = phrases.REASON.search(text) and not re.search(r"\byou\b", text, phrases.FLAGS)
    lasting = phrases.STANDING.search(text)
    # "I need wheelchair access" asks nothing of the assistant; a request beside it still does.
    if phrases.ASKING.search(phrases.NEEDS.sub(" ", text)) and not (lasting or reason or phrases.FIRM.search(text)):
        return False
    return bool(phrases.SELF.search(text) and phrases.STATEMENT.search(text))


def _passing(text: str) -> bool:
    """Whether ``text`` speaks of trouble or of a time that is over, not of something lasting."""
    if phrases.STANDING.search(text):
        return False
    if passing.TROUBLE.search(text):
        return True
    if (
        passing.ONE_OFF.search(text)
        and not passing.YEARLY.search(text)
        and not (passing.RECURRING.search(text) and not passing.NEAR.search(text))
        and not began(text)
    ):
        # A situation of a time ("on call this week") is kept until its end; a past one is not.
        end = expires_at(text)
        return end is None or end <= time.time()
    return False


class StatementExtractor:
    """Keeps the durable statements a user makes about themselves, one sentence each.

    A sentence the user asks to be remembered ("please remember that ...") is kept whatever
    its form; otherwise ``is_memory`` decides. Sentences under ``MIN_WORDS`` words or over
    ``MAX_CHARS`` characters (pasted text, not a statement) are not kept.
    """

    def extract(self, text: str) -> list[str]:
        """The durable statements of ``text``, in order, each once."""
        found: list[str] = []
        for raw in phrases.SENTENCE.split(phrases.FICTION_LINE.sub("\n", _QUOTED.sub("\n", text))):
            sentence = _clean(raw)
            if not sentence or phrases.FICTION.match(sentence):
                continue
            kept = phrases.KEEP_PREFIX.sub("", sentence, count=1)
            if len(kept.strip(" ,")) > MAX_CHARS:  # pasted text, which would also cost the patterns dearly
                continue
            asked = (
                kept != sentence
                and not kept.endswith("?")
                and not phrases.NEVER.search(kept)
                # "Remember to book the hotel", "Note to self: ...": a reminder of a task, not a fact.
                and not (_REMINDER.match(kept) and not phrases.STANDING.search(kept))
                and not _passing(_normalised(kept))
            )
            for memory in [kept] if asked or is_memory(sentence) else _clauses(sentence):
                memory = phrases.FILLER.sub("", memory).strip(" ,;")
                if len(memory.split()) < MIN_WORDS or len(memory) > MAX_CHARS:
                    continue
                memory = _IM.sub("I'm", memory[0].upper() + memory[1:])
                if memory not in found:
                    found.append(memory)
        return found


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence that is no memory as a whole which state a preference or an instruction or fill a slot.

    ``phrases.CLAUSE`` says where a clause starts.
    """
    if passing.SCOPED.match(sentence):  # "Just for this trip, I'm vegetarian."
        return []
    if phrases.REASON_FIRST.search(sentence):
        sentence = phrases.SUBORDINATE.sub("", sentence).lstrip()  # "Since I'm allergic to cats, ...": the reason
    elif phrases.SUBORDINATE.search(sentence):
        return []
    clauses = phrases.CLAUSE.split(sentence)
    if len(clauses) < 2:
        return []
    # An instruction counts after the sentence's first clause ("Find me a flight, and don't book me on red-eyes");
    # opening it ("Don't call me, I'm busy right now") it speaks of the moment the rest describes.
    kept = [
        c
        for i, c in enumerate(clauses)
        if is_memory(c)
        and (
            phrases.PREFERS.search(text := _normalised(c))
            or slot_of(text)
            or (i > 0 and phrases.INSTRUCTION.search(text))
        )
    ]
    return [c if c.endswith((".", "!")) else f"{c}." for c in kept]


def without_statements(text: str) -> str:
    """``text`` without its sentences that only state something lasting about the user.

    "Find me a flight to Rome. I prefer aisle seats." gives "Find me a flight to Rome.": what
    the user asked, without who they are. A sentence that also asks for something ("Since I am
    vegetarian, find me a restaurant") stays, and a text that loses nothing comes back as it was.
    """
    pieces = phrases.SENTENCES.split(text)  # sentences, each followed by the separator after it
    sentences = pieces[::2]
    kept = [
        sentence + separator
        for sentence, separator in zip(sentences, [*pieces[1::2], ""], strict=True)
        # A sentence over MAX_CHARS is pasted text, no statement (and would cost the patterns dearly).
        if len(sentence) > MAX_CHARS or not _states_only(_normalised(sentence))
    ]
    return text if len(kept) == len(sentences) else "".join(kept).strip()


def _states_only(text: str) -> bool:
    asks = phrases.IMPERATIVE.search(text) or phrases.ASKING.search(text) or phrases.ACTION.search(text)
    return not asks and _states(text)


def forget_requests(text: str) -> list[tuple[str, str | None]]:
    """``text`` cut after each request to forget something: the text before it, and what it asks to forget.

    "I love jazz. Forget that I love jazz. I like techno." gives ("I love jazz.", "I love jazz") and
    ("I like techno.", None): what is said before a request may be forgotten by it, what follows not.
    """
    parts: list[tuple[str, str | None]] = []
    before: list[str] = []
    for raw in phrases.SENTENCE.split(_QUOTED.sub("\n", text)):
        sentence = _clean(raw)
        asked = _FORGET.match(sentence)
        if asked is None:
            before.append(sentence)
            continue
        # One sentence a line: lines without a full stop ("I live in Porto\nI'm vegan") stay apart.
        parts.append(("\n".join(p for p in before if p), (asked["topic"] or asked["said"]).strip(" .!?")))
        before = [sentence[asked.end() :].lstrip(" ,;")]  # a clause after the request is said as any other
    if not parts:
        return [(text, None)]  # read as it was written
    return [*parts, ("\n".join(p for p in before if p), None)]


def memory_candidates(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts memories may be taken from: external user messages only."""
    texts = (message_text(m) for m in messages if said_by_user(m))
    return [t for t in texts if t]


def said_by_user(message: Mapping[str, Any]) -> bool:
    """Whether the user wrote ``message`` (not loaded from history, nor added by a context provider)."""
    return message.get("role") == "user" and message_source(message) == "external"
