"""What a feature column may be called: a name the network's modules, its ONNX graph and infer's outputs can carry."""

from __future__ import annotations

from typing import Any, Optional

from sequifier.config.errors import UserError
from sequifier.config.preprocess import ID_COLUMNS
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS

ROW_IDENTIFIERS = ("sequenceId", "subsequenceId", "windowStartOffset", "itemPosition")  # infer's first columns
PAD_INPUT = "left_pad_lengths"  # the ONNX graph's input of each view's left padding
LONGEST_NAME = 250  # bytes: configs/id_maps/<column>.json within a file name's 255
RESERVED = frozenset({*ID_COLUMNS, *IDENTIFIER_COLUMNS, *ROW_IDENTIFIERS, PAD_INPUT})


def column_name_problem(name: str) -> Optional[str]:
    """Why `name` cannot name a feature column, or None."""
    if not name:
        return "is empty"
    if "." in name:
        return "holds a '.', which the network's module names cannot"
    if "/" in name or "\\" in name:
        return "holds a path separator ('/' or '\\'), which infer's per-target output folders cannot"
    if any(ord(character) < 32 or ord(character) == 127 for character in name):
        return "holds a control character (a tab, a line break, ...), which infer's output folders and files cannot"
    if len(name.encode()) > LONGEST_NAME:
        return (
            f"is {len(name.encode())} bytes long; at most {LONGEST_NAME} are allowed, since infer names a folder per "
            "target after it and a static id map is <column>.json (a file name holds 255 bytes)"
        )
    if name.isdigit():
        return "is only digits, which an ONNX graph's input names cannot be"
    if name in RESERVED:
        reserved = ", ".join(sorted(RESERVED))
        return f"is reserved for the identifiers of stored windows, infer's outputs and the ONNX graph ({reserved})"
    return None


def names_in(schema: Any, path: object) -> list[str]:
    """The column names of the Arrow `schema` read from the file `path`, refused when one is not UTF-8 text."""
    try:
        return schema.names
    except UnicodeDecodeError:
        raise names_not_utf8(path) from None


def names_not_utf8(path: object) -> UserError:
    """The refusal of a file holding a column name that is not UTF-8 text (Arrow fails to decode it)."""
    return UserError(
        str(path),
        "has a column name that is not UTF-8 text (saved in another encoding); save the file with UTF-8 names",
    )
