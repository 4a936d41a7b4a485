"""read_yaml_mapping: plain data from a YAML file, or one UserError naming the file."""

from __future__ import annotations

import pytest

from sequifier.config.errors import UserError
from sequifier.config.files import nesting, read_yaml_mapping


def write(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def problem_of(path) -> str:
    with pytest.raises(UserError) as error:
        read_yaml_mapping(path)
    assert error.value.where == str(path)
    return error.value.problem


def test_reads_mapping_and_resolves_interpolations(tmp_path):
    path = write(tmp_path, "a: 1\nb:\n  c: [x, y]\n  d: ${a}\nlr: 1e-4\n")
    assert read_yaml_mapping(path) == {"a": 1, "b": {"c": ["x", "y"], "d": 1}, "lr": 1e-4}


def test_empty_file_is_an_empty_mapping(tmp_path):
    assert read_yaml_mapping(write(tmp_path, "")) == {}


def test_missing_file(tmp_path):
    assert "not found" in problem_of(tmp_path / "absent.yaml")


def test_folder_is_not_a_config_file(tmp_path):
    assert problem_of(tmp_path) == "is a folder, not a config file"


def test_nesting_beyond_any_config_is_refused_before_omegaconf_recurses(tmp_path):
    deep = "1"
    for _ in range(100):
        deep = "{a: " + deep + "}"
    assert "nests mappings and lists more than 32 levels deep" in problem_of(write(tmp_path, f"x: {deep}\n"))
    assert nesting(read_yaml_mapping(write(tmp_path, "x: " + "[" * 20 + "]" * 20 + "\n"))) == 21


def test_an_alias_inside_what_it_names_is_refused(tmp_path):
    assert "stands inside the mapping or list it names" in problem_of(write(tmp_path, "a: 1\nx: &loop [1, *loop]\n"))


def test_aliases_that_expand_beyond_any_config_are_refused(tmp_path):
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    problem = problem_of(write(tmp_path, "\n".join(lines) + "\n"))
    assert "YAML aliases (*name) expand to more than 100,000 values" in problem
    shared = "base: &base {lr: 1, layers: [1, 2]}\n" + "".join(f"run{i}: *base\n" for i in range(50))
    assert read_yaml_mapping(write(tmp_path, shared))["run49"] == {"lr": 1, "layers": [1, 2]}


def test_a_duplicate_anchor_is_named(tmp_path):
    problem = problem_of(write(tmp_path, "a: &m 1\nb: &m 2\n"))
    assert "found duplicate anchor 'm'; first occurrence" in problem and "second occurrence" in problem


def test_syntax_error_names_line_and_column(tmp_path):
    problem = problem_of(write(tmp_path, "a: 1\nb: [x\nc: 2\n"))
    assert problem.startswith("YAML syntax error at line 3, column 2:")


@pytest.mark.parametrize("key", ["~", "null"])
def test_a_null_key_names_its_line_and_how_to_write_it_as_text(key, tmp_path):
    problem = problem_of(write(tmp_path, f"a: 1\nb:\n  - c: {{d: 2, {key}: 3}}\n"))
    assert problem.startswith("YAML error at line 3, column 15: a key is null, which names no field; write the field")


def test_duplicate_key_names_its_line(tmp_path):
    problem = problem_of(write(tmp_path, "a: 1\nb: 2\na: 3\n"))
    assert problem.startswith("YAML syntax error at line 3")
    assert "duplicate key" in problem


@pytest.mark.parametrize(
    ("text", "kind"),
    [("- a\n- b\n", "list"), ("5\n", "int"), ("2.5\n", "float"), ("just a string\n", "str")],
    ids=["list", "int", "float", "string"],
)
def test_non_mapping(tmp_path, text, kind):
    assert f"must contain a mapping of fields at the top level, not a {kind}" in problem_of(write(tmp_path, text))


def test_unresolvable_interpolation(tmp_path):
    problem = problem_of(write(tmp_path, "a: ${missing}\n"))
    assert problem.startswith("cannot resolve interpolation:")
    assert "missing" in problem
