"""Elliptical turns: a follow-up that only changes the values of the request before it.

"And AF 456?" after "What's the status of flight LH 1234?", "What about Tuesday?" after a
flight search, "Do the same for the payments service": such a turn names no action of its own;
it asks again what its context asked, of other values. Routing ranks a vague one by its recent
context alone (``router.retrieval.context``). A turn that leans on its context for *another*
action ("Is it on time?" after a booking, "Cancel it") has a verb of its own and is not
elliptical: it keeps its own ranking, nudged by the context.

English only: a turn in another language is never elliptical here.
"""

from __future__ import annotations

import re

# Words that open a turn without changing what it asks ("and now, what about ...").
_LEAD = r"^\W*(?:(?:and|but|ok|okay|now|then|so|oh|hmm|well)\b[\s,]*)*"
_ELLIPTICAL = re.compile(
    # "What about size L?", "How about Monday?", "Do the same for Paris", "Same again", "Likewise for Maria".
    rf"(?i:{_LEAD}(?:(?:what|how)\s+about|(?:(?:do|repeat)\s+)?(?:(?:the|that)\s+)?same|again|likewise|ditto)\b)"
    # "And AF 456?", "And for the payments service?", "And the one from last week?" (not "And book it").
    r"|^\W*(?i:and)\s+(?:(?i:for|in|on|with|at|from|to|by|the|a|an|this|that|these|those|my|your|our)\b|[A-Z0-9])"
    # "Also for the EU region", "Now for Lisbon" (not "Now that ...").
    r"|^\W*(?i:also|now|then)[\s,]+(?i:for|with|on|in)\b"
)


def elliptical(text: str) -> bool:
    """Whether a turn only changes the values of the request before it ("And AF 456?", "What about Tuesday?")."""
    return bool(_ELLIPTICAL.search(text))
