"""``router eval``'s arithmetic and its reading of cases, against figures worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from router.evaluate.cases import Case, CasesInvalid, assign, load_cases
from router.evaluate.metrics import (
    Figures,
    complete_at,
    mean_reciprocal_rank,
    misses,
    recall_at,
    smallest_complete,
)
from router.evaluate.peers import interleave, sentences
from router.evaluate.replay import build_cases, group_runs
from router.evaluate.report import Gate, as_json, table
from router.evaluate.run import Evaluation

# Three cases: one function found first; two functions at ranks 2 and 7; one function not returned.
RANKED: list[dict[str, int | None]] = [{"a": 1}, {"b": 2, "c": 7}, {"d": None}]


@pytest.mark.parametrize(
    ("k", "recall", "complete"),
    [
        (1, (1 + 0 + 0) / 3, 1 / 3),
        (3, (1 + 0.5 + 0) / 3, 1 / 3),
        (5, (1 + 0.5 + 0) / 3, 1 / 3),
        (10, (1 + 1 + 0) / 3, 2 / 3),
    ],
)
def test_recall_is_the_share_of_needed_functions_found_and_complete_needs_them_all(
    k: int, recall: float, complete: float
) -> None:
    assert recall_at(RANKED, k) == pytest.approx(recall)
    assert complete_at(RANKED, k) == pytest.approx(complete)


def test_mrr_takes_the_first_needed_function_found() -> None:
    assert mean_reciprocal_rank(RANKED) == pytest.approx((1 + 1 / 2 + 0) / 3)


def test_a_pinned_function_counts_as_returned_at_any_k_and_first() -> None:
    ranked: list[dict[str, int | None]] = [{"pinned": 0, "other": 4}]

    assert recall_at(ranked, 1) == pytest.approx(0.5)
    assert complete_at(ranked, 4) == 1.0
    assert mean_reciprocal_rank(ranked) == 1.0


def test_figures_gather_every_k() -> None:
    figures = Figures.of(RANKED)

    assert list(figures.recall) == [1, 3, 5, 10]
    assert figures.complete[10] == pytest.approx(2 / 3)
    assert figures.mrr == pytest.approx(0.5)


def test_the_smallest_max_functions_completes_the_share_of_cases() -> None:
    # Twenty cases: nineteen complete at 2, one only at 9.
    ranked: list[dict[str, int | None]] = [{"a": 1, "b": 2}] * 19 + [{"a": 9}]

    assert smallest_complete(ranked, depth=100) == 2  # 19 of 20 is 95%
    assert smallest_complete(ranked, depth=100, share=1.0) == 9
    assert smallest_complete(ranked, depth=5, share=1.0) is None
    assert smallest_complete([{"a": None}], depth=100) is None
    assert smallest_complete([{"a": 0}], depth=100) == 1  # pinned: any max_functions will do


def test_misses_list_the_most_often_missed_first_with_their_ranks() -> None:
    ranked: list[dict[str, int | None]] = [{"a": 4}, {"b": 1}, {"a": None, "b": 5}, {"c": 9}]

    found = misses(ranked, 3)

    assert list(found) == ["a", "b", "c"]
    assert [(m.case, m.rank) for m in found["a"]] == [(0, 4), (2, None)]


def write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_cases_read_a_request_or_messages(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "my parcel is late"},
        {"role": "assistant", "content": "which one?"},
        {"role": "user", "content": "order 1042"},
    ]
    path = write(
        tmp_path,
        {"request": "refund order 1042", "expected": ["issue_refund", "issue_refund"]},
        "",
        {"messages": messages, "expected": ["track_shipment"], "namespace": "commerce"},
    )

    first, second = load_cases(path)

    assert (first.where, first.request, first.expected, first.namespace) == (
        f"{path}:1",
        "refund order 1042",
        ("issue_refund",),
        None,
    )
    assert first.messages == ({"role": "user", "content": "refund order 1042"},)
    assert (second.where, second.request, second.namespace) == (
        f"{path}:3",
        "my parcel is late\norder 1042",
        "commerce",
    )


def test_every_bad_line_is_named_with_its_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"request": "fine", "expected": ["a"]},
        "{not json",
        {"request": "x", "messages": [], "expected": ["a"]},
        {"request": "x", "expected": []},
        {"request": "x", "expected": "a"},
        {"messages": [{"role": "assistant", "content": "hi"}], "expected": ["a"]},
        {"request": "x", "expect": ["a"]},
        ["request"],
        {"request": "  ", "expected": ["a"]},
    )

    with pytest.raises(CasesInvalid) as raised:
        load_cases(path)

    assert str(raised.value).splitlines() == [
        f"{path}:2: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{path}:3: give exactly one of request (a string) or messages (a list)",
        f"{path}:4: expected: must be a non-empty list of function names",
        f"{path}:5: expected: must be a non-empty list of function names",
        f"{path}:6: messages: no message with role user has any text",
        f"{path}:7: unexpected keys ['expect']; expected request or messages, expected, namespace",
        f"{path}:8: must be a JSON object, got list",
        f"{path}:9: request: must be a non-empty string",
    ]


def test_a_byte_order_mark_is_read_and_a_json_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes('\ufeff{"request": "refund it", "expected": ["refund"]}\r\n'.encode())
    assert [c.request for c in load_cases(path)] == ["refund it"]
    path.write_text('[\n  {"request": "refund it", "expected": ["refund"]}\n]\n')
    with pytest.raises(CasesInvalid, match=r"holds one JSON array; write one JSON object per line \(JSON Lines\)"):
        load_cases(path)


def test_an_empty_or_missing_cases_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CasesInvalid, match="holds no case"):
        load_cases(write(tmp_path, ""))
    with pytest.raises(CasesInvalid, match=r"nowhere.jsonl: cannot be read: No such file or directory"):
        load_cases(tmp_path / "nowhere.jsonl")


def case(where: str, *expected: str, namespace: str | None = None) -> Case:
    return Case(where, ({"role": "user", "content": "x"},), "x", expected, namespace)


CATALOGS = {"shop": {"refund", "track", "search"}, "travel": {"book", "search"}}


def test_a_case_goes_to_the_one_catalog_that_has_its_functions() -> None:
    placed, left = assign([case("1", "refund", "track"), case("2", "search", namespace="travel")], CATALOGS)

    assert [c.namespace for c in placed] == ["shop", "travel"]
    assert left == []
    assert [c.namespace for c in assign([case("1", "search")], CATALOGS, namespace="shop")[0]] == ["shop"]


def test_one_catalog_out_of_a_shared_file_leaves_the_others_cases_out() -> None:
    cases = [case("f:1", "refund"), case("f:2", "book"), case("f:3", "search", namespace="travel"), case("f:4", "x")]

    placed, left = assign(cases, {"shop": CATALOGS["shop"]}, namespace="shop")

    assert [c.where for c in placed] == ["f:1"]
    assert [c.where for c in left] == ["f:2", "f:3", "f:4"]
    with pytest.raises(CasesInvalid, match="no case expects a function of catalog 'travel'"):
        assign([case("f:1", "refund")], {"travel": CATALOGS["travel"]}, namespace="travel")


def test_the_files_bad_lines_and_the_cases_wrong_for_the_catalog_are_said_together() -> None:
    with pytest.raises(CasesInvalid) as raised:
        assign([case("f:2", "nope")], {"shop": {"refund"}}, errors=["f:1: not valid JSON: Expecting value (column 1)"])

    assert str(raised.value).splitlines() == [
        "f:1: not valid JSON: Expecting value (column 1)",
        "f:2: expected: catalog 'shop' has no function named ['nope']",
    ]


def test_unknown_or_ambiguous_functions_are_errors_naming_the_case() -> None:
    cases = [
        case("f:1", "search"),
        case("f:2", "refund", "nope"),
        case("f:3", "refund", "book"),
        case("f:4", "refund", namespace="travel"),
        case("f:5", "refund", namespace="moon"),
    ]

    with pytest.raises(CasesInvalid) as raised:
        assign(cases, CATALOGS)

    assert str(raised.value).splitlines() == [
        "f:1: namespace: the expected functions are in ['shop', 'travel']; name one",
        "f:2: expected: no catalog has ['nope']",
        "f:3: expected: no one catalog has them all",
        "f:4: expected: catalog 'travel' has no function named ['refund']",
        "f:5: namespace: no catalog named 'moon' (have ['shop', 'travel'])",
    ]


def test_a_single_catalog_names_the_function_it_lacks() -> None:
    with pytest.raises(CasesInvalid, match=r"f:1: expected: catalog 'shop' has no function named \['nope'\]"):
        assign([case("f:1", "nope")], {"shop": {"refund"}})


def stored(session: str, at: float, seq: int, message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "session_id": session, "stored_at": at, "seq": seq, "source": "external", "namespace": "ops"}


def call(*names: str) -> dict[str, Any]:
    tools = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)
    ]
    return {"role": "assistant", "content": None, "tool_calls": tools}


def test_runs_become_cases_with_the_user_turn_before_each_call() -> None:
    records = [
        stored("s1", 1.0, 1, {"role": "user", "content": "email the crew"}),
        stored("s1", 1.0, 2, call("send_email", "gone_function")),
        stored("s2", 2.0, 3, {"role": "user", "content": "what is the weather"}),
        stored("s2", 2.0, 4, {"role": "assistant", "content": "sunny"}),
        stored("s1", 3.0, 5, {"role": "user", "content": "page on-call and open a ticket"}),
        stored("s1", 4.0, 6, call("page_oncall", "create_ticket")),
    ]

    runs = build_cases(group_runs(records), {"send_email", "page_oncall", "create_ticket"}, namespace="ops")

    assert [(r.session_id, len(r.messages)) for r in runs] == [("s1", 2), ("s2", 2), ("s1", 1), ("s1", 1)]
    assert runs[0].messages[0] == {"role": "user", "content": "email the crew"}
    assert [[(c.request, c.expected) for c in r.cases] for r in runs] == [
        [("email the crew", ("send_email",))],
        [],
        [],
        [("page on-call and open a ticket", ("page_oncall", "create_ticket"))],
    ]
    assert runs[0].unknown == {"gone_function"}
    assert runs[3].cases[0].where == "run 4 (session s1)"


def evaluation() -> Evaluation:
    cases = [case("c:1", "a", namespace="ns"), case("c:2", "b", "c", namespace="ns"), case("c:3", "d", namespace="ns")]
    other: list[dict[str, int | None]] = [{"a": 2}, {"b": 1, "c": 1}, {"d": 1}]
    return Evaluation(cases, {"router": RANKED, "peer": other}, "router", functions=12, max_functions=3)


def test_the_table_gives_every_figure_the_misses_and_max_functions() -> None:
    text = table(evaluation(), gate=Gate(0.5, 3))

    lines = text.splitlines()
    assert lines[0] == "3 cases in 1 catalog (ns; 12 functions), routing as configured (max_functions 3)"
    assert lines[2].split() == ["R@1", "R@3", "R@5", "R@10", "all@1", "all@3", "all@5", "all@10", "MRR"]
    assert lines[3].split() == ["router", "0.33", "0.50", "0.50", "0.67", "0.33", "0.33", "0.33", "0.67", "0.50"]
    assert lines[4].split()[0] == "peer"
    assert "Most often missed by the router (not in its top 3):" in lines
    assert "    not in the top 100 c:3: x" in lines
    assert "    rank 7             c:2: x" in lines
    assert "max_functions: none up to 100 returns every needed function for 95%; the current 3 completes 33%" in lines
    assert lines[-1] == "gate: R@3 of the router is 0.50, at or above the floor 0.50"


def test_the_json_has_the_figures_ranks_misses_and_gate() -> None:
    report = as_json(evaluation(), k=5, gate=Gate(0.6, 3))

    assert report["methods"]["router"]["R@10"] == pytest.approx(0.6667)
    assert report["methods"]["peer"]["MRR"] == pytest.approx(round((1 / 2 + 1 + 1) / 3, 4))
    assert report["cases"][1]["ranks"] == {"router": {"b": 2, "c": 7}, "peer": {"b": 1, "c": 1}}
    assert report["missed"]["k"] == 5
    assert [(f["function"], [c["rank"] for c in f["cases"]]) for f in report["missed"]["functions"]] == [
        ("c", [7]),
        ("d", [None]),
    ]
    assert report["max_functions"] == {
        "current": 3,
        "current_complete": pytest.approx(0.3333),
        "recommended": None,
        "complete_share": 0.95,
    }
    assert report["gate"] == {"k": 3, "min_recall": 0.6, "recall": 0.5, "passed": False}


def test_a_request_splits_into_its_sentences_and_lines() -> None:
    text = "Get the pharmacodynamics of Aspirin. Then get its tablets' properties!\nLastly, validate batch BA1.2?"
    assert sentences(text) == [
        "Get the pharmacodynamics of Aspirin.",
        "Then get its tablets' properties!",
        "Lastly, validate batch BA1.2?",
    ]
    assert sentences("  one request  ") == ["one request"]


def test_rankings_interleave_round_robin_without_repeats() -> None:
    assert interleave([["a", "b", "c"], ["b", "d"], ["e"]], k=10) == ["a", "b", "e", "d", "c"]
    assert interleave([["a", "b", "c"], ["b", "d"], ["e"]], k=3) == ["a", "b", "e"]
    assert interleave([], k=3) == []
