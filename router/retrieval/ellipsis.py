"""Elliptical turns: a follow-up that only changes the values of the request before it.

"And AF 456?" after "What's the status of flight LH 1234?", "What about Tuesday?" after a
flight search, "Do the same for the payments service", "Now do that for Mary": such a turn
names no action of its own; it asks again what its context asked, of other values. Routing
gives it the request before it as its context, and ranks a vague one by that context alone
(``router.retrieval.context``). A turn that leans on its context for *another* action ("Is it
on time?" after a booking, "And book it", "How about you cancel it?") names that action and is
not elliptical: it keeps its own ranking, nudged by the context.

English: the router tells other languages apart before asking (``Catalogs.language``).
"""

from __future__ import annotations

import re

from router.common.english import ACTION_VERBS

# Words that open a turn without changing what it asks ("Thanks! And now, what about ...").
_LEAD = r"(?:(?:and|but|ok|okay|now|then|so|oh|hmm|well|thanks|thank you|great|perfect|cool|yes|please)\b[\s,.!]*)*"
_DAYS = r"today|tonight|tomorrow|yesterday|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# What follows "and" in a turn that only changes values: a preposition or a determiner.
_FOLLOWED = r"for|in|on|with|at|from|to|the|this|that|these|those|my|your|our"
_OPENING = re.compile(
    rf"^\W*{_LEAD}(?:"
    # "What about size L?", "How about Monday?", "Do the same for Paris", "Same again", "Likewise for Maria".
    r"(?:what|how)\s+about|(?:(?:do|repeat)\s+)?(?:(?:the|that)\s+)?same(?![-\w])|likewise|ditto"
    r"|again(?=\s+(?:for|with|but|on|in)\b|\W*$)"
    # "Now do that for Mary as well", "Do it again", "Repeat that for the staging cluster"; not "Do that math",
    # nor "Yes, do it", which agrees to what the assistant proposed, not to the user's request before it.
    r"|(?:do|repeat)\s+(?:that|this|it)(?=\s+(?:again|for|with|too)\b)"
    # "And AF 456?", "and i-0a12bc35", "And tomorrow?", "And for the payments service?", "And the one from last
    # week?", "And Madrid?" (a name, not "And I'd like ...").
    rf"|and\s+(?:[a-z]{{0,4}}[- ]?\d|(?:{_DAYS})\b|(?:{_FOLLOWED})\b|(?=(?-i:(?!I\b|I['\u2019]|Im\b)[A-Z]\w)))"
    # "Also for the EU region", "Now for Lisbon" (not "Now that ...").
    r"|(?:also|now|then)[\s,]+(?:for|with|on|in)\b"
    r")",
    re.IGNORECASE,
)
# An action of its own after the opening: any form of a verb ("booking", "cancelled"), or "I want ...".
_ACTION = re.compile(
    rf"\b(?:(?:{ACTION_VERBS})(?:\w?(?:s|es|ed|d|ing))?|(?:i|we)\s+(?:want|need|would like|'d like))\b",
    re.IGNORECASE,
)


def elliptical(text: str) -> bool:
    """Whether a turn only changes the values of the request before it ("And AF 456?", "What about Tuesday?").

    It opens with what continues a request, and names no action after that ("And this time
    book it" names one).
    """
    opening = _OPENING.match(text)
    return opening is not None and _ACTION.search(text, opening.end()) is None
