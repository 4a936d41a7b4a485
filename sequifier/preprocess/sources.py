"""Input sources: the CSV/Parquet file(s) to read, their unified schema, and a stream of record batches."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq

from sequifier.config.entries import not_utf8, shown
from sequifier.config.errors import UserError, missing_folder, special_file
from sequifier.config.preprocess import READ_FORMATS, PreprocessConfig
from sequifier.data.column_names import names_in, names_not_utf8
from sequifier.preprocess.csv_lines import refused_line, unclosed_quote_line
from sequifier.preprocess.idmaps import text_spellings
from sequifier.preprocess.progress import log

BATCH_ROWS = 1 << 16
PARQUET_BUFFER_BYTES = 1 << 20
# CSV blocks: the streaming reader keeps a few dozen blocks read ahead, so this bounds its memory.
CSV_BLOCK_BYTES = 1 << 20
# Leading bytes of a CSV file its column types are inferred from.
CSV_INFER_BYTES = 8 << 20
_CSV_COLUMN = re.compile(r"CSV column #(\d+)")
_LONG_DIGITS = re.compile(rb"[0-9]{16}")
_NUMBER = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?\s*$|^\s*[+-]?(inf|infinity|nan)\s*$"
# Only an empty field (or "") is a missing value, in every column: words such as NA or null are data, as in Parquet.
_CSV_MISSING = {"null_values": [""], "strings_can_be_null": True}
# A quoted field may hold line breaks: the reader then splits blocks where a record ends, not where a line does.
_CSV_PARSE = pv.ParseOptions(newlines_in_values=True)
_LONG_ROW = (
    "holds a row longer than the csv reader's {} MiB blocks allow; convert the file to parquet, which has no such limit"
)


@dataclass(frozen=True)
class Batch:
    """Some consecutive rows of one input file, cast to the source schema."""

    file: Path
    first_row: int  # index of the batch's first row within its file, from 0
    data: pa.RecordBatch
    units: int  # progress units consumed so far: rows, or bytes for CSV without max_rows

    def where(self, row: int) -> str:
        """'row N of FILE', counting data rows from 1 (a CSV header is not a row)."""
        return f"row {self.first_row + row + 1} of {self.file}"


@dataclass(frozen=True)
class InputSource:
    """Files in reading order and, per column, the one type every file's values are cast to."""

    files: tuple[Path, ...]
    read_format: str
    file_schemas: tuple[pa.Schema, ...]
    schema: pa.Schema  # the first file's columns until `restricted` picks and unifies the columns to read
    max_rows: Optional[int]
    total_rows: Optional[int]  # known for parquet
    total_bytes: int
    rounded_integers: dict[str, tuple[Path, str]]  # csv float columns holding an integer floats round: (file, it)

    @property
    def progress_total(self) -> Optional[int]:
        """Total progress units of one pass (see Batch.units)."""
        if self.total_rows is not None:
            return min(self.total_rows, self.max_rows or self.total_rows)
        return self.max_rows or self.total_bytes

    def restricted(self, names: Sequence[str]) -> "InputSource":
        """The source reading only `names`, which every file must have, with one type per column."""
        for path, schema in zip(self.files, self.file_schemas):
            for name in names:
                if name not in schema.names:
                    raise UserError(name, f"column is missing from {path}")
        fields = [
            pa.field(
                name, _unified_type(name, [(p, s.field(name).type) for p, s in zip(self.files, self.file_schemas)])
            )
            for name in names
        ]
        return replace(self, schema=pa.schema(fields))


def input_files(config: PreprocessConfig) -> list[Path]:
    """The input file, or the folder's files of read_format in name order (hidden files skipped)."""
    path = Path(config.preprocessing_data_path)
    if path.is_file():
        return [path]
    if special := special_file(path):
        raise UserError(str(path), f"is {special}, not a data file or folder")
    if not path.is_dir():
        raise UserError(str(path), "data file or folder not found" + missing_folder(path))
    if path.resolve() == (Path(config.project_root) / "data").resolve():
        raise UserError(
            str(path),
            "the input folder is the output folder (<project_root>/data); move the input files into a subfolder",
        )
    suffixes = {s for s, f in READ_FORMATS.items() if f == config.read_format}
    files = sorted(
        p for p in path.iterdir() if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith(".")
    )
    nested = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.suffix.lower() in suffixes and p.parent != path
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )  # fmt: skip
    unnamed = next((p.relative_to(path) for p in [*files, *nested] if not_utf8(str(p.relative_to(path)))), None)
    if unnamed is not None:
        raise UserError(str(path), f"holds {shown(str(unnamed))!r}, whose name is not UTF-8 (shown as ?); rename it")
    if nested:
        raise UserError(
            str(path),
            f"its subfolder {nested[0].parent.relative_to(path)} holds {config.read_format} files, which preprocess "
            "would not read: it reads the files directly in the input folder (partition folders such as year=2020/ "
            "are not read); move them up, or point preprocessing_data_path at the subfolder",
        )
    if not files:
        raise UserError(str(path), f"the input folder holds no {config.read_format} files")
    return files


COMPRESSED_MAGIC = (  # the first bytes of compressed files, which no text file starts with
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
)


def _printable(text: str) -> str:
    """`text` on one line, with characters a terminal would act on (control bytes of binary data) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))


def _decoded(arrow_type: pa.DataType) -> pa.DataType:
    """The type values are read in: a dictionary's values; strings for string views."""
    if pa.types.is_dictionary(arrow_type):
        return _decoded(arrow_type.value_type)
    return pa.string() if arrow_type == pa.string_view() else arrow_type


def _csv_head(path: Path) -> bytes:
    """The file's first CSV_INFER_BYTES, in whole lines."""
    with open(path, "rb") as handle:
        head = handle.read(CSV_INFER_BYTES)
        if handle.read(1):
            head = head[: head.rfind(b"\n") + 1]
            if head.count(b"\n") < 2:
                raise UserError(str(path), _LONG_ROW.format(CSV_INFER_BYTES >> 20))
    return head


def _head_as_text(head: bytes, names: list[str]) -> pa.Table:
    """The columns `names` of a csv head, as the text they hold."""
    return pv.read_csv(
        pa.py_buffer(head),
        read_options=pv.ReadOptions(use_threads=False),
        parse_options=_CSV_PARSE,
        convert_options=pv.ConvertOptions(
            include_columns=names, column_types={name: pa.string() for name in names}, **_CSV_MISSING
        ),
    )


def first_non_number(path: Path, name: str) -> tuple[int, str] | None:
    """The first row (counted from 1) and value of a csv column, within the head its type was inferred from,
    that does not read as a number."""
    column = _head_as_text(_csv_head(path), [name]).column(name)
    number = pc.match_substring_regex(column, _NUMBER, ignore_case=True)
    rows = np.flatnonzero(pc.fill_null(pc.invert(number), False).to_numpy(zero_copy_only=False))
    return (int(rows[0]) + 1, column[int(rows[0])].as_py()) if len(rows) else None


def _csv_schema(path: Path) -> tuple[pa.Schema, dict[str, str]]:
    """Column types inferred from the file's first CSV_INFER_BYTES (whole lines), and the float columns there
    that hold integers floats cannot (`_rounded_integers`)."""
    head = _csv_head(path)
    if not head.strip():
        raise UserError(str(path), "the input file is empty")
    if head.startswith(b"PAR1"):
        raise UserError(str(path), "is a Parquet file (it starts with PAR1), not csv: set read_format: parquet")
    compression = next((name for magic, name in COMPRESSED_MAGIC if head.startswith(magic)), None)
    if compression:
        raise UserError(
            str(path),
            f"is {compression}-compressed; csv inputs must be plain text: decompress it, or convert it to parquet",
        )
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:4096]:
        raise UserError(str(path), "is UTF-16 or binary, not UTF-8 text; save the input as UTF-8 (or as parquet)")
    unclosed = unclosed_quote_line(path)
    if unclosed is not None:
        raise UserError(
            str(path),
            f"the row that starts on line {unclosed} opens a quoted value that no quote closes, so it would take in "
            'every line after it; close the value, or write a quote inside a value as two ("")',
        )
    header = next(line for line in head.splitlines() if line.strip()).decode("utf-8", errors="replace").strip()
    if "," not in header:
        raise UserError(
            str(path),
            f"its header {_printable(header)[:60]!r} holds no comma: csv fields must be separated by commas "
            "(sequenceId, itemPosition and at least one feature column)",
        )
    if b"\n" not in head.rstrip():
        head = head.rstrip() + b"\n"  # a header without its line break: Arrow would find no line to name columns
    try:
        table = pv.read_csv(
            pa.py_buffer(head),
            read_options=pv.ReadOptions(use_threads=False),
            parse_options=_CSV_PARSE,
            convert_options=pv.ConvertOptions(**_CSV_MISSING),
        )
    except pa.ArrowInvalid:  # e.g. a quoted field with line breaks cut at the end of the head
        reader = pv.open_csv(
            path,
            read_options=pv.ReadOptions(block_size=CSV_BLOCK_BYTES),
            parse_options=_CSV_PARSE,
            convert_options=pv.ConvertOptions(**_CSV_MISSING),
        )
        schema = reader.schema
        reader.close()
        return schema, {}
    names_in(table.schema, path)
    return table.schema, _rounded_integers(head, table.schema)


def _rounded_integers(head: bytes, schema: pa.Schema) -> dict[str, str]:
    """{column: literal} for the head's float columns holding an integer literal beyond 2**53, which reading the
    column as floats (beside fractions, or beyond the 64-bit integers) rounds."""
    floats = [field.name for field in schema if pa.types.is_floating(field.type)]
    if not floats or not _LONG_DIGITS.search(head):  # the common case, without parsing the head again
        return {}
    text = _head_as_text(head, floats)
    found = {}
    for name in floats:
        column = text.column(name)
        for literal in column.filter(pc.match_substring_regex(column, r"^\s*[+-]?[0-9]{16,}\s*$")).to_pylist():
            if abs(int(literal)) > 2**53:
                found[name] = literal.strip()
                break
    return found


def _file_schema(path: Path, read_format: str) -> tuple[pa.Schema, dict[str, str]]:
    """The file's columns (dictionaries as their values), and a csv's float columns that hold integers floats
    cannot."""
    try:
        schema, rounded = _csv_schema(path) if read_format == "csv" else (pq.read_schema(path), {})
    except pa.ArrowInvalid as error:
        if read_format == "csv":
            raise _csv_problem(path, error, ()) from None
        hint = "; for a csv file, set read_format: csv" if path.suffix.lower() == ".csv" else ""
        raise UserError(str(path), f"cannot read as {read_format} ({_printable(str(error))}){hint}") from None
    except OSError as error:
        raise UserError(str(path), f"cannot read as {read_format} ({_printable(str(error))})") from None
    except UnicodeDecodeError:
        raise names_not_utf8(path) from None
    names = names_in(schema, path)
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(
            str(path), f"has more than one column named {', '.join(map(repr, repeated))}; names must be unique"
        )
    return pa.schema([pa.field(f.name, _decoded(f.type)) for f in schema]), rounded


def _type_family(arrow_type: pa.DataType) -> object:
    """Types whose values cast into one another without loss: string/large_string, else the type itself."""
    return "string" if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) else arrow_type


def _unified_type(name: str, typed: list[tuple[Path, pa.DataType]]) -> pa.DataType:
    known = [(p, t) for p, t in typed if not pa.types.is_null(t)]
    if not known:
        return pa.null()
    first_path, first = known[0]
    numeric = all(pa.types.is_integer(t) or pa.types.is_floating(t) for _, t in known)
    if numeric and any(pa.types.is_floating(t) for _, t in known):
        if all(t == first for _, t in known):
            return first
        return pa.float32() if all(pa.types.is_float16(t) or pa.types.is_float32(t) for _, t in known) else pa.float64()
    if numeric:
        return pa.int64() if any(t != first for _, t in known) else first
    for path, arrow_type in known:
        if _type_family(arrow_type) != _type_family(first):
            words = any(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (first, arrow_type))
            csv = any(p.suffix.lower() == ".csv" for p in (first_path, path))
            hint = (
                "; a word among a csv's numbers (a header repeated, say) makes its column text" if words and csv else ""
            )
            empty = [str(p) for p in (first_path, path) if _parquet_without_rows(p)]
            if empty:
                hint += f"; {empty[0]} holds no rows, yet its columns' types must agree: remove it or give it theirs"
            raise UserError(name, f"has type {first} in {first_path} but {arrow_type} in {path}{hint}")
    return first


def _parquet_without_rows(path: Path) -> bool:
    try:
        return pq.ParquetFile(path).metadata.num_rows == 0
    except (OSError, pa.ArrowException, UnicodeDecodeError):
        return False  # reading its schema names what is wrong


def open_source(config: PreprocessConfig, reused_maps: Mapping[str, dict[str, int]] | None = None) -> InputSource:
    """Inspect every input file's schema (Parquet footers, the head of each CSV file).

    A csv column that `reused_maps` (the id maps of reused metadata) spell as text is read as text, as a declared
    categorical column is.
    """
    files = input_files(config)
    read = [_file_schema(path, config.read_format) for path in files]
    schemas = tuple(schema for schema, _ in read)
    if config.read_format == "csv" and all(all(pa.types.is_null(f.type) for f in schema) for schema in schemas):
        raise UserError(str(config.preprocessing_data_path), "the input has no rows (only a header)")
    rounded = {}
    for path, (_, columns) in zip(files, read):
        for name, literal in columns.items():
            rounded.setdefault(name, (path, literal))
    if config.read_format == "csv":
        categorical = list(config.categorical_columns or ()) + _text_spelled(schemas[0], reused_maps or {}, config)
        schemas = tuple(_declared_types(schema, categorical, config.real_columns or ()) for schema in schemas)
    total_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files) if config.read_format == "parquet" else None
    return InputSource(
        files=tuple(files),
        read_format=config.read_format,
        file_schemas=schemas,
        schema=schemas[0],
        max_rows=config.max_rows,
        total_rows=total_rows,
        total_bytes=sum(p.stat().st_size for p in files),
        rounded_integers=rounded,
    )


def _text_spelled(schema: pa.Schema, reused_maps: Mapping[str, dict[str, int]], config: PreprocessConfig) -> list[str]:
    """Undeclared csv columns whose reused id map spells its values as text ('007', 'TRUE'), logged."""
    declared = set(config.categorical_columns or ()) | set(config.real_columns or ())
    found = []
    for field in schema:
        if field.name not in reused_maps or field.name in declared:
            continue
        spelled = text_spellings(reused_maps[field.name], field.type)
        if spelled:
            found.append(field.name)
            shown = ", ".join(repr(name) for name in spelled[:3]) + (", ..." if len(spelled) > 3 else "")
            log(
                f"{field.name!r} is read as text: {config.metadata_config_path} spells values as this input's "
                f"{field.type} values would not be ({shown})"
            )
    return found


def _declared_types(schema: pa.Schema, categorical: Sequence[str], real: Sequence[str]) -> pa.Schema:
    """A csv's declared columns read as declared, not as the file's head suggests: categorical ones as the text they
    hold ('007' and '7', 'true' and 'TRUE' stay apart), real ones that the head shows as integers as floats (so that
    a fraction further down is read)."""

    def declared(field: pa.Field) -> pa.Field:
        if field.name in categorical:
            return pa.field(field.name, pa.string())
        if field.name in real and pa.types.is_integer(field.type):
            return pa.field(field.name, pa.float64())
        return field

    return pa.schema([declared(f) for f in schema])


def _cast(batch: pa.RecordBatch, schema: pa.Schema, path: Path, source: InputSource) -> pa.RecordBatch:
    """The batch's columns in the type the files of the input share; a value that type cannot hold is refused."""
    arrays = []
    for field in schema:
        array = batch.column(field.name)
        if array.type != field.type:
            try:
                array = array.cast(field.type)
            except pa.ArrowInvalid as error:
                raise UserError(field.name, _cast_problem(field, array.type, path, source, error)) from None
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _cast_problem(field: pa.Field, own: pa.DataType, path: Path, source: InputSource, error: Exception) -> str:
    others = [(p, s.field(field.name).type) for p, s in zip(source.files, source.file_schemas) if p != path]
    other_path, other_type = next(((p, t) for p, t in others if t != own), (None, field.type))
    beside = f" but {other_type} in {other_path}" if other_path is not None else ""
    return (
        f"is {own} in {path}{beside}, so the files' values are read as {field.type}, which cannot hold one of "
        f"{path.name}'s ({' '.join(str(error).split())[:200]}); give the column one type in every file"
    )


def _csv_problem(path: Path, error: Exception, header: Sequence[str]) -> UserError:
    text = _printable(str(error))
    if "straddling object" in text:
        return UserError(str(path), _LONG_ROW.format(CSV_BLOCK_BYTES >> 20))
    line = refused_line(path, str(error))
    at = f" at line {line}" if line else ""
    match = _CSV_COLUMN.search(text)
    if match and int(match.group(1)) < len(header):
        return UserError(header[int(match.group(1))], f"cannot read {path}{at}: {text}")
    return UserError(str(path), f"cannot read as csv{at} ({text})")


def _file_batches(
    path: Path, read_format: str, schema: pa.Schema, header: Sequence[str]
) -> Iterator[tuple[pa.RecordBatch, int]]:
    """(batch, bytes of the file consumed so far; 0 for parquet) for one file."""
    if read_format == "parquet":
        # Buffered page reads keep memory independent of row-group size (pre-buffered chunks would stay allocated).
        # Pages written with checksums are verified, so their corruption is an error instead of wrong values.
        try:
            parquet = pq.ParquetFile(
                path, pre_buffer=False, buffer_size=PARQUET_BUFFER_BYTES, page_checksum_verification=True
            )
            for row_group in range(parquet.num_row_groups):
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[row_group], columns=schema.names):
                    _check_text(batch, path)
                    yield batch, 0
        except (pa.ArrowException, OSError) as error:
            raise UserError(str(path), f"cannot read as parquet ({' '.join(str(error).split())[:200]})") from None
        return
    types = {f.name: f.type for f in schema if not pa.types.is_null(f.type)}
    with pa.OSFile(str(path)) as handle:
        try:
            reader = pv.open_csv(
                handle,
                read_options=pv.ReadOptions(block_size=CSV_BLOCK_BYTES),
                parse_options=_CSV_PARSE,
                convert_options=pv.ConvertOptions(include_columns=schema.names, column_types=types, **_CSV_MISSING),
            )
            for batch in reader:
                yield batch, handle.tell()
        except pa.ArrowInvalid as error:
            if _only_a_header(path):
                return
            raise _csv_problem(path, error, header) from None


def _check_text(batch: pa.RecordBatch, path: Path) -> None:
    """Parquet strings are UTF-8 by the format, which its readers do not check: text in another encoding is named."""
    for name, column in zip(batch.schema.names, batch.columns):
        values = column.dictionary if pa.types.is_dictionary(column.type) else column
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            continue
        try:
            values.validate(full=True)
        except pa.ArrowInvalid:
            raise UserError(
                name, f"holds bytes that are not UTF-8 text in {path} (written in another encoding); write it as UTF-8"
            ) from None


def _only_a_header(path: Path) -> bool:
    """The file is one line, without the line break Arrow's reader needs to take it as a header."""
    if path.stat().st_size > CSV_INFER_BYTES:
        return False
    return b"\n" not in path.read_bytes().rstrip()


def iter_batches(source: InputSource, columns: Sequence[str]) -> Iterator[Batch]:
    """The input's rows in file order, restricted to `columns` and to the first max_rows rows."""
    schema = pa.schema([source.schema.field(c) for c in columns])
    by_rows = source.read_format == "parquet" or source.max_rows is not None
    rows_seen = bytes_before = 0
    for path, file_schema in zip(source.files, source.file_schemas):
        first_row = 0
        for batch, file_bytes in _file_batches(path, source.read_format, schema, file_schema.names):
            if source.max_rows is not None:
                batch = batch.slice(0, source.max_rows - rows_seen)
            rows_seen += batch.num_rows
            if batch.num_rows:
                units = rows_seen if by_rows else bytes_before + file_bytes
                yield Batch(path, first_row, _cast(batch, schema, path, source), units)
            first_row += batch.num_rows
            if source.max_rows is not None and rows_seen >= source.max_rows:
                return
        bytes_before += path.stat().st_size
