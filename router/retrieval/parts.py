"""The parts of a turn: the things it asks, each routed on its own.

Agents are asked for tasks ("Get the pharmacodynamics of Aspirin. Then get the properties of
Aspirin tablets. Lastly, validate batch BA123."): one vector for the whole text leans towards
its strongest step, and the others' tools fall out of the top few. So a turn is split into
its sentences, its "then" / "also" / "after that" / "next" / "lastly" / "finally" clauses and
its enumerations (numbered or bulleted lines, "first ..., second ..."), and routing gives each
part its own ranking (``router.retrieval.context``). Learning uses the same split to pair each
called function with the part of its request that asked for it (``router.retrieval.learning``).

A fragment too short to route on ("Thanks.", "Then") joins its neighbour. Several requests in
one sentence with no connective ("book a flight and email the invoice") stay one part: "and"
joins objects as often as requests, and the whole turn's own ranking still sees both.
"""

from __future__ import annotations

import re

# Fewer words than this say too little to route on: they join a neighbour.
MIN_WORDS = 3

_ABBREVIATIONS = r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
_SENTENCE = _ABBREVIATIONS + r"(?<=[.?!;])\s+(?=[A-Z\"'(\d])"
# Inside a sentence a connective starts a new request only after a comma or "and" ("flights next week" stays whole).
_CONNECTIVE = (
    r"then|also|after that|afterwards|additionally|finally|next|lastly|furthermore|moreover|"
    r"first|second|third|fourth|fifth|secondly|thirdly"
)
_INNER = r"(?i:(?:,|;)\s*(?:and\s+)?(?=(?:" + _CONNECTIVE + r")\b)|\s+and\s+(?=(?:then|also|finally|lastly)\b))"
_SPLIT = re.compile(_SENTENCE + r"|\s*\n+\s*|" + _INNER)
_MARKER = re.compile(r"^(?:\(?\d{1,2}[.):]|[-*\u2022]|\(?[a-z][.)])\s+", re.IGNORECASE)
_LEADING = re.compile(r"^(?:and\s+)?(?:" + _CONNECTIVE + r")\b\s*(?:of all\b)?\s*[,:]?\s*", re.IGNORECASE)
_QUOTES = " \t\"'"
_WORD = re.compile(r"\w")


def parts(text: str) -> list[str]:
    """The things ``text`` asks, in order; ``[text]`` itself when it asks one thing.

    Each part is stripped of list markers and of the connective that introduced it
    ("Then, get ..." gives "get ..."); a part under ``MIN_WORDS`` words joins the one before
    it (the first one joins the next).
    """
    pieces = [_clean(piece) for piece in _SPLIT.split(text) if piece and piece.strip(_QUOTES)]
    merged: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        carry = ""
        if len(piece.split()) >= MIN_WORDS:
            merged.append(piece)
        elif merged:
            merged[-1] = f"{merged[-1]} {piece}".strip()
        else:
            carry = piece
    if carry:
        merged.append(carry)
    return merged if len(merged) > 1 else [text]


def _clean(piece: str) -> str:
    piece = _MARKER.sub("", piece.strip(_QUOTES))
    stripped = _LEADING.sub("", piece)
    # "Then." or "Next, " alone: the connective was all there was.
    return stripped if _WORD.search(stripped) else piece
