"""Which texts count as English, and which are routed in the multilingual space."""

from __future__ import annotations

import json

import pytest

from router.embedding.language import LanguageIdentifier
from tests.conftest import ROOT

IDENTIFIER = LanguageIdentifier()


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Find me a flight from Lisbon to Rome on Friday", "en"),
        ("Encontre um voo de Lisboa para Roma na sexta-feira", "pt"),
        ("Cerca un treno da Milano a Napoli per domani mattina", "it"),
        ("帮我查一下下周五从北京飞上海的航班", "zh"),
        ("Ich brauche einen Mietwagen in München vom 5. bis 9. August", "de"),
        ("来週の金曜日に東京から大阪へのフライトを探して", "ja"),
    ],
)
def test_a_request_is_told_by_its_language(text: str, language: str) -> None:
    assert IDENTIFIER.language(text) == language


@pytest.mark.parametrize("text", ["ok", "thanks!", "sure, go ahead", "yes please", "2026-12-05 14:00", ""])
def test_short_replies_and_texts_without_letters_stay_english(text: str) -> None:
    assert IDENTIFIER.english(text)


@pytest.mark.parametrize("name", ["multilingual.jsonl", "multilingual_steps.jsonl"])
def test_every_request_of_the_multilingual_sets_is_not_english(name: str) -> None:
    rows = [json.loads(line) for line in (ROOT / "examples" / name).read_text().splitlines()]
    assert len({r["language"] for r in rows}) >= 6
    assert [r["request"] for r in rows if IDENTIFIER.english(r["request"])] == []
