"""A flag given an empty value is refused by the parser (exit 2) instead of silently meaning the config's value."""

from __future__ import annotations

import pytest

from sequifier import cli


@pytest.mark.parametrize(
    "argv",
    [
        ["infer", "--model-path", ""],
        ["infer", "--data-path", " "],
        ["preprocess", "--data-path", ""],
        ["train", "--model-name", ""],
        ["train", "--config-path", ""],
        ["make", ""],
    ],
)
def test_an_empty_flag_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert "must not be empty" in capsys.readouterr().err
