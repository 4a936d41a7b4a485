"""Row checks of one input batch: integer identifiers, finite reals, present (and not NaN) split values.

Errors name the column, row and file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.preprocess.sources import Batch

INT64_MAX = np.iinfo(np.int64).max
FLOATS_FROM = "write the column as integers (in a csv, without forms such as 5.0 or 1e3, which make it floats)"
OUTSIDE_INT64 = "is outside the 64-bit signed integer range identifiers are stored in (-2**63 to 2**63 - 1)"


def _first_null(column: pa.Array) -> int:
    return int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])


def identifier_values(batch: Batch, name: str) -> np.ndarray:
    """int64 values of sequenceId/itemPosition; missing or non-integer values are errors."""
    column = batch.data.column(name)
    if column.null_count:
        raise UserError(name, f"has a missing value at {batch.where(_first_null(column))}")
    if pa.types.is_integer(column.type):
        values = column.to_numpy(zero_copy_only=False)
        if values.dtype == np.uint64 and len(values) and values.max() > INT64_MAX:
            row = int(np.argmax(values > INT64_MAX))
            raise UserError(name, f"{values[row]} at {batch.where(row)} {OUTSIDE_INT64}")
        return values.astype(np.int64, copy=False)
    if pa.types.is_floating(column.type):
        width = column.to_numpy(zero_copy_only=False)
        exact_bits = np.finfo(width.dtype).nmant + 1  # 53 for float64, 24 for float32, 11 for float16
        values = width.astype(np.float64, copy=False)
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise UserError(name, f"must hold integers, found {float(values[row])!r} at {batch.where(row)}")
        outside = (values < -(2.0**63)) | (values >= 2.0**63)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            raise UserError(name, f"{float(values[row])!r} at {batch.where(row)} {OUTSIDE_INT64}")
        inexact = np.abs(values) >= 2.0**exact_bits
        if inexact.any():
            row = int(np.flatnonzero(inexact)[0])
            raise UserError(
                name,
                f"{float(values[row])!r} at {batch.where(row)} is 2**{exact_bits} or beyond in a {width.dtype} "
                f"column, which cannot hold such integers exactly (neighbouring values become one); {FLOATS_FROM}",
            )
        return values.astype(np.int64)
    text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    if text and batch.file.suffix.lower() == ".csv":
        # a word in a csv's head (e.g. a header repeated where files were joined) makes the column text throughout
        words = pc.invert(pc.match_substring_regex(column, r"^\s*[+-]?[0-9]+\s*$")).to_numpy(zero_copy_only=False)
        if words.any():
            row = int(np.flatnonzero(words)[0])
            raise UserError(name, f"must hold integers, found {column[row].as_py()!r} at {batch.where(row)}")
        try:
            return pc.cast(pc.utf8_trim_whitespace(column), pa.int64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:  # beyond int64
            pass
    raise UserError(name, f"must hold integers, found type {column.type} in {batch.file}")


def check_window_positions(batch: Batch, positions: np.ndarray, window_length: int) -> None:
    """Positions whose window start (up to window_length - 1 slots of padding before them) or split end (one
    past them) would fall outside the 64-bit integers the stored windows hold them in."""
    lowest, highest = -(2**63) + window_length - 1, 2**63 - 2
    outside = (positions < lowest) | (positions > highest)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise UserError(
            "itemPosition",
            f"{positions[row]} at {batch.where(row)} is too close to the 64-bit integer limits: stored windows "
            f"also hold the position of their first padded slot and one past a split's last item, so with "
            f"window_length {window_length} positions must lie within {lowest} to {highest}",
        )


def check_reals(batch: Batch, names: list[str]) -> None:
    """Real columns must have no missing, NaN or infinite values."""
    for name in names:
        column = batch.data.column(name)
        if column.null_count:
            raise UserError(name, f"real column has a missing value at {batch.where(_first_null(column))}")
        values = pc.cast(column, pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # ints beyond 2**53 round
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise UserError(name, f"real column has a NaN/infinite value ({float(values[row])}) at {batch.where(row)}")


def first_real(batch: Batch, name: str) -> float:
    """The first value of a real column of the batch, as the float64 the moments sum (checked by check_reals)."""
    return float(pc.cast(batch.data.column(name).slice(0, 1), pa.float64(), safe=False)[0].as_py())


def check_present(batch: Batch, name: str, role: str) -> None:
    """Every value present and, in a floating point column, not NaN (which no cutoff orders)."""
    column = batch.data.column(name)
    if column.null_count:
        raise UserError(name, f"{role} has a missing value at {batch.where(_first_null(column))}")
    if pa.types.is_floating(column.type):
        nan = pc.is_nan(column).to_numpy(zero_copy_only=False)
        if nan.any():
            row = int(np.flatnonzero(nan)[0])
            raise UserError(name, f"{role} has a NaN value at {batch.where(row)}, which no split_values cutoff orders")
