"""The parts of a turn: the things it asks, each routed on its own.

Agents are asked for tasks ("Get the pharmacodynamics of Aspirin. Then get the properties of
Aspirin tablets. Lastly, validate batch BA123."): one vector for the whole text leans towards
its strongest step, and the others' tools fall out of the top few. So a turn is split into
its sentences, its "then" / "also" / "after that" / "next" / "lastly" / "finally" clauses and
its enumerations (numbered or bulleted lines, "first ..., second ..."), and routing gives each
part its own ranking (``router.retrieval.context``). Learning uses the same split to pair each
called function with the part of its request that asked for it (``router.retrieval.learning``).

The split reads the languages of the multilingual space's set as well as English: their
sentence ends (``。`` in Chinese and Japanese, ``¿`` opening a Spanish question) and the words
that start their next step ("depois", "luego", "puis", "poi", "dann", "然后", "それから").

A fragment too short to route on ("Thanks.", "Then", "谢谢。") joins its neighbour. Several
requests in one sentence with no connective ("book a flight and email the invoice") stay one
part: "and" joins objects as often as requests, and the whole turn's own ranking still sees both.
"""

from __future__ import annotations

import re

# Fewer words than this say too little to route on: they join a neighbour.
MIN_WORDS = 3

# Words that start a request's next step, after a comma or "and" inside a sentence.
_CONNECTIVE_EN = (
    r"then|also|after that|afterwards|additionally|finally|next|lastly|furthermore|moreover|"
    r"first|second|third|fourth|fifth|secondly|thirdly"
)
# In the other languages of the multilingual set, only sequencing words: "aussi", "anche" and
# "auch" also open "even if" clauses, and "dopo", "après", "depois de", "después de" say "after" a thing.
_CONNECTIVE_OTHER = (
    r"depois disso|depois(?!\s+d[aeo]s?\b)|em seguida|a seguir|também|por fim|finalmente|além disso|"  # Portuguese
    r"después de eso|después(?!\s+del?\b)|luego|a continuación|también|por último|además|"  # Spanish
    r"puis|ensuite|enfin|finalement|de plus|"  # French
    r"poi|in seguito|successivamente|infine|inoltre|"  # Italian
    r"dann|danach|anschließend|außerdem|zuletzt|schließlich|zum schluss|abschließend"  # German
)
_CONNECTIVE = _CONNECTIVE_EN + "|" + _CONNECTIVE_OTHER
# Those that start a step right after the language's "and" ("and then", "e depois", "und dann"), with no comma.
_AFTER_AND = r"then|also|finally|lastly|" + _CONNECTIVE_OTHER
_AND = r"and|e|y|et|und"
# Chinese and Japanese write no spaces, so these follow a comma or start a sentence directly.
_CJK_CONNECTIVE = r"然后|接着|之后|随后|最后|另外|此外|それから|次に|その後|そのあと|最後に|そして|さらに"

_ABBREVIATIONS = r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
_SENTENCE = _ABBREVIATIONS + r"(?<=[.?!;])\s+(?=[A-ZÀ-ÖØ-Þ¿¡\"'(\d])|(?<=[。！？；])\s*"
# Inside a sentence a connective starts a new request only after a comma or "and" ("flights next week" stays whole).
_INNER = (
    r"(?i:(?:,|;)\s*(?:(?:" + _AND + r")\s+)?(?=(?:" + _CONNECTIVE + r")\b)"
    r"|\s+(?:" + _AND + r")\s*,?\s+(?=(?:" + _AFTER_AND + r")\b))"
    r"|[，、,]\s*(?=" + _CJK_CONNECTIVE + r")"
)
_SPLIT = re.compile(_SENTENCE + r"|\s*\n+\s*|" + _INNER)
_MARKER = re.compile(r"^(?:\(?\d{1,2}[.):]|[-*\u2022]|\(?[a-z][.)])\s+", re.IGNORECASE)
_LEADING = re.compile(
    r"^(?:(?:(?:and\s+)?(?:" + _CONNECTIVE + r")\b\s*(?:of all\b)?)|(?:" + _CJK_CONNECTIVE + r"))\s*[,:，、：]?\s*",
    re.IGNORECASE,
)
_QUOTES = " \t\"'"
_WORD = re.compile(r"\w")
# Chinese and Japanese characters (ideographs and kana), written without spaces between words.
_CJK_CHARACTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARACTERS}]")
_CJK_WORD_LENGTH = 1.5  # characters per word in Chinese running text
# A run of letters or digits of another script among them ("web-2を停止して": "web", "2").
_OTHER_RUN = re.compile(f"[^\\W{_CJK_CHARACTERS}]+")


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
        piece = _joined(carry, piece) if carry else piece
        carry = ""
        if _words(piece) >= MIN_WORDS:
            merged.append(piece)
        elif merged:
            merged[-1] = _joined(merged[-1], piece)
        else:
            carry = piece
    if carry:
        merged.append(carry)
    return merged if len(merged) > 1 else [text]


def _words(piece: str) -> float:
    """How many words ``piece`` holds: its spaced words, with Chinese or Japanese counted by characters."""
    count = 0.0
    for word in piece.split():
        cjk = len(_CJK.findall(word))
        count += 1 if not cjk else cjk / _CJK_WORD_LENGTH + len(_OTHER_RUN.findall(word))
    return count


def _joined(first: str, second: str) -> str:
    # Chinese and Japanese join without a space.
    gap = "" if _CJK.search(first[-1:]) or _CJK.search(second[:1]) else " "
    return f"{first}{gap}{second}".strip()


def _clean(piece: str) -> str:
    piece = _MARKER.sub("", piece.strip(_QUOTES))
    stripped = _LEADING.sub("", piece)
    # "Then." or "Next, " alone: the connective was all there was.
    return stripped if _WORD.search(stripped) else piece
