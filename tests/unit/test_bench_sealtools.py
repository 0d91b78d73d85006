"""The Seal-Tools set as the quality benchmark reads it, and how its requests are stored as runs."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import sealtools
from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_data import Scores
from benchmarks.quality_runs import run_of
from router.catalog.functions import NAME_PATTERN


def _write(root: Path) -> None:
    tools = [
        {
            "api_name": "getFilmDetails",
            "api_description": "Get the details of a film",
            "field": "Film",
            "parameters": {"title": {"type": "str", "description": "The film"}, "year": {"type": "int"}},
            "required": ["title", "missing"],
            "responses": {},
        },
        {"api_name": "requestFirst Aid Assistance", "api_description": "Ask for first aid", "parameters": {}},
        {"api_name": "bookCinema", "api_description": "Book a seat", "parameters": {"seats": {"type": "float"}}},
    ]
    requests = [
        {"id": "dev-easy-0", "query": "Tell me about Alien.", "calling": [{"api": "getFilmDetails"}]},
        {
            "id": "dev-difficult-3",
            "query": "Get the details of Alien. Then book a seat. Then the details again.",
            "calling": [
                {"api": "getFilmDetails"},
                {"api": "requestFirst Aid Assistance"},
                {"api": "getFilmDetails"},
                {"api": "bookCinema"},
            ],
        },
    ]
    (root / "tool.jsonl").write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    (root / "dev.jsonl").write_text("\n".join(json.dumps(r) for r in requests) + "\n")


def test_names_are_cleaned_to_valid_camel_case() -> None:
    assert sealtools.clean_name("requestFirst Aid Assistance") == "requestFirstAidAssistance"
    assert sealtools.clean_name("getFilmInfo") == "getFilmInfo"
    assert NAME_PATTERN.fullmatch(sealtools.clean_name("odd name/with (signs)"))


def test_the_catalog_and_requests_load_with_schemas_and_expected_tools_in_call_order(tmp_path: Path) -> None:
    _write(tmp_path)
    loaded = sealtools.load(tmp_path)
    names = [f.name for f in loaded.functions]
    assert names == ["getFilmDetails", "requestFirstAidAssistance", "bookCinema"]
    film = loaded.functions[0].parameters
    assert film["properties"]["year"] == {"type": "integer"}
    assert film["required"] == ["title"]
    assert loaded.functions[2].parameters["properties"]["seats"]["type"] == "number"
    easy, hard = loaded.questions
    assert (easy.category, easy.expected) == ("dev-easy", ("getFilmDetails",))
    assert hard.category == "dev-difficult"
    assert hard.expected == ("getFilmDetails", "requestFirstAidAssistance", "bookCinema")


def test_a_request_needing_several_tools_is_one_run_calling_them_in_order() -> None:
    question = BfclQuestion("q", "t", ({"role": "user", "content": "a then b"},), ("a", "b"))
    run = run_of(question)
    assistant = [m for m in run if m["role"] == "assistant"]
    assert len(assistant) == 1
    assert [c["function"]["name"] for c in assistant[0]["tool_calls"]] == ["a", "b"]
    assert [m["tool_call_id"] for m in run if m["role"] == "tool"] == ["call_0", "call_1"]
    wrong = run_of(question, ["z", "b"])
    assert [c["function"]["name"] for c in wrong[1]["tool_calls"]] == ["z", "b"]


def test_complete_at_k_counts_multi_tool_requests_with_every_tool_in_the_top_k() -> None:
    scores = Scores()
    scores.add(["a", "x", "y", "z", "w", "b"], ["a", "b"])
    scores.add(["b", "a"], ["a", "b"])
    scores.add(["c"], ["c"])
    assert scores.completed(5) == 0.5
    assert scores.completed(10) == 1.0
    assert scores.row()["Complete@5"] == 0.5
    assert Scores().completed(5) is None
