"""What a statement sets: a slot and its value, so that a newer statement can replace an older one.

"I live in Porto" and, later, "we moved to Lisbon last month" fill the slot ``home`` with two
values: the newer one is current. "I like jazz" and "I like techno" fill no slot (a person
may like both), so both stay. A slot is one of a few kinds a person changes (home, employer,
diet, seat, budget), or the subject of "my X is Y" ("my manager is Sarah" then "my manager is
now Tom"). Statements that do not match a slot never replace anything.
"""

from __future__ import annotations

import functools
import re

from router.sessions import phrases

_FLAGS = re.IGNORECASE
_WE = r"(?:i|we)(?:'m|'re|'ve| am| are| have)?\s+(?:now\s+|just\s+|recently\s+|finally\s+)*"
_VALUE = r"(?P<value>[\w' -]+?)"
_END = r"(?=\s+(?:last|this|next|since|in \d|a |two|three|for|with|and|but|because|so|now)\b|[.,;!]|$)"
_CASELESS_WE = r"(?:[Ii]|[Ww]e)(?:'ve| have)?\s+(?:[Nn]ow\s+|[Jj]ust\s+|[Rr]ecently\s+)*"
_DIETS = r"vegetarian|vegan|pescatarian|pescetarian|flexitarian|keto|paleo|carnivore|halal|kosher|omnivore"
_SLOTS: list[tuple[str, re.Pattern[str]]] = [
    (slot, re.compile(pattern, _FLAGS))
    for slot, pattern in [
        (
            "home",
            rf"\b{_WE}(?:live|living|based|moved|relocated|settled)\s+(?:back\s+)?(?:in|to)\s+(?!an?\s){_VALUE}"
            rf"{_END}",
        ),
        ("home", rf"\b(?:my|our) (?:home|house|flat|apartment) is (?:now )?in {_VALUE}{_END}"),
        ("employer", rf"\b{_WE}(?:work|working|employed|started)\s+(?:at|for)\s+{_VALUE}{_END}"),
        ("employer", rf"(?-i:\b{_CASELESS_WE}joined\s+(?P<value>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))"),
        ("diet", rf"\b{_WE}(?:a\s+|an\s+|strictly\s+|(?P<no>no longer)\s+)?(?P<value>{_DIETS})\b"),
        # "I'm not vegetarian any more" ends the diet; "I'm not vegan" only says what it is not.
        ("diet", rf"\b{_WE}(?P<no>not)\s+(?:a\s+|an\s+)?(?P<value>{_DIETS})\s+any\s?more\b"),
        ("diet", r"\b(?:i|we) (?P<value>eat (?:meat|fish)(?: again)?)\b"),
        ("seat", r"^(?!.*\b(?:hate|dislike|avoid|never|not|no)\b).*\b(?P<value>aisle|window|middle)\s+seats?\b"),
        ("budget", rf"\b(?:my|our)\s+(?P<what>[\w ]*?)\s*budget(?: for (?P<for>[\w ]+?))? is (?:now )?{_VALUE}{_END}"),
    ]
]
_SUBJECT = re.compile(
    r"^(?:(?:also|and|btw|oh|actually),?\s+)*(?:my|our)\s+(?:new\s+)?(?P<subject>[\w'-]+(?:\s+[\w'-]+){0,2}?)\s+"
    r"(?:is|are)\s+(?:now\s+|called\s+|named\s+)*(?P<value>[^,;.!]+)",
    _FLAGS,
)
# The same said the other way round: "Marcus Lee is my new manager", "I have a new manager, Marcus
# Lee", "I report to Marcus Lee now" (the manager).
_NAMED_FIRST = re.compile(
    r"(?-i:^(?P<value>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))\s+is\s+(?:now\s+)?(?:my|our)\s+(?:new\s+)?"
    r"(?P<subject>[\w'-]+(?:\s+[\w'-]+){0,2}?)(?:\s+now)?[.!]?$"
    r"|^(?:i|we)\s+(?:have|got)\s+a\s+new\s+(?P<subject2>[\w'-]+),?\s+(?-i:(?P<value2>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))"
    r"|^(?:i|we)\s+(?:now\s+)?report\s+to\s+(?-i:(?P<value3>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))",
    _FLAGS,
)

# "My manager is Sarah", "our cluster is prod-eu-1", "my budget is 300 euros": a name, an
# identifier or an amount is the value of the subject; "my manager is on leave" says no value.
_NAMED = re.compile(r"[0-9+£$€]|\S*[\d-]\S*(?:\s|$)")
_AGE = re.compile(r"\b(?:years?|months?)(?:[\s-]+old)?\b|\bold\b", _FLAGS)
# "Dr. Ng": a title's full stop does not end the name.
_TITLE = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr)\.\s", _FLAGS)
# People one may have several of: "my daughter is Emma" and "my daughter is Lily" are both true.
_SEVERAL = frozenset({
    "son", "sons", "daughter", "daughters", "child", "children", "kid", "kids", "brother", "brothers", "sister",
    "sisters", "sibling", "siblings", "cousin", "cousins", "friend", "friends", "colleague", "colleagues",
    "coworker", "coworkers", "grandchild", "grandson", "granddaughter", "niece", "nephew", "uncle", "aunt", "pet",
    "pets", "dog", "dogs", "cat", "cats",
})  # fmt: skip
# Two words for one role: "my boss is Tom" updates "my manager is Priya".
_SAME_ROLE = {"boss": "manager", "line manager": "manager", "doc": "doctor", "gp": "doctor"}


def _names(value: str) -> bool:
    """Whether ``value`` is a name (a capital, in any alphabet), an identifier or an amount."""
    return value[:1].isupper() or bool(_NAMED.match(value))


def _subject(words: str) -> str:
    return f"my {_SAME_ROLE.get(words, words)}"


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", text.lower().replace("'s", "")).split())


def slot_of(text: str) -> tuple[str, str] | None:
    """The slot ``text`` sets and its value (both normalized), or None when it sets none."""
    text = _TITLE.sub(r"\1 ", text)
    for slot, pattern in _SLOTS:
        found = pattern.search(text)
        if found is None:
            continue
        groups = found.groupdict()
        value = _words(groups["value"])
        if slot == "diet" and groups.get("no"):
            value = f"not {value}"
        if slot == "budget":
            what = (_words(groups.get(part) or "") for part in ("what", "for"))
            slot = " ".join(p for p in ("budget", *what) if p)
        return slot, value
    named = _NAMED_FIRST.search(text)
    if named is not None:
        subject = _words(named["subject"] or named["subject2"] or "manager")
        if subject in _SEVERAL:
            return None
        return _subject(subject), _words(named["value"] or named["value2"] or named["value3"])
    said = _SUBJECT.search(text)
    if said is None or not _names(said["value"].strip()) or _AGE.search(said["value"]):
        return None
    subject = _words(said["subject"])
    return None if subject in _SEVERAL else (_subject(subject), _words(said["value"]))


def replaces(older: str, newer: str) -> bool:
    """Whether ``newer`` updates ``older``: both set the same slot, to different values."""
    old, new = slot_of(older), slot_of(newer)
    return old is not None and new is not None and old[0] == new[0] and old[1] != new[1]


# "I no longer live in Porto", "I'm not allergic to peanuts anymore", "I don't like cats": the same
# statement denied. Said after the statement, it takes its place (and the statement after its denial).
_DENIAL = re.compile(r"\b(?:not|no longer|never|any ?more)\b", _FLAGS)
_DO = re.compile(r"\b(?:do|does|did)\b", _FLAGS)


@functools.lru_cache(maxsize=4096)  # a post compares each new memory with every current one
def _stance(text: str) -> tuple[str, bool]:
    """A statement's words without its denial, and whether it denies."""
    plain = text.replace("\u2019", "'")
    for pattern, spelled in phrases.CONTRACTIONS:  # "can't" and "cannot" read "can not", "I'm" "i am"
        plain = pattern.sub(spelled, plain)
    return _words(_DO.sub(" ", _DENIAL.sub(" ", plain))), bool(_DENIAL.search(plain))


def contradicts(older: str, newer: str) -> bool:
    """Whether ``newer`` says ``older`` the other way: the same words, one of them denied."""
    old, new = _stance(older), _stance(newer)
    return bool(old[0]) and old[0] == new[0] and old[1] != new[1]


# Words that say how something was said, not what: "forget what I told you about my diet".
_HOW_SAID = frozenset({
    "i", "we", "my", "our", "me", "us", "am", "are", "is", "was", "were", "be", "been", "have", "has", "had", "said",
    "told", "mentioned", "shared", "you", "about", "that", "what", "all", "everything", "anything", "the", "a", "an",
    "of", "to", "in", "on", "at", "for", "asked", "ask", "it", "this", "something",
})  # fmt: skip
# A slot named by a word of its own: "forget my address" forgets "I live in Porto".
_SLOT_WORDS = {"address": "home", "home": "home", "diet": "diet", "job": "employer", "employer": "employer"}
_ENDINGS = ("ing", "ies", "es", "ed", "ic", "y", "s", "e")


def _root(word: str) -> str:
    # "allergy", "allergies" and "allergic" meet at "allerg"; "live", "lives" and "living" at "liv".
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def _what(text: str) -> list[str]:
    """The words of ``text`` that say what, not how it was said, without its denial."""
    return [w for w in _stance(text)[0].split() if w not in _HOW_SAID]


def _within(few: list[str], many: list[str]) -> bool:
    """Whether every word of ``few`` is in ``many`` ("prefer" in "preference": a root of 5 letters or more)."""
    return all(
        any(a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a))) for b in many) for a in few
    )


def forgets(request: str, memory: str, slot: str | None) -> bool:
    """Whether forgetting ``request`` ("my address", "that I live in Porto") forgets ``memory``, which sets ``slot``.

    It does when the memory holds every word of the request that says what, not how it was said
    ("forget that I'm not vegan" leaves "I'm vegan"), or when the request only names the memory's
    slot ("my address", "my diet"). A request of several ("my address and my diet", "that I live
    in Porto and work at Acme") forgets what each of its parts does, a part that names no more
    than a person aside ("that my wife and I are vegan" forgets no wife).
    """
    parts = _AND.split(request)
    asked = [request] if len(parts) == 1 else [request, *(p for p in parts if _own(p))]
    return any(_forgets(one, memory, slot) for one in asked)


# "and" between two things asked to be forgotten.
_AND = re.compile(r"\s+and\s+|\s*&\s*", _FLAGS)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've)\b", _FLAGS)


def _own(part: str) -> bool:
    """Whether a part of a request says something of its own: a statement, a slot, or two words at least."""
    words = _what(part)
    return (
        bool(_FIRST_PERSON.match(part.strip()))
        or len(words) >= 2
        or (bool(words) and all(w in _SLOT_WORDS for w in words))
    )


def _forgets(request: str, memory: str, slot: str | None) -> bool:
    asked = _what(request)
    # A denial asked to be forgotten is not its statement; a statement or a topic reaches both.
    if not asked or (_stance(request)[1] and not _stance(memory)[1]):
        return False
    if slot is not None and all(_SLOT_WORDS.get(w) == slot for w in asked):
        return True
    return _within([_root(w) for w in asked], [_root(w) for w in _what(memory)])
