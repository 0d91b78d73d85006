"""Reading a catalog directory: one file per namespace, JSON or YAML, errors returned not raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLE_COUNTS, EXAMPLES, STOCKS, WEATHER, write_catalog

from sync.files import read_file, scan, source_label


def test_json_list_and_functions_object(catalog_dir: Path) -> None:
    as_list = read_file(write_catalog(catalog_dir, "a", [WEATHER, STOCKS]))
    as_object = read_file(write_catalog(catalog_dir, "b", {"functions": [WEATHER, STOCKS]}))

    assert as_list.error is None
    assert as_list.namespace == "a"
    assert [f.name for f in as_list.functions] == ["get_weather", "get_stock_price"]
    assert as_object.functions == as_list.functions


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_files(catalog_dir: Path, suffix: str) -> None:
    loaded = read_file(write_catalog(catalog_dir, "finance", {"functions": [WEATHER, STOCKS]}, suffix=suffix))

    assert loaded.error is None
    assert loaded.namespace == "finance"
    assert [f.definition for f in loaded.functions] == [WEATHER, STOCKS]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("zero.json", ""),
        ("blank.json", "  \n\t\n"),
        ("list.json", "[]"),
        ("object.json", '{"functions": []}'),
        ("zero.yaml", ""),
        ("comments.yaml", "# nothing yet\n"),
        ("list.yml", "[]\n"),
    ],
)
def test_empty_files_parse_to_no_function(catalog_dir: Path, name: str, content: str) -> None:
    path = catalog_dir / name
    path.write_text(content)

    loaded = read_file(path)

    assert loaded.error is None
    assert loaded.empty
    assert loaded.functions == []


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.json", '{"functions": [{"name": "a"}'),
        ("trailing.json", '[{"name": "a"},]'),
        ("single.json", "{'name': 'a'}"),
        ("broken.yaml", "functions: [a, b\n"),
        ("tabs.yaml", "functions:\n\t- name: a\n"),
    ],
)
def test_unparseable_files_are_rejected_naming_the_file(catalog_dir: Path, name: str, content: str) -> None:
    path = catalog_dir / name
    path.write_text(content)

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: cannot be parsed")
    assert loaded.functions == []
    assert not loaded.empty


def test_yaml_parse_errors_say_where_in_one_line(catalog_dir: Path) -> None:
    # PyYAML's own message quotes the line with a caret below it: several lines in a log.
    path = catalog_dir / "broken.yaml"
    path.write_text("functions:\n  - name: a\n    description: [x\n")

    loaded = read_file(path)

    assert loaded.error is not None
    assert "\n" not in loaded.error
    assert "line 3, column 18" in loaded.error
    assert "expected ',' or ']'" in loaded.error


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_byte_order_mark_is_no_content(catalog_dir: Path, suffix: str) -> None:
    path = catalog_dir / f"bom{suffix}"
    document = '[{"name": "get_x", "description": "Get x."}]'
    path.write_bytes(b"\xef\xbb\xbf" + document.encode())

    loaded = read_file(path)

    assert loaded.error is None
    assert [f.name for f in loaded.functions] == ["get_x"]


def test_non_utf8_file_is_rejected(catalog_dir: Path) -> None:
    path = catalog_dir / "latin.json"
    path.write_bytes(b'[{"name": "caf\xe9"}]')

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: cannot be parsed")


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_json_files_with_non_finite_numbers_are_rejected(catalog_dir: Path, number: str) -> None:
    # RFC 8259 has no NaN or infinity: a catalog PUT refuses them, and so does a directory file.
    path = catalog_dir / "odd.json"
    parameters = '{"type": "object", "properties": {}, "default": ' + number + "}"
    path.write_text('[{"name": "a", "parameters": ' + parameters + "}]")

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: cannot be parsed")
    assert loaded.functions == []


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"functions": [WEATHER, {"description": "no name"}]}, "functions[1].name"),
        ([WEATHER, {"name": "bad name"}], "[1].name"),
        ({"functions": [WEATHER, {**STOCKS, "name": "get_weather"}]}, "functions[1].name"),
        ({"functions": [WEATHER, {"name": "ok", "description": 7}]}, "functions[1].description"),
        ({"functions": [WEATHER, {"name": "ok", "parameters": "x"}]}, "functions[1].parameters"),
        ({"functions": [WEATHER, {"type": "function", "function": {"name": "ok", "parameters": {"type": "array"}}}]},
         "functions[1].function.parameters.type"),
        ({"functions": [WEATHER, {"name": "ok", "inputSchema": []}]}, "functions[1].inputSchema"),
    ],
    ids=["missing-name", "malformed-name", "duplicate", "description", "parameters", "openai-type", "mcp-schema"],
)  # fmt: skip
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_invalid_functions_are_rejected_naming_file_index_and_field(
    catalog_dir: Path, document: object, field: str, suffix: str
) -> None:
    path = write_catalog(catalog_dir, "travel", document, suffix=suffix)

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: {field}:")
    assert loaded.functions == []


@pytest.mark.parametrize("document", [{"name": "a"}, "just text", 42, {"tools": []}])
def test_a_document_that_is_not_a_catalog_is_rejected(catalog_dir: Path, document: object) -> None:
    path = write_catalog(catalog_dir, "odd", document)

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: ")


def test_a_file_name_that_is_not_a_namespace_is_rejected(catalog_dir: Path) -> None:
    path = write_catalog(catalog_dir, "not a namespace", [WEATHER])

    loaded = read_file(path)

    assert loaded.namespace == "not a namespace"
    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: namespace 'not a namespace' must match")


def test_fingerprint_follows_the_bytes(catalog_dir: Path) -> None:
    path = write_catalog(catalog_dir, "a", [WEATHER])
    first = read_file(path).fingerprint
    same = read_file(path).fingerprint
    path.write_text(json.dumps([WEATHER]))  # same content, other formatting
    reformatted = read_file(path).fingerprint

    assert first == same
    assert len(first.rpartition(":")[2]) == 64  # a sha256, after the reader's version
    assert reformatted != first


def test_scan_reads_one_namespace_per_catalog_file(catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "a", [WEATHER])
    write_catalog(catalog_dir, "b", [STOCKS], suffix=".yaml")
    write_catalog(catalog_dir, "c", [STOCKS], suffix=".yml")
    (catalog_dir / "notes.txt").write_text("not a catalog")
    (catalog_dir / "a.json~").write_text("editor backup")
    (catalog_dir / ".hidden.json").write_text("[")
    (catalog_dir / "nested.json").mkdir()
    write_catalog(catalog_dir / "nested.json", "deep", [WEATHER])

    found = scan(catalog_dir)

    assert sorted(found) == ["a", "b", "c"]
    assert all(f.error is None for f in found.values())
    assert found["b"].path == catalog_dir / "b.yaml"


def test_two_files_for_one_namespace_are_both_rejected(catalog_dir: Path) -> None:
    json_path = write_catalog(catalog_dir, "travel", [WEATHER])
    yaml_path = write_catalog(catalog_dir, "travel", [STOCKS], suffix=".yaml")
    write_catalog(catalog_dir, "other", [STOCKS])

    found = scan(catalog_dir)

    error = found["travel"].error
    assert error is not None
    assert str(json_path) in error
    assert str(yaml_path) in error
    assert "several files define namespace 'travel'" in error
    assert found["travel"].functions == []
    assert found["other"].error is None


def test_scan_of_an_empty_directory(catalog_dir: Path) -> None:
    assert scan(catalog_dir) == {}


def test_the_example_catalog_is_valid() -> None:
    found = scan(EXAMPLES)

    assert {ns: len(f.functions) for ns, f in found.items()} == EXAMPLE_COUNTS
    assert [f.error for f in found.values()] == [None] * 4
    shapes = {ns: {fn.shape for fn in f.functions} for ns, f in found.items()}
    assert shapes == {"commerce": {"bare"}, "devops": {"mcp"}, "travel": {"openai"}, "workspace": {"bare"}}


def test_source_label_is_the_resolved_directory(catalog_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(catalog_dir.parent)

    assert source_label(Path(catalog_dir.name)) == f"dir:{catalog_dir.resolve()}"
    assert source_label(Path(catalog_dir.name)) == source_label(catalog_dir)


def test_a_file_seen_before_is_not_parsed_again(catalog_dir: Path) -> None:
    path = write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    first = read_file(path)

    again = read_file(path, seen=first.fingerprint)
    write_catalog(catalog_dir, "tools", [WEATHER])
    changed = scan(catalog_dir, seen={"tools": first.fingerprint})["tools"]

    assert len(first.functions) == 2
    assert (again.fingerprint, again.functions, again.error) == (first.fingerprint, [], None)
    assert [f.name for f in changed.functions] == [WEATHER["name"]]
    assert changed.fingerprint != first.fingerprint


@pytest.mark.parametrize("number", [".nan", ".inf", "-.inf"])
def test_yaml_files_with_non_finite_numbers_are_rejected_where_they_are(catalog_dir: Path, number: str) -> None:
    path = catalog_dir / "odd.yaml"
    path.write_text(f"- name: a\n  parameters:\n    type: object\n    default: {number}\n")

    loaded = read_file(path)

    assert loaded.error == f"{path}: [0].parameters.default: NaN and infinities are not JSON numbers"
    assert loaded.functions == []


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("- name: a\n  parameters:\n    type: object\n    properties:\n      on: {type: boolean}\n",
         "[0].parameters.properties: the key True is no text"),
        ("- name: a\n  parameters:\n    type: object\n    properties:\n      1: {type: string}\n",
         "[0].parameters.properties: the key 1 is no text"),
        ("- name: a\n  parameters:\n    type: object\n    properties:\n      day: {default: 2024-01-01}\n",
         "[0].parameters.properties.day.default: YAML reads it as a date"),
        ("- name: a\n  description: !!binary aGVsbG8=\n", "[0].description: YAML reads it as a bytes"),
        ("- name: a\n  tags: !!set {x, y}\n", "[0].tags: YAML reads it as a set"),
    ],
)  # fmt: skip
def test_yaml_that_json_cannot_hold_is_rejected_where_it_is(catalog_dir: Path, content: str, where: str) -> None:
    path = catalog_dir / "odd.yaml"
    path.write_text(content)

    loaded = read_file(path)

    assert loaded.error is not None
    assert loaded.error.startswith(f"{path}: {where}"), loaded.error
    assert loaded.error.endswith("quote it")


def test_yaml_nested_too_deeply_is_rejected_and_holds_back_no_other_file(catalog_dir: Path) -> None:
    (catalog_dir / "deep.yaml").write_text("[" * 1000 + "]" * 1000)
    write_catalog(catalog_dir, "travel", [WEATHER])

    found = scan(catalog_dir)

    assert found["deep"].error == f"{catalog_dir / 'deep.yaml'}: cannot be parsed: nested too deeply"
    assert [f.name for f in found["travel"].functions] == ["get_weather"]


def test_yaml_aliases_that_hold_themselves_or_expand_without_end_are_that_files_error(catalog_dir: Path) -> None:
    (catalog_dir / "loop.yaml").write_text("- &a [*a]\n")
    laughs = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        laughs += f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    (catalog_dir / "laughs.yaml").write_text(laughs)  # 9^10 values once expanded
    # 2,000 functions sharing one schema of eight properties repeat its objects tenfold: an ordinary catalog.
    properties = ", ".join(f"p{i}: {{type: string}}" for i in range(8))
    shared = f"functions:\n  - name: f0\n    parameters: &common {{type: object, properties: {{{properties}}}}}\n"
    shared += "".join(f"  - name: f{i}\n    parameters: *common\n" for i in range(1, 2000))
    (catalog_dir / "shared.yaml").write_text(shared)

    found = scan(catalog_dir)

    assert found["loop"].error == f"{catalog_dir / 'loop.yaml'}: [0][0] holds itself (a YAML alias)"
    assert found["laughs"].error is not None
    assert "aliases repeat it" in found["laughs"].error
    assert found["shared"].error is None
    assert len(found["shared"].functions) == 2000
