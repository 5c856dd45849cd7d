"""Every input reader fuzzed (hypothesis): PERSPECTRUM JSON, JSON lists, JSONL, CSV, TSV, plain
text, folders of .txt/.md/.html, news articles, saved pages, RSS/Atom feeds and fetched pages.

Why: a person points `perspect index build/add` and `perspect news add` at files and URLs we have
never seen. The contract is that bad input is refused with the product's one-line `InputError`
("file:line: reason") and nothing else: any other exception is a bug. The inputs are the
project's own fixtures mutated (byte flips, truncation, NULs and byte-order marks inserted, other
encodings), generated files with wrong types, missing columns, ragged rows, deep nesting and huge
fields, and random bytes. What a reader accepts must also go into the item store (SQLite, UTF-8
JSON metadata), as an index build does next. `python -m bench fuzz readers` runs the same
properties for minutes per reader; every input that found a bug is kept here as an `@example`."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perspect.core.errors import InputError
from perspect.core.index.store import ItemStore
from perspect.core.progress import NullReporter
from perspect.indexer.indexer import Source, read_source
from perspect.indexer.readers import ID_FIELDS, TEXT_FIELDS, read_pool, read_text_file
from perspect.indexer.web_fetch import (
    Fetched,
    FetchError,
    canonical_url,
    extract_page,
    feed_entries,
    fetch,
    looks_like_feed,
)
from perspect.indexer.web_news import Article, Outcome, _Budget, _collect_url, dedupe, from_object
from tests.conftest import EVIDENCE, NEWS, PERSPECTIVES
from tests.test_documents import ARTICLES, PAGE
from tests.web_fixtures import PARAGRAPHS, article_html, rss

FUZZ = settings(max_examples=100, deadline=None, database=None)
pytestmark = pytest.mark.filterwarnings(
    "ignore::hypothesis.errors.HypothesisWarning",  # the repr of a 200 kB example
    "ignore:To avoid breaking existing software:DeprecationWarning",  # feedparser's own
)

# -- inputs -----------------------------------------------------------------------------------------
HOSTILE = ["\x00", "\ud800", "\ufeff", "\r", "\n", "\u2028", '"', "\\", ",", "\t", "<", "&", "]]>",
           "\x1b[31m", "#", "\u0301", "🦊", "x" * 200_001, "NaN"]  # fmt: skip
NASTY = [b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\r", b"\n",
         b'"', b"\t", b",", b"[", b"{", b"}", b"\\", b"\xff", b"\xc3", b"<", b">", b"&#xD800;",
         b"]]>", b"<!--", b"<![CDATA[", b"\\ud800", b"NaN", b"1" * 5000, b"[" * 3000]  # fmt: skip
ENCODINGS = ["latin-1", "utf-16", "utf-16-le", "utf-32", "cp1252", "utf-8-sig", "shift_jis"]
OPS = ["flip", "truncate", "insert", "delete", "duplicate", "reencode"]
words = st.text(max_size=30) | st.sampled_from(HOSTILE)
text_value = st.lists(words, max_size=4).map("".join) | st.sampled_from(
    [p["text"] for p in PERSPECTIVES + EVIDENCE] + [s for ps in PARAGRAPHS.values() for s in ps]
)
json_scalar = (
    st.none() | st.booleans() | st.integers() | st.floats() | text_value
)  # floats: NaN and Infinity too, which Python's json writes and reads
json_value = st.recursive(
    json_scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)
field_name = st.sampled_from(ID_FIELDS + TEXT_FIELDS + ("url", "date", "outlet", "source", ""))
record = st.dictionaries(field_name | st.text(max_size=6), json_value, max_size=6) | json_value
good_record = st.fixed_dictionaries(
    {"id": st.integers(0, 50) | st.text(max_size=5), "text": text_value}, optional={"x": json_value}
)


def _mutate(seed: bytes, ops: list[tuple[str, int, bytes]]) -> bytes:
    """Apply byte-level damage: what a bad copy, a wrong export or a half-written file does."""
    data = seed
    for op, n, blob in ops:
        i = n % (len(data) + 1)
        if op == "flip" and data:
            i = min(i, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ (1 + n % 255)]) + data[i + 1 :]
        elif op == "truncate":
            data = data[:i]
        elif op == "insert":
            data = data[:i] + blob + data[i:]
        elif op == "delete":
            data = data[:i] + data[i + 1 + n % 64 :]
        elif op == "duplicate":
            data = data[:i] + data[i : i + 1 + n % 64] * 3 + data[i:]
        elif op == "reencode":
            enc = ENCODINGS[n % len(ENCODINGS)]
            data = data.decode("utf-8", "replace").encode(enc, "replace")
    return data


def mutated(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    op = st.tuples(st.sampled_from(OPS), st.integers(0, 1 << 20), st.sampled_from(NASTY))
    return st.builds(_mutate, st.sampled_from(seeds), st.lists(op, max_size=4))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate: bytes no UTF-8 reader takes


def _dump(value, ascii_only: bool) -> bytes:
    return _utf8(json.dumps(value, ensure_ascii=ascii_only))


def _jsonl(rows: list, ascii_only: bool) -> bytes:
    return b"\n".join(_dump(r, ascii_only) for r in rows)


def _delimited(header: list[str], rows: list[list[str]], delim: str, quoted: bool) -> bytes:
    if not quoted:  # a hand-made export: nothing quoted, rows as ragged as they come
        lines = [delim.join(header)] + [delim.join(r) for r in rows]
        return _utf8("\n".join(lines))
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delim)
    w.writerow(header)
    w.writerows(rows)
    return _utf8(buf.getvalue())


deep = st.builds(lambda n, o: (o * n + o.replace("[", "]").replace("{", "}") * n).encode(),
                 st.integers(1, 5000), st.sampled_from(["[", "{"]))  # fmt: skip
noise = st.binary(max_size=300)
records = st.lists(record | good_record, max_size=5)
JSON_SEEDS = [
    _dump(PERSPECTIVES, True),
    _dump(EVIDENCE, False),
    _dump({"data": PERSPECTIVES}, True),
]
JSONL_SEEDS = [_jsonl(NEWS, True), _jsonl(ARTICLES, False), _jsonl(PERSPECTIVES, True)]
CSV_SEEDS = [
    b"doc,body,topic\nx1,First text,law\nx2,Second text,tax\n",
    b'id,text\n1,"a ""b"", c"\n',
]
TSV_SEEDS = [b"id\ttext\n7\tTabbed text\n", b"pId\tperspective\tsource\n1\tZoos help.\ttest\n"]
TXT_SEEDS = [b"one per line\n\nsecond line\n", "\n".join(PARAGRAPHS["animals"]).encode()]
HTML_SEEDS = [PAGE.encode(), PAGE.replace("https://ledger.example/zoos", "http://[x").encode()] + [
    article_html(k.title(), "Daily Planet", "2026-03-01", ps).encode()
    for k, ps in PARAGRAPHS.items()
]
ATOM = (
    '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
    '<title>{t}</title><entry><title>{t}</title><link href="{link}"/>'
    "<updated>{d}</updated></entry></feed>"
)
LINKS = ["http://site.example/a", "http://site.example/b", "http://site.example/a#top",
         "http://[x", "", "javascript:alert(1)", "/relative", "ftp://x/y", "http://dead.example/"]  # fmt: skip
RSS_SEEDS = [
    rss("Planet", [("One", LINKS[0], "Mon, 02 Mar 2026 08:00:00 GMT"), ("Two", LINKS[1], "x")]),
    ATOM.format(t="Atom", link=LINKS[1], d="2026-03-02T08:00:00Z"),
]
RSS_SEEDS = [s.encode() for s in RSS_SEEDS]
DATES = ["Mon, 02 Mar 2026 08:00:00 GMT", "0000-00-00T00:00:00Z", "9999-12-31T23:59:59-23:59",
         "99999999999999999999-01-01", "Mon, 99 Feb 2026 99:99:99 GMT", "2026-02-30", ""]  # fmt: skip
# trafilatura escapes the newline between paragraphs, then NFC-normalises its JSON: "\\n" and a
# combining accent compose to "\\ń", which json.loads refused (JSONDecodeError)
COMBINING_PAGE = (
    "<html><body><article><p>" + "Zoos keep animals in small cages all their lives. " * 6
    + "</p><p>\u0301Critics disagree with the council.</p></article></body></html>"
).encode()  # fmt: skip


def table(delim: str) -> st.SearchStrategy[bytes]:
    """CSV / TSV: headers with or without the id and text columns, ragged rows, huge cells."""
    header = st.lists(field_name | words, max_size=4)
    rows = st.lists(st.lists(words, max_size=5), max_size=4)
    return st.builds(_delimited, header, rows, st.just(delim), st.booleans())


meta = st.tuples(words, words, words)  # title, outlet, date
pages = st.builds(lambda m, ps: _utf8(article_html(*m, ps)), meta, st.lists(text_value, max_size=4))
deep_html = st.integers(1, 4000).map(lambda n: b"<html><body>" + b"<div>" * n + b"Deep. " * 30)
feed_item = st.tuples(words, st.sampled_from(LINKS) | words, st.sampled_from(DATES) | words)
feeds = st.builds(lambda t, items: _utf8(rss(t, items)), words, st.lists(feed_item, max_size=4))
atoms = st.builds(
    lambda t, item: _utf8(ATOM.format(t=t, link=item[1], d=item[2])), words, feed_item
)
json_docs = records | st.fixed_dictionaries({"data": records}) | json_value
FILES = {
    "json": st.one_of(mutated(JSON_SEEDS), st.builds(_dump, json_docs, st.booleans()), deep, noise),
    "jsonl": st.one_of(
        mutated(JSONL_SEEDS), st.builds(_jsonl, records, st.booleans()), deep, noise
    ),
    "csv": st.one_of(mutated(CSV_SEEDS), table(","), noise),
    "tsv": st.one_of(mutated(TSV_SEEDS), table("\t"), noise),
    "txt": st.one_of(
        mutated(TXT_SEEDS),
        st.lists(text_value, max_size=6).map(lambda ls: _utf8("\n".join(ls))),
        noise,
    ),
    "html": st.one_of(mutated(HTML_SEEDS), pages, deep_html, noise),
    "feed": st.one_of(mutated(RSS_SEEDS), feeds, atoms, noise),
}
FILES["news"] = st.one_of(FILES["jsonl"], FILES["json"], FILES["txt"], FILES["html"])
pool_opts = st.fixed_dictionaries({
    "pool": st.sampled_from(["perspectives", "evidence"]),
    "explicit": st.booleans(),  # --format given, or guessed from the suffix
    "id_field": st.none() | st.sampled_from(["id", "doc", "pId", "missing"]),
    "text_field": st.none() | st.sampled_from(["text", "body", "perspective", "missing"]),
    "encoding": st.none() | st.sampled_from(["utf-8", "latin-1", "utf-16", "punycode", "nope"]),
})  # fmt: skip
PLAIN = {"pool": "perspectives", "explicit": False, "id_field": None, "text_field": None,
         "encoding": None}  # fmt: skip
NEWS_SUFFIXES = [".jsonl", ".ndjson", ".json", ".txt", ".md", ".html", ".htm", ".xyz"]
news_opts = st.tuples(st.sampled_from(["news", "documents"]), st.sampled_from(NEWS_SUFFIXES))
folder_files = st.lists(
    st.tuples(
        st.sampled_from(["a", "sub/b", "c d", "ü", "x.y", ".hidden", "deep/er/e", "\udcff"]),
        st.sampled_from([".txt", ".md", ".html", ".htm", ".csv", ".TXT", ""]),
        FILES["txt"] | FILES["html"],
    ),
    max_size=4,
)


# -- the contract -----------------------------------------------------------------------------------
def refused(e: InputError, path: Path) -> None:
    """The product's own error: "file[:line]: reason" on one line (a hint may follow)."""
    assert isinstance(e, InputError), type(e)
    assert e.message.startswith(str(path)), e.message[:200]
    assert "\n" not in e.message, e.message[:200]


def stored(items, pool: str, where: Path) -> None:
    """What a reader accepted is what an index build stores next: it must go into the store."""
    assert items and all(isinstance(i.id, str) and isinstance(i.text, str) for i in items)
    store = ItemStore(where / pool)
    try:
        store.upsert(items)
        store.metadata_values("url", ["http://site.example/a"])
    finally:
        store.close()


def accepted_or_refused(read, path: Path, pool: str) -> None:
    """`read()` gives a report or raises InputError; the report's checks (refusing bad records
    by default, skipping them with --skip-bad) raise InputError or pass items the store takes."""
    try:
        rep = read()
    except InputError as e:
        return refused(e, path)
    for e in rep.errors:
        refused(e, path)
    for skip_bad in (False, True):
        try:
            rep.check(skip_bad=skip_bad)
        except InputError as e:
            assert e.message.startswith(str(path))
            continue
        stored(rep.items, pool, path.parent)


def check_pool(fmt: str, data: bytes, opts: dict) -> None:
    """A perspective or evidence pool file, as `index build --perspectives/--evidence` reads it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"pool.{fmt}"
        path.write_bytes(data)
        src = Source(opts["pool"], path, fmt if opts["explicit"] else None, opts["id_field"],
                     opts["text_field"])  # fmt: skip
        if opts["encoding"]:  # the API's encoding= (the CLI always reads UTF-8)
            kw = {"fmt": src.fmt, "id_field": src.id_field, "text_field": src.text_field}
            read = lambda: read_pool(path, encoding=opts["encoding"], **kw)  # noqa: E731
        else:
            read = lambda: read_source(src)  # noqa: E731
        accepted_or_refused(read, path, opts["pool"])


def check_news(data: bytes, opts: tuple[str, str]) -> None:
    """One articles file (JSONL, JSON list, text, saved page) as `--news/--documents` reads it."""
    pool, suffix = opts
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"articles{suffix}"
        path.write_bytes(data)
        accepted_or_refused(lambda: read_source(Source(pool, path)), path, pool)


def check_folder(files: list[tuple[str, str, bytes]], pool: str = "documents") -> None:
    """A folder of .txt/.md/.html files (one article each), names and contents fuzzed."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for name, suffix, data in files:
            f = os.fsencode(folder / (name + suffix))  # "\udcff": a name that is not UTF-8
            os.makedirs(os.path.dirname(f), exist_ok=True)
            with open(f, "wb") as out:
                out.write(data)
        accepted_or_refused(lambda: read_source(Source(pool, folder)), folder, pool)


class FakeWeb:
    """An httpx client over generated pages: `fetch` and `_collect_url` without a network."""

    def __init__(self, pages: dict[str, tuple[int, str, bytes]]):
        self.pages = pages

    def stream(self, method: str, url: str, timeout: float):
        import httpx

        if url not in self.pages:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        status, ctype, body = self.pages[url]
        page = type("Page", (), {"__enter__": lambda s: s, "__exit__": lambda s, *a: False})()
        page.status_code, page.url, page.headers = status, url, {"content-type": ctype}
        page.iter_bytes = lambda: iter([body[:1000], body[1000:]])
        return page


CTYPES = ["text/html", "text/html; charset=utf-8", "", "application/rss+xml", "text/xml",
          "application/pdf", "application/atom+xml"]  # fmt: skip


def check_web(feed: bytes, ctype: str, page: bytes, status: int) -> None:
    """A feed (or page) fetched by `perspect news add`: its links fetched in turn, the articles
    de-duplicated and written as the JSONL that the news reader then reads. Nothing raises;
    every input ends as an article or one outcome."""
    pages = {"http://feed.example/": (200, ctype, feed), LINKS[0]: (status, "text/html", page),
             LINKS[1]: (200, ctype, page)}  # fmt: skip
    client = FakeWeb(pages)
    for link in LINKS:
        canonical_url(link)
        with contextlib.suppress(FetchError):
            fetch(client, link, 5.0)
    f = Fetched("http://feed.example/", ctype, feed)
    try:
        got = feed_entries(f) if looks_like_feed(f) else None
    except FetchError:  # a feed feedparser cannot read: that input's one outcome
        got = None
    assert got is None or (isinstance(got[0], str) and all(isinstance(u, str) for u, _ in got[1]))
    assert isinstance(extract_page(f), Article | Outcome)
    articles, outcomes = [], []
    _collect_url(client, "http://feed.example/", _Budget(5.0, None), None, articles, outcomes,
                 NullReporter())  # fmt: skip
    assert articles or outcomes
    fresh, _ = dedupe(articles, set(), set())
    if fresh:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "news-add.jsonl"
            rows = [json.dumps({**a.record(), "content_hash": a.content_hash}) for a in fresh]
            path.write_text("\n".join(rows) + "\n", encoding="utf-8")
            accepted_or_refused(lambda: read_source(Source("news", path)), path, "news")


article_objects = record | st.fixed_dictionaries({"text": text_value}, optional={"url": json_value})


def check_article_object(rec) -> None:
    """An article object posted to `news add` (the API's body): an Article or one outcome."""
    got = from_object(rec, "article 1")
    assert isinstance(got, Article | Outcome)
    if isinstance(got, Article):
        assert len(got.content_hash) == 20 and dedupe([got], set(), set())[0] == [got]
        json.dumps(got.record(), ensure_ascii=False).encode("utf-8")


# -- the properties, with the inputs that found bugs ------------------------------------------------
@FUZZ
@given(data=FILES["json"], opts=pool_opts)
@example(data=b"[" * 100_000, opts=PLAIN)  # RecursionError
@example(data=b"[" + b"1" * 5000 + b"]", opts=PLAIN)  # ValueError: int digit limit
@example(
    data=b'[{"id": 1, "text": "Zoos help.", "score": NaN}]', opts=PLAIN
)  # SQLite json_extract: malformed
@example(data=b'[{"id": 1, "text": "Zoos help.", "\\ud800": 1}]', opts=PLAIN)  # store: surrogate
@example(data=b"+\xff", opts={**PLAIN, "encoding": "punycode"})  # UnicodeError, not ...Decode...
def test_json_pool(data, opts):
    check_pool("json", data, opts)


@FUZZ
@given(data=FILES["jsonl"], opts=pool_opts)
@example(data=b"[" * 100_000 + b"\n", opts=PLAIN)  # RecursionError
@example(data=b"1" * 5000 + b"\n", opts=PLAIN)  # ValueError: int digit limit
def test_jsonl_pool(data, opts):
    check_pool("jsonl", data, opts)


@FUZZ
@given(data=FILES["csv"], opts=pool_opts)
@example(data=b"a" * 200_000 + b"\n", opts=PLAIN)  # csv.Error from the header
@example(data=b'id,text\r1,"a\rb"\r', opts=PLAIN)  # csv.Error: new-line in unquoted field
def test_csv_pool(data, opts):
    check_pool("csv", data, opts)


@FUZZ
@given(data=FILES["tsv"], opts=pool_opts)
@example(data=b'"' + b"a" * 200_000 + b"\n", opts=PLAIN)  # csv.Error from the header
def test_tsv_pool(data, opts):
    check_pool("tsv", data, opts)


@FUZZ
@given(data=FILES["txt"], opts=pool_opts)
def test_text_pool(data, opts):
    check_pool("txt", data, opts)


@FUZZ
@given(data=FILES["news"], opts=news_opts)
@example(data=b'{"id": "a", "text": "Zoos help.", "title": NaN}', opts=("news", ".jsonl"))
@example(data=b'{"id": "a", "text": "Zoos help.", "url": "\\ud800"}', opts=("news", ".jsonl"))
@example(data=b'{"id": "a", "text": "\\ud800Zoos help."}', opts=("news", ".jsonl"))  # sentencex
@example(data=b"[" * 100_000, opts=("news", ".json"))  # RecursionError
@example(data=COMBINING_PAGE, opts=("documents", ".html"))  # JSONDecodeError (trafilatura)
def test_news_file(data, opts):
    check_news(data, opts)


@settings(FUZZ, max_examples=50)
@given(files=folder_files, pool=st.sampled_from(["news", "documents"]))
def test_article_folder(files, pool):
    check_folder(files, pool)


@settings(FUZZ, max_examples=50)
@given(feed=FILES["feed"] | FILES["html"], ctype=st.sampled_from(CTYPES), page=FILES["html"],
       status=st.sampled_from([200, 404]))  # fmt: skip
@example(feed=RSS_SEEDS[0].replace(LINKS[1].encode(), b"http://[x"), ctype=CTYPES[3],
         page=HTML_SEEDS[1], status=200)  # ValueError: Invalid IPv6 URL  # fmt: skip
@example(
    feed=b"<rss><channel><title>&#xD800;&#x110000;&#99999999999999999999;</title>",
    ctype=CTYPES[4],
    page=b"",
    status=200,
)  # feedparser: UnicodeEncodeError, ValueError, ...
@example(feed=COMBINING_PAGE, ctype=CTYPES[0], page=COMBINING_PAGE, status=200)  # JSONDecodeError
def test_web_feed_and_pages(feed, ctype, page, status):
    check_web(feed, ctype, page, status)


@FUZZ
@given(rec=article_objects)
@example(rec={"text": "Zoos help.", "url": 5})  # AttributeError: int has no strip
@example(rec={"text": "Zoos help.", "url": "http://[x"})  # ValueError: Invalid IPv6 URL
@example(rec={"text": "Zoos help \ud800."})  # UnicodeEncodeError in the content hash
def test_article_object(rec):
    check_article_object(rec)


def test_an_unreadable_file_is_an_input_error(tmp_path, monkeypatch):
    """PermissionError escaped read_text_file (tests run as root here, so it is simulated)."""
    path = tmp_path / "p.txt"
    path.write_text("a line\n")

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(InputError, match="cannot read the file"):
        read_text_file(path)
