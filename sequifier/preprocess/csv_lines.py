"""Lines of a csv file that Arrow's reader does not name: the record its error describes (a field count other than
the header's, or the value a column could not convert), and a quoted value no quote closes, which Arrow takes in
with the rest of the file without a word. Python's csv module reads the file again for them, counting lines as an
editor does; only a refusal, or a file with an odd count of quote characters, pays for that reading."""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path
from typing import Optional

_FIELD_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")
_INVALID_VALUE = re.compile(r"CSV column #(\d+): CSV conversion error to [^:]+: invalid value '(.*)'", re.DOTALL)
_LONGEST_FIELD = 1 << 30
_COUNTED_BYTES = 8 << 20


def refused_line(path: Path, error_text: str) -> Optional[int]:
    """The line (from 1, the header's being 1) where the record `error_text` describes ends; None when the text
    names no such record or the file reads differently here."""
    count, invalid = _FIELD_COUNT.search(error_text), _INVALID_VALUE.search(error_text)
    if not count and not invalid:
        return None
    csv.field_size_limit(max(csv.field_size_limit(), _LONGEST_FIELD))
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            records = csv.reader(handle)
            header = next((record for record in records if record), None)
            if header is None:
                return None
            for record in records:
                if not record:  # Arrow skips empty lines too
                    continue
                if count and len(record) != len(header):
                    return records.line_num
                if invalid:
                    column = int(invalid.group(1))
                    if column < len(record) and record[column] == invalid.group(2):
                        return records.line_num
    except (csv.Error, OSError):
        return None
    return None


def unclosed_quote_line(path: Path) -> Optional[int]:
    """The line (from 1) where a quoted value starts that no quote closes before the file ends; None when there is
    none. Opening and closing quotes, and the two of a quote inside a quoted value, come in pairs: a file whose
    quote characters are even in number has none (the odd ones out are quotes inside unquoted values, as 5")."""
    if _quote_characters(path) % 2 == 0:
        return None
    csv.field_size_limit(max(csv.field_size_limit(), _LONGEST_FIELD))
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            records, next_start, last_start = csv.reader(handle), 1, None
            for _ in records:
                last_start, next_start = next_start, records.line_num + 1
        if last_start is None:
            return None
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            for _ in csv.reader(itertools.islice(handle, last_start - 1, None), strict=True):
                pass
    except csv.Error as error:
        return last_start if "unexpected end of data" in str(error) else None
    except OSError:
        return None
    return None


def _quote_characters(path: Path) -> int:
    count = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_COUNTED_BYTES):
            count += chunk.count(b'"')
    return count
