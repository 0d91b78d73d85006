"""The parts of a turn: the things it asks, each routed on its own.

Agents are asked for tasks ("Get the pharmacodynamics of Aspirin. Then get the properties of
Aspirin tablets. Lastly, validate batch BA123."): one vector for the whole text leans towards
its strongest step, and the others' tools fall out of the top few. So a turn is split into
its sentences, its "then" / "also" / "after that" / "next" / "lastly" / "finally" clauses and
its enumerations (numbered or bulleted lines, "first ..., second ..."), and routing gives each
part its own ranking (``router.retrieval.context``). Learning uses the same split, a little
finer, to pair each called function with the part of its request that asked for it
(``router.retrieval.learning``).

When a model may read other languages (``Catalogs.language``), a turn in Portuguese, Spanish,
French, Italian, German, Chinese or Japanese (as ``router.embedding.language`` tells it) is also
split at its own language's sentence ends (``。`` even with no space after it, a Spanish question
opening with ``¿``) and next-step words ("depois", "luego", "puis", "poi", "dann", "然后",
"それから"); an English turn, or one in another language, is split by the English rules alone.

A quotation in double quotes or 「」 ("reply \"Thanks. See you Monday.\"", a pasted review) is
data the request acts on: it is never cut. A fragment too short to route on ("Thanks.", "Then",
"谢谢。") joins its neighbour. Several requests in one sentence with no connective ("book a flight
and email the invoice") stay one part: "and" joins objects as often as requests, and the whole
turn's own ranking still sees both.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

from router.common.english import ABBREVIATIONS, ACTION_VERBS
from router.embedding.language import ENGLISH

# Fewer words than this say too little to route on: they join a neighbour.
MIN_WORDS = 3

# Titles and abbreviations of the other languages a capital may follow ("al Sr. Álvarez", "z. B. Das").
_OTHER_ABBREVIATIONS = "".join(
    rf"(?<!\b{re.escape(word)})"
    for word in (
        *("Sr.", "Sra.", "Srta.", "Dra.", "Ud.", "Uds.", "M.", "Mme.", "Mlle.", "Nr.", "Hr.", "Fr.", "Dott."),
        *("Sig.", "ca.", "z.", "B.", "Nº."),
    )
)
# Inside a sentence a connective starts a new request only after a comma or "and" ("flights next week" stays whole).
_CONNECTIVE_WORDS = (
    *("then", "also", "after that", "afterwards", "additionally", "finally", "lastly", "furthermore"),
    *("moreover", "secondly", "thirdly"),
)
# An ordinal starts a request only before a comma, a colon or an action ("First, book ...", "next email Dana"):
# "first class flights", "next to the Colosseum" and "next Friday" name no step.
_ORDINALS = rf"(?:next|first|second|third|fourth|fifth)\b(?=\s*+(?:of\s+all\b|[,:]|(?:{ACTION_VERBS})\b))"
# Words that start the next step in other languages (by py3langid's codes), with the language's "and".
# Left out or guarded, for what else they say: "aussi" ("as", "so"), "anche" and "auch" ("even
# if"), German "also" ("so"), "puis-je" ("may I"), "depois de", "después de", "luego de",
# "depois que", "in seguito a" ("after" or "following" something) and "además de" ("besides").
_STEP_WORDS = {
    "pt": (
        "e",
        r"depois disso|depois disto|depois(?!\s+(?:d\w*|que)\b)|em seguida|a seguir|também|tambem|por fim|"
        r"finalmente|além disso|alem disso",
    ),
    "es": (
        "y",
        r"después de eso|despues de eso|después(?!\s+(?:del?|que)\b)|despues(?!\s+(?:del?|que)\b)|"
        r"luego(?!\s+(?:del?|que)\b)|a continuación|a continuacion|también|tambien|por último|por ultimo|"
        r"además de eso|ademas de eso|además(?!\s+de\b)|ademas(?!\s+de\b)",
    ),
    "fr": ("et", r"puis(?!-)|ensuite|enfin|finalement|de plus"),
    "it": ("e", r"poi|in seguito(?!\s+a(?:l|ll[aeo']|gli|i)?\b)|successivamente|infine|inoltre"),
    "de": (
        "und",
        r"dann|danach|anschließend|anschliessend|außerdem|ausserdem|zuletzt|schließlich|schliesslich|"
        r"zum schluss|abschließend|abschliessend",
    ),
}
# Chinese and Japanese write no spaces: these follow a comma or start a sentence directly. Guarded
# where they qualify what follows: "最后一班" ("the last train"), "之后的" ("later"), "另外一个"
# ("another one"), "その後の" ("later"), "さらに安い" ("even cheaper").
_CJK_STEP_WORDS = {
    "zh": r"然后|接着|之后(?![的一二三两几0-9个天])|随后|"
    r"最后(?![一二三两四五六七八九十几0-9\uff10-\uff19个位次班天的期名])|另外(?![一两几个的])|此外",
    "ja": r"それから|次に|その後(?!の)|そのあと(?!の)|最後に|そして|さらに(?=[、,])",
}
# A sentence of those two ends at 。！？； unless a closing quote or bracket follows.
_CJK_SENTENCE = "|(?<=[。！？；])(?![」』\uff09】”\u2019\"'])\\s*+"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff"
_CJK = re.compile(f"[{_HAN}{_KANA}\u3000-\u303f\uff00-\uffef]")
# How many characters a word takes: Chinese running text about 1.5 characters a word; kana spell
# syllables, about three to a word. So "谢谢。" joins its neighbour as "Thanks." does.
_HAN_PER_WORD, _KANA_PER_WORD = 1.5, 3.0
_HAN_CHARACTER = re.compile(f"[{_HAN}]")
_KANA_CHARACTER = re.compile(f"[{_KANA}]")
# Letters or digits of another script among them ("web-2を停止して": "web", "2").
_OTHER_RUN = re.compile(f"[^\\W{_HAN}{_KANA}]+")
# A quotation is data the request acts on (a message to send, a review to classify, `code` to run): its sentences
# and lines are not steps. It opens after a space or punctuation and closes after neither a space nor
# a digit, before no letter, so an inch mark (5'11", a 27" monitor) neither opens nor closes one.
# Single quotes are left out: an apostrophe ("James' schedule") cannot be told from a closing one.
_QUOTATION = re.compile(r'(?<![\w"“])"(?=\S)[^"]*?(?<=[^\s\d])"(?!\w)|“[^“”]*”|「[^「」]*」|『[^『』]*』|`[^`\n]+`')
_WRAPPERS = {'"': '"', "“": "”"}
_MARKER = re.compile(r"^(?:\(?\d{1,2}[.):]|[-*\u2022]|\(?[a-z][.)])\s+", re.IGNORECASE)
_SPACES, _QUOTE_MARKS = " \t", "\"'"
_WORD = re.compile(r"\w")
# An English part that opens on an action asks for one ("email the itinerary to Dana.", "Please book a room").
_ACTION = re.compile(rf"^\W*(?:please\s+)?(?:{ACTION_VERBS})\b", re.IGNORECASE)


def parts(text: str, language: str = ENGLISH) -> list[str]:
    """The things ``text`` asks, in order; ``[text]`` itself when it asks one thing.

    Each part is stripped of list markers and of the connective that introduced it
    ("Then, get ..." gives "get ..."); a part under ``MIN_WORDS`` words joins the one before
    it (the first one joins the next).

    Args:
        text: the turn's text.
        language: its ISO 639-1 code (``router.embedding.language``); the languages without
            rules of their own are split by the English ones.
    """
    split, leading = _rules(language)
    start, end = _inside(text)
    pieces = [_clean(p, leading) for p in _split(split, text[start:end]) if p and p.strip(_SPACES + _QUOTE_MARKS)]
    cjk = language in _CJK_STEP_WORDS
    merged: list[str] = []
    carry = ""
    for piece in pieces:
        piece = _joined(carry, piece, cjk) if carry else piece
        carry = ""
        if (_cjk_words(piece) if cjk else len(piece.split())) >= MIN_WORDS:
            merged.append(piece)
        elif merged:
            merged[-1] = _joined(merged[-1], piece, cjk)
        else:
            carry = piece
    if carry:
        merged.append(carry)
    return merged if len(merged) > 1 else [text]


def asks_action(part: str) -> bool:
    """Whether a part opens by asking for an action, as an English imperative does ("email the itinerary to Dana.")."""
    return _ACTION.match(part) is not None


@lru_cache(maxsize=16)
def _rules(language: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The split and the leading-connective patterns of a language."""
    plain = "|".join(w for w in _CONNECTIVE_WORDS if not (language == "de" and w == "also"))
    english = f"{plain}|{_ORDINALS}"
    abbreviations, capitals = ABBREVIATIONS, "A-Z"
    inner = r"(?:,|;)\s*(?:and\s+)?(?=(?:" + english + r")\b)|(?<!\s)\s++and\s++(?=(?:then|also|finally|lastly)\b)"
    leading = r"^(?:and\s+)?(?:" + english + r")\b\s*(?:of all\b)?\s*[,:]?\s*"
    ends = ""
    if language in _STEP_WORDS:
        word, steps = _STEP_WORDS[language]
        abbreviations, capitals = ABBREVIATIONS + _OTHER_ABBREVIATIONS, "A-ZÀ-ÖØ-Þ¿¡"
        inner += rf"|(?:,|;)\s*(?:{word}\s+)?(?=(?:{steps})\b)|(?<!\s)\s++{word}(?:\s*+,)?\s++(?=(?:{steps})\b)"
        leading = rf"^(?:(?:and|{word})\s+)?(?:{english}|{steps})\b\s*(?:of all\b)?\s*[,:]?\s*"
    elif language in _CJK_STEP_WORDS:
        steps = _CJK_STEP_WORDS[language]
        ends = _CJK_SENTENCE
        inner += rf"|[，、,]\s*+(?={steps})"
        leading += rf"|^(?:{steps})\s*[,:，、：]?\s*"
    # A sentence may end inside its closing quote or bracket ("... all day.” Then post it"). The next one opens
    # on a capital, or on an action or a connective written in lower case ("search hotels. convert 100 eur").
    # A list's "1." that opens a line is no sentence of its own ("1. find a hotel").
    ended = r"(?:(?<=[.?!;])|(?<=[.?!;][\"”\u2019')]))"
    marker = r"(?<!^\d\.)(?<!\n\d\.)(?<!^\d\d\.)(?<!\n\d\d\.)"
    lower = rf"{marker}\s++(?=(?:{ACTION_VERBS}|{plain})\b|{_ORDINALS})"
    sentence = abbreviations + ended + rf"(?:\s++(?=[{capitals}\"'(\d])|{lower})" + ends
    split = re.compile(sentence + r"|(?<!\s)[^\S\n]*+\n\s*+|(?i:" + inner + ")")
    return split, re.compile(leading, re.IGNORECASE)


def _split(split: re.Pattern[str], text: str) -> list[str]:
    """``text`` cut where ``split`` matches, except inside a quotation."""
    quoted = [m.span() for m in _QUOTATION.finditer(text)]
    starts = [a for a, _ in quoted]
    pieces: list[str] = []
    start = 0
    for cut in split.finditer(text):
        inside = bisect.bisect_left(starts, cut.start()) - 1  # the last quotation opened before the cut
        if inside < 0 or cut.start() >= quoted[inside][1]:
            pieces.append(text[start : cut.start()])
            start = cut.end()
    pieces.append(text[start:])
    return pieces


def _inside(text: str) -> tuple[int, int]:
    """Where ``text`` starts and ends within its spaces, and its quotes when it is written wholly in quotes.

    A turn that opens on a quotation and ends on another ("\"Great phone.\" Reply \"Thanks\"") is
    not wrapped: its first quotation closes before its end.
    """
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    if end - start > 1 and _WRAPPERS.get(text[start]) == text[end - 1]:
        first = _QUOTATION.match(text, start)
        if first is None or first.end() == end:
            return start + 1, end - 1
    return start, end


def _unwrapped(piece: str) -> str:
    """``piece`` without a quote left behind by a cut (a turn written wholly in quotes); a quotation keeps both."""
    piece = piece.strip(_SPACES)
    if piece[:1] in _QUOTE_MARKS and piece.count(piece[0]) % 2:
        piece = piece[1:].lstrip(_SPACES)
    if piece[-1:] in _QUOTE_MARKS and piece.count(piece[-1]) % 2:
        piece = piece[:-1].rstrip(_SPACES)
    return piece


def _cjk_words(piece: str) -> float:
    """How many words ``piece`` of Chinese or Japanese holds: its spaced words, its characters by their length."""
    count = 0.0
    for word in piece.split():
        han, kana = len(_HAN_CHARACTER.findall(word)), len(_KANA_CHARACTER.findall(word))
        if han or kana:
            count += han / _HAN_PER_WORD + kana / _KANA_PER_WORD + len(_OTHER_RUN.findall(word))
        else:
            count += 1
    return count


def _joined(first: str, second: str, cjk: bool) -> str:
    # Chinese and Japanese join without a space.
    gap = "" if cjk and _CJK.match(first[-1:]) and _CJK.match(second[:1]) else " "
    return f"{first}{gap}{second}".strip()


def _clean(piece: str, leading: re.Pattern[str]) -> str:
    piece = _MARKER.sub("", _unwrapped(piece))
    stripped = leading.sub("", piece)
    # "Then." or "Next, " alone: the connective was all there was.
    return stripped if _WORD.search(stripped) else piece
