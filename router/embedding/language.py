"""Which language a turn is in, told per text by py3langid (its model ships in its wheel).

The default model, all-MiniLM-L6-v2, reads English only. With a second, multilingual space
(``router.retrieval.catalogs.Catalogs.multilingual``), a text that is not English is routed,
remembered and learned from there; an English one stays in the default space, exactly as
without it. The identifier is py3langid's naive Bayes over byte n-grams (97 languages): on
the router's development sets it calls 9 of 2,926 English requests (BFCL and APIBench)
something else, all of them quoting text in another language, and all 84 requests of
``examples/multilingual.jsonl`` non-English, at about a tenth of a millisecond each.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENGLISH = "en"
# A text counts as English while English is at least this likely relative to the likeliest
# language: short replies ("ok", "thanks!", "sure, go ahead") look like any language to the
# model, and those stay in the default space, as without a second one.
ENGLISH_SHARE = 0.25


class LanguageIdentifier:
    """Tells English text from text in any other language.

    The model is loaded on first use (about a second), once per process.
    """

    def language(self, text: str) -> str:
        """The ISO 639-1 code of the language of ``text``: ``en`` when English is nearly as likely as any."""
        if not any(c.isalpha() for c in text):
            return ENGLISH
        ranked = _load().rank(text)
        best, likelihood = ranked[0]
        english = next(score for language, score in ranked if language == ENGLISH)
        return ENGLISH if english >= ENGLISH_SHARE * likelihood else str(best)

    def english(self, text: str) -> bool:
        """Whether ``text`` is English (or cannot be told from English)."""
        return self.language(text) == ENGLISH


@lru_cache(maxsize=1)
def _load() -> Any:
    from py3langid.langid import MODEL_FILE
    from py3langid.langid import LanguageIdentifier as Model

    return Model.from_model_file(MODEL_FILE, norm_probs=True)
