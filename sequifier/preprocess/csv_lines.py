"""Where in a csv file Arrow's reader refused it: the line of the record its error describes (a field count other
than the header's, or the value a column could not convert), found by reading the file again with Python's csv
module, which counts lines as an editor does. Only a refusal pays for the second reading."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Optional

_FIELD_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")
_INVALID_VALUE = re.compile(r"CSV column #(\d+): CSV conversion error to [^:]+: invalid value '(.*)'", re.DOTALL)
_LONGEST_FIELD = 1 << 30


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
