"""Readers that turn source files into `Item`s for a pool.

Formats: the PERSPECTRUM upstream pools (`perspective_pool_v1.0.json`, `evidence_pool*_v1.0.json`),
generic JSON / JSONL / CSV / TSV with an id and a text column (other columns become metadata), and
plain text (one item per line, ids derived from the text so they are stable across re-orderings).

Readers never raise on one bad record: they collect `InputError`s with file, line and reason, so the
caller can refuse the whole file (the default: nothing half-ingested) or skip the bad records.
Whole-file problems (missing, empty, binary, wrong encoding) raise at once.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
import sys
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perspect.core.errors import InputError
from perspect.core.types import Item

ID_FIELDS = ("id", "pId", "eId", "pid", "eid", "_id", "doc_id", "uid")
TEXT_FIELDS = ("text", "perspective", "evidence", "sentence", "body", "content", "title")
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
DELIMITED = {".csv": ",", ".tsv": "\t"}
MAX_TEXT_CHARS = 100_000


def normalize_text(text: str) -> str:
    """Unicode NFC and single spaces: the same sentence typed twice must index (and dedupe) the same."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def text_id(text: str, prefix: str = "t") -> str:
    """Content-derived id for sources that have none; stable across runs and file orderings."""
    return prefix + hashlib.sha1(text.casefold().encode("utf-8")).hexdigest()[:16]


@dataclass
class ReadReport:
    """What a reader got out of one file."""

    path: str
    items: list[Item] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    duplicate_texts: int = 0

    def check(self, skip_bad: bool = False, max_shown: int = 5) -> None:
        """Raise one InputError summarising bad records unless the caller chose to skip them."""
        if self.errors and not skip_bad:
            shown = "\n  ".join(str(e) for e in self.errors[:max_shown])
            more = len(self.errors) - max_shown
            tail = f"\n  ... and {more} more" if more > 0 else ""
            raise InputError(
                self.path,
                f"{len(self.errors)} bad record(s); nothing was indexed:\n  {shown}{tail}",
                hint="fix the file, or pass --skip-bad to index the good records and skip these",
            )
        if not self.items:
            raise InputError(self.path, "no usable records in this file")


# Byte-order marks of the Unicode encodings a text editor saves: a file that starts with one is
# read in that encoding (UTF-16 files are full of NUL bytes and must not be called binary).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def read_text_file(path: str | Path, encoding: str = "utf-8") -> str:
    """Read a whole text file, refusing missing, empty, binary and wrongly encoded files clearly.
    A UTF-8/16/32 byte-order mark picks its encoding; a NUL anywhere else means binary data (a NUL
    stored in a text would reach every reader of the index)."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "no such file")
    if p.is_dir():
        raise InputError(str(p), "is a folder, expected a file")
    try:
        data = p.read_bytes()
    except OSError as e:  # unreadable (permissions, a dead disk): the person can fix it
        raise InputError(str(p), f"cannot read the file ({e.strerror or e})") from None
    if p.suffix.lower() == ".gz":  # a corpus as it ships (news/allsides_articles.jsonl.gz)
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(str(p), f"not a readable gzip file ({e})") from None
    bom = next((enc for mark, enc in _BOMS if data.startswith(mark)), None)
    if bom is None and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"
    enc = bom or encoding
    try:
        text = data.decode(enc)
    except UnicodeError as e:  # a codec such as punycode raises the base class, without .start
        start = min(getattr(e, "start", 0), max(len(data) - 1, 0))
        line = data[:start].count(b"\n") + 1
        if bom is None and b"\x00" in data[:8192]:
            raise InputError(
                str(p), "looks like a binary file (NUL bytes), expected text"
            ) from None
        raise InputError(
            str(p),
            f"not valid {enc} (byte 0x{data[start]:02x})",
            line=line,
            hint="convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)",
        ) from None
    except LookupError:
        raise InputError(str(p), f"unknown encoding {encoding!r}") from None
    if not text.strip():
        raise InputError(str(p), "the file is empty")
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputError(
            str(p),
            "NUL byte in the text: a binary file, or binary data inside a text file",
            line=line,
            hint="remove the NUL bytes (e.g. tr -d '\\000'), or pass the right file",
        )
    return text


def _pick(record: dict[str, Any], wanted: str | None, candidates: Iterable[str]) -> str | None:
    if wanted is not None:
        return wanted if wanted in record else None
    for name in candidates:
        if name in record:
            return name
    return None


class _Collector:
    """Turns raw records into Items, tracking duplicates and per-record errors."""

    def __init__(self, path: str, id_field: str | None, text_field: str | None, id_prefix: str):
        self.report = ReadReport(path=path)
        self.unit = "line"  # JSON arrays report "record N": their line numbers say nothing
        self.id_field, self.text_field, self.id_prefix = id_field, text_field, id_prefix
        self._ids: set[str] = set()
        self._texts: set[str] = set()

    def error(self, line: int | None, reason: str) -> None:
        self.report.errors.append(InputError(self.report.path, reason, line=line, unit=self.unit))

    def add_record(self, record: Any, line: int | None) -> None:
        if not isinstance(record, dict):
            self.error(line, f"expected an object with a text field, got {type(record).__name__}")
            return
        tkey = _pick(record, self.text_field, TEXT_FIELDS)
        if tkey is None:
            want = self.text_field or "/".join(TEXT_FIELDS[:3])
            self.error(line, f"missing text field ({want})")
            return
        raw = record[tkey]
        if not isinstance(raw, str):
            self.error(line, f"field {tkey!r} is not text")
            return
        ikey = _pick(record, self.id_field, ID_FIELDS)
        if self.id_field is not None and ikey is None:
            self.error(line, f"missing id field {self.id_field!r}")
            return
        meta = {k: v for k, v in record.items() if k not in (tkey, ikey)}
        self.add(raw, None if ikey is None else record[ikey], meta, line)

    def add(self, raw: str, ident: Any, meta: dict[str, Any], line: int | None) -> None:
        text = normalize_text(raw)
        if not text:
            self.error(line, "empty text")
            return
        if len(text) > MAX_TEXT_CHARS:
            self.error(line, f"text is {len(text):,} characters (limit {MAX_TEXT_CHARS:,})")
            return
        if (why := _unstorable(text)) is not None:
            self.error(line, f"text {why}")
            return
        if (why := _unstorable_metadata(meta)) is not None:
            self.error(line, why)
            return
        if ident is None or (isinstance(ident, str) and not ident.strip()):
            ident = text_id(text, self.id_prefix)
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            self.error(line, f"id must be a string or an integer, got {ident!r}")
            return
        ident = str(ident).strip()
        if (why := _unstorable(ident)) is not None:
            self.error(line, f"id {why}")
            return
        if ident in self._ids:
            self.report.duplicate_ids.append(ident)
            return
        key = text.casefold()
        if key in self._texts:
            self.report.duplicate_texts += 1
        self._texts.add(key)
        self._ids.add(ident)
        self.report.items.append(Item(id=ident, text=text, metadata=meta))


def _unstorable(text: str) -> str | None:
    """Why a text cannot be stored as it is (a JSON escape can carry what a text file cannot)."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    return None


def _unstorable_metadata(meta: dict[str, Any]) -> str | None:
    """Why the other fields of a record cannot be stored: the store keeps them as UTF-8 JSON,
    which SQLite's json functions and the HTTP API's answers must parse again."""
    try:
        json.dumps(meta, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return "a field other than the text holds a lone surrogate (not valid Unicode text)"
    except ValueError:
        return "a field other than the text holds NaN or Infinity (not valid JSON)"
    except RecursionError:
        return "a field other than the text is nested too deeply"
    return None


def _json_error(path: str, e: json.JSONDecodeError, line_offset: int = 0) -> InputError:
    return InputError(path, f"malformed JSON: {e.msg}", line=e.lineno + line_offset)


_LONG_NUMBER = re.compile(rf"\d{{{sys.get_int_max_str_digits() + 1}}}")


def load_json(text: str) -> Any:
    """`json.loads`, with every way it refuses a text raised as a `JSONDecodeError`: nesting
    deeper than Python's stack (RecursionError) and an integer longer than Python converts
    (a plain ValueError) are malformed input too, not crashes of the reader."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    except ValueError:  # the int digit limit (CVE-2020-10735)
        m = _LONG_NUMBER.search(text)
        digits = sys.get_int_max_str_digits()
        msg = f"a number with more than {digits} digits"
        raise json.JSONDecodeError(msg, text, m.start() if m else 0) from None


def read_pool(
    path: str | Path,
    *,
    fmt: str | None = None,
    id_field: str | None = None,
    text_field: str | None = None,
    encoding: str = "utf-8",
    id_prefix: str = "t",
) -> ReadReport:
    """Read a perspective or evidence pool file into Items (see module docstring for formats)."""
    p = Path(path)
    fmt = (fmt or _guess_format(p)).lower()
    content = read_text_file(p, encoding)
    col = _Collector(str(p), id_field, text_field, id_prefix)
    if fmt == "json":
        try:
            data = load_json(content)
        except json.JSONDecodeError as e:
            raise _json_error(str(p), e) from None
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise InputError(str(p), 'expected a JSON list of records (or {"data": [...]})')
        col.unit = "record"
        for i, rec in enumerate(data, start=1):
            col.add_record(rec, i)
    elif fmt == "jsonl":
        for n, line in enumerate(content.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = load_json(line)
            except json.JSONDecodeError as e:
                col.error(n, f"malformed JSON: {e.msg}")
                continue
            col.add_record(rec, n)
    elif fmt in ("csv", "tsv"):
        # newline="": csv's own line splitting, so a quoted field may hold a line break and a
        # file with old Mac line ends (CR alone) reads as lines, not as one broken field
        stream = io.StringIO(content, newline="")
        reader = csv.DictReader(stream, delimiter="," if fmt == "csv" else "\t")
        try:
            header = reader.fieldnames
        except csv.Error as e:  # a header field over csv's size limit, a stray quote ...
            raise InputError(
                str(p), f"malformed {fmt.upper()} header: {e}", line=reader.line_num or 1
            ) from None
        if not header:
            raise InputError(str(p), "no header row")
        try:
            for rec in reader:
                if None in rec:
                    col.error(reader.line_num, "more fields than the header has")
                    continue
                col.add_record(rec, reader.line_num)
        except csv.Error as e:
            col.error(reader.line_num, f"malformed {fmt.upper()}: {e}")
    elif fmt == "txt":
        for n, line in enumerate(content.splitlines(), start=1):
            if line.strip():
                col.add(line, None, {}, n)
    else:
        raise InputError(str(p), f"unknown format {fmt!r}", hint="use json, jsonl, csv, tsv or txt")
    return col.report


def inner_suffix(p: Path) -> str:
    """The suffix that names the format: `.jsonl` of `articles.jsonl.gz`."""
    suffixes = [x.lower() for x in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _guess_format(p: Path) -> str:
    suffix = inner_suffix(p)
    if suffix == ".json":
        return "json"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in DELIMITED:
        return suffix[1:]
    return "txt"


def iter_files(path: Path, suffixes: Iterable[str]) -> Iterator[Path]:
    """Files under a folder with the given suffixes, sorted so that ids and order are reproducible."""
    wanted = set(suffixes)
    yield from sorted(f for f in path.rglob("*") if f.is_file() and f.suffix.lower() in wanted)
