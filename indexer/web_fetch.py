"""Fetching and extracting news from the web: one page or feed at a time.

A page is fetched with httpx (a timeout, redirects followed, a size cap) and its article read by
trafilatura (main text, title, date, site name); a feed (RSS or Atom: told by its content type or
by parsing) is read by feedparser into its entries' links and what they say of each article.
Nothing here parses HTML by hand, and nothing here writes: `indexer.web_news` adds the articles.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# An extracted page whose text is shorter than this is a navigation page, a paywall or an error
# page, not an article ("empty article" in the report).
MIN_ARTICLE_CHARS = 200
MAX_PAGE_BYTES = 5 * 1024 * 1024
HTML_TYPES = ("text/html", "application/xhtml+xml")
FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml")
XML_TYPES = ("application/xml", "text/xml")
STATUSES = ("added", "duplicate", "dead", "not_html", "empty", "bad", "skipped")
LABELS = {
    "dead": "dead URL",
    "not_html": "not HTML",
    "empty": "empty article",
    "bad": "bad input",
    "skipped": "not fetched",
}


@dataclass(frozen=True)
class Article:
    """One article ready to index."""

    id: str
    text: str
    url: str | None = None
    title: str | None = None
    outlet: str | None = None
    date: str | None = None
    leaning: str | None = None  # the outlet's, as the reader gave it (news add --leaning)

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)

    def record(self) -> dict[str, Any]:
        rec = {
            "id": self.id,
            "text": self.text,
            "url": self.url,
            "title": self.title,
            "outlet": self.outlet,
            "date": self.date,
            "leaning": self.leaning,
        }
        return {k: v for k, v in rec.items() if v is not None}


@dataclass(frozen=True)
class Outcome:
    """What became of one input (a feed adds one outcome per entry)."""

    input: str
    status: str  # one of STATUSES
    detail: str = ""
    article_id: str | None = None
    title: str | None = None

    def line(self) -> str:
        what = f"{LABELS.get(self.status, self.status)}: {self.input}"
        if self.title:
            what += f" ({self.title})"
        return what + (f": {self.detail}" if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "status": self.status,
            "detail": self.detail,
            "article_id": self.article_id,
            "title": self.title,
        }


def content_hash(text: str) -> str:
    norm = " ".join(text.lower().split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:20]


def canonical_url(url: str) -> str:
    """The URL without its fragment, host lower-cased: two links to one article compare equal.
    One that urllib cannot split (a broken IPv6 host, "http://[x") is its own key, as given:
    a feed may link to anything, and one bad link must not stop the add."""
    try:
        p = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    return urlunsplit((p.scheme.lower(), p.netloc.lower(), p.path or "/", p.query, ""))


def hostname(url: str) -> str | None:
    """The host of `url`, or None (also for a URL urllib cannot split)."""
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def article_id_for(url: str | None, text: str) -> str:
    key = canonical_url(url) if url else content_hash(text)
    return "web-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


# -- fetching --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    content_type: str
    body: bytes


class FetchError(Exception):
    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def fetch(client, url: str, seconds: float = 10.0) -> Fetched:
    """GET `url` (redirects followed, at most MAX_PAGE_BYTES) within `seconds` in all:
    FetchError("dead" | "bad" | "not_html") otherwise.

    Why a budget of its own: httpx's timeout bounds each wait, not the fetch, so a server that
    sends a byte every few seconds held an add for as long as it liked. The fetch runs on a
    thread that is given up once the budget is spent (a name lookup cannot be interrupted), and
    the thread itself stops reading at the deadline."""
    try:
        scheme = urlsplit(url).scheme
    except ValueError as e:  # "Invalid IPv6 URL": a typo, or a feed's broken link
        raise FetchError("bad", f"malformed URL ({e})") from None
    if scheme not in ("http", "https"):
        raise FetchError("bad", "not an http(s) URL")
    deadline = time.monotonic() + seconds
    box: list[Fetched | BaseException] = []

    def run() -> None:
        try:
            box.append(_get(client, url, deadline, seconds))
        except BaseException as e:
            box.append(e)

    t = threading.Thread(target=run, name="perspect-fetch", daemon=True)
    t.start()
    t.join(seconds + 0.5)  # the thread's own deadline check answers first, normally
    if not box:
        raise FetchError("dead", f"took longer than its {seconds:g} s budget")
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _get(client, url: str, deadline: float, seconds: float) -> Fetched:
    import httpx

    over = FetchError("dead", f"took longer than its {seconds:g} s budget")
    try:
        with client.stream("GET", url, timeout=max(0.05, deadline - time.monotonic())) as r:
            if r.status_code >= 400:
                raise FetchError("dead", f"HTTP {r.status_code}")
            body = b""
            for chunk in r.iter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise FetchError("not_html", f"over {MAX_PAGE_BYTES // 2**20} MiB")
                if time.monotonic() > deadline:
                    raise over
            ctype = r.headers.get("content-type", "").split(";")[0].strip().lower()
            return Fetched(str(r.url), ctype, body)
    except httpx.TimeoutException:
        raise over from None  # each wait was given what was left of the budget
    except httpx.ConnectError as e:
        raise FetchError("dead", f"cannot connect ({_reason(e)})") from None
    except httpx.HTTPError as e:
        raise FetchError("dead", f"{type(e).__name__}: {_reason(e)}") from None


def _reason(e: Exception) -> str:
    text = str(e) or type(e).__name__
    m = re.search(r"\] (.+?)['\")]*$", text)  # "[Errno 111] Connection refused"
    return (m.group(1) if m else text).strip()[:120]


def looks_like_feed(f: Fetched) -> bool:
    if f.content_type in FEED_TYPES:
        return True
    head = f.body[:512].lstrip().lower()
    return f.content_type in XML_TYPES or (
        f.content_type not in HTML_TYPES and head.startswith(b"<?xml")
    )


def extract_json(html: str, **options: Any) -> dict[str, Any]:
    """trafilatura's JSON of a page (main text and metadata) as a dict; {} when it finds none.
    Why not only json.loads of its string: trafilatura NFC-normalises the JSON text after
    escaping it, so an escape before a combining mark ("\\n" then U+0301) becomes "\\ń",
    which is not JSON. Decomposing first (NFD) undoes that; each text is composed again."""
    import trafilatura

    raw = trafilatura.extract(html, output_format="json", with_metadata=True, **options)
    if not raw:
        return {}
    try:
        got = json.loads(raw)
    except json.JSONDecodeError:
        try:
            got = json.loads(unicodedata.normalize("NFD", raw))
        except json.JSONDecodeError:
            return {}
        if isinstance(got, dict):
            nfc = unicodedata.normalize
            got = {k: nfc("NFC", v) if isinstance(v, str) else v for k, v in got.items()}
    return got if isinstance(got, dict) else {}


def extract_page(f: Fetched, fallback: dict[str, Any] | None = None) -> Article | Outcome:
    """Main text and metadata of an HTML page (trafilatura), or the outcome that says why not."""
    if f.content_type and f.content_type not in HTML_TYPES:
        return Outcome(f.url, "not_html", f"content type {f.content_type}")
    html = f.body.decode("utf-8", errors="replace")
    got = extract_json(html, url=f.url, include_comments=False)
    fb = fallback or {}
    text = (got.get("text") or "").strip()
    title = got.get("title") or fb.get("title")
    if len(text) < MIN_ARTICLE_CHARS:
        detail = f"{len(text)} characters of text (an article has at least {MIN_ARTICLE_CHARS})"
        return Outcome(f.url, "empty", detail, title=title)
    first, _, rest = text.partition("\n")
    if title and first.strip() == title.strip() and rest.strip():
        text = rest.strip()  # the headline is the title, not the article's first sentence
    text = re.sub(r"\n+", "\n\n", text)  # trafilatura's paragraphs: never one sentence across two
    # trafilatura's JSON names the site name "source-hostname" (its `sitename`)
    site = got.get("source-hostname") or got.get("sitename")
    outlet = site or fb.get("outlet") or hostname(f.url)
    return Article(
        id=article_id_for(f.url, text),
        text=text,
        url=canonical_url(f.url),
        title=title,
        outlet=outlet,
        date=got.get("date") or fb.get("date"),
    )


# A numeric character reference feedparser's loose parser turns into a character with chr() and
# encodes as UTF-8: one to a surrogate (&#xD800;), past U+10FFFF or too long for an int raised
# out of feedparser.parse and stopped the whole add.
_CHARREF = re.compile(rb"&#([xX][0-9a-fA-F]+|[0-9]+);")


def _charref(m: re.Match[bytes]) -> bytes:
    ref = m.group(1)
    if len(ref) > 12:  # past any code point, and never an int too long to convert
        return b"&#xFFFD;"
    c = int(ref[1:], 16) if ref[:1] in b"xX" else int(ref)
    return m.group(0) if c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF else b"&#xFFFD;"


def feed_entries(f: Fetched) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    """(feed title, [(entry link, fallback metadata)]) or None when `f` is no feed.
    FetchError("bad") when feedparser cannot read it at all: references no character can
    stand for are replaced first (U+FFFD); what feedparser still lets out (such a reference in
    a UTF-16 feed, say) is that feed's one outcome, not the end of the add."""
    import feedparser

    try:
        parsed = feedparser.parse(_CHARREF.sub(_charref, f.body))
    except Exception as e:  # a third-party parser on bytes from anywhere
        raise FetchError("bad", f"unreadable feed ({type(e).__name__}: {str(e)[:80]})") from None
    if not parsed.get("version") and not parsed.entries:
        return None
    feed_title = parsed.feed.get("title") or hostname(f.url) or f.url
    out = []
    for e in parsed.entries:
        link = e.get("link")
        if not link:
            continue
        date = None
        stamp = e.get("published_parsed") or e.get("updated_parsed")
        if stamp:
            date = time.strftime("%Y-%m-%d", stamp)
        out.append((link, {"title": e.get("title"), "date": date, "outlet": feed_title}))
    return feed_title, out
