"""News from the web: pages and RSS/Atom feeds fetched, extracted and added to an index's news pool.

Each input is a URL (an HTML page, or a feed whose entries' links are fetched in turn) or an
article object (`title`, `outlet`/`source`, `date`, `url`, `text`, optional `id`). Pages go through
trafilatura (main text, title, date, site name), feeds through feedparser; nothing here parses
HTML by hand. A URL the news pool already holds is not fetched again. Articles are de-duplicated
by URL and by a hash of their text, within the batch and against the news already indexed (indexed
lookups, not scans of the pool), then written as one JSONL source through `Indexer.add`: the
same sentence splitting, checks, copy-on-write version and writer lock as `perspect index add
--news`, so readers keep answering from the version they hold while an add runs. A dead URL, a
page that is not HTML or an article too short to be one is one line of the report; the rest
still goes in. Each URL has a time budget, the whole fetch included, and so has the add: what
the add's budget leaves unfetched is one "skipped" line each.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perspect.core.errors import IndexBusy, PerspectError
from perspect.core.index.config import check_name, resolve_home
from perspect.core.index.layout import IndexDir
from perspect.core.index.store import ItemStore
from perspect.core.progress import NullReporter, Reporter
from perspect.core.types import ARTICLE_POOLS
from perspect.indexer.web_fetch import (
    LABELS,
    STATUSES,
    Article,
    FetchError,
    Outcome,
    article_id_for,
    canonical_url,
    extract_page,
    feed_entries,
    fetch,
    looks_like_feed,
)


@dataclass(frozen=True)
class NewsReport:
    """What one news add did: the version it published (or the live one, when nothing was new)
    and one outcome per article or failed input."""

    index: str
    version: str
    outcomes: tuple[Outcome, ...]
    sentences: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def summary(self) -> str:
        """ "added 3, duplicate 1, dead URL 2, ...": the statuses that occurred."""
        n = {s: self.count(s) for s in STATUSES}
        return ", ".join(f"{LABELS.get(s, s)} {k}" for s, k in n.items() if k) or "nothing"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "perspect.news-add/1",
            "index": self.index,
            "version": self.version,
            "added": self.count("added"),
            "sentences": self.sentences,
            "summary": {s: self.count(s) for s in STATUSES},
            "counts": dict(self.counts),
            "results": [o.to_json() for o in self.outcomes],
        }


# -- collecting inputs into articles ----------------------------------------------------------------
def from_object(rec: Any, where: str) -> Article | Outcome:
    """An article given as a JSON object."""
    if not isinstance(rec, dict):
        return Outcome(where, "bad", "expected a URL or an article object")
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        return Outcome(where, "empty", "article has no text", title=rec.get("title"))
    for key in ("id", "url", "title", "outlet", "source", "date", "leaning"):
        kinds = str if key in ("url", "leaning") else str | int  # a URL is parsed, never a number
        if rec.get(key) is not None and not isinstance(rec[key], kinds):
            return Outcome(where, "bad", f"'{key}' must be a string")
    for key in ("text", "id", "url", "title", "outlet", "source", "date"):
        if isinstance(rec.get(key), str) and not _is_unicode(rec[key]):
            return Outcome(where, "bad", f"'{key}' holds a lone surrogate (not valid Unicode text)")
    url = rec.get("url")
    aid = str(rec["id"]).strip() if rec.get("id") is not None else article_id_for(url, text)
    if not aid or "#" in aid:
        return Outcome(where, "bad", "an article id must be non-empty, without '#'")
    return Article(
        id=aid,
        text=text.strip(),
        url=url,
        title=rec.get("title"),
        outlet=rec.get("outlet") or rec.get("source"),
        date=None if rec.get("date") is None else str(rec["date"]),
        leaning=rec.get("leaning"),
    )


def _is_unicode(text: str) -> bool:
    """Whether `text` can be hashed and stored as UTF-8 (a JSON escape can carry a lone
    surrogate, which no file and no database holds)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


NOT_FETCHED = "URL already indexed, not fetched"


class _Indexed:
    """Lookups in the live news pool while an add fetches: a URL found there is not fetched
    again. Both are indexed lookups (the news store indexes `url` and `content_hash`:
    perspect.core.index.store), not scans of the pool; the live version is leased meanwhile."""

    def __init__(self, home: Path, name: str, pool: str = "news"):
        self.lease = IndexDir(home, name).lease()
        folder = self.lease.version / pool
        self.store = (
            ItemStore(folder, readonly=True) if (folder / ItemStore.FILENAME).is_file() else None
        )

    def urls(self, urls: Sequence[str]) -> set[str]:
        """The canonical forms of those of `urls` the pool holds (as given or canonical)."""
        if self.store is None or not urls:
            return set()
        asked = sorted({v for u in urls for v in (u, canonical_url(u))})
        return {canonical_url(u) for u in self.store.metadata_values("url", asked)}

    def hashes(self, hashes: Sequence[str]) -> set[str]:
        if self.store is None or not hashes:
            return set()
        return self.store.metadata_values("content_hash", sorted(set(hashes)))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.lease.release()


class _Budget:
    """The whole add's time budget for fetching, and each URL's."""

    def __init__(self, per_url: float, total: float | None):
        self.per_url, self.total = per_url, total
        self.deadline = None if total is None else time.monotonic() + total

    def left(self) -> float | None:
        """Seconds for the next fetch (None: the add's budget is spent)."""
        if self.deadline is None:
            return self.per_url
        left = self.deadline - time.monotonic()
        return min(self.per_url, left) if left > 0 else None

    def spent(self, url: str, title: str | None = None) -> Outcome:
        return Outcome(url, "skipped", f"the add's {self.total:g} s budget ran out", title=title)


def collect(
    inputs: Sequence[str | dict[str, Any]],
    timeout: float = 10.0,
    reporter: Reporter | None = None,
    budget: float | None = None,
    indexed: _Indexed | None = None,
) -> tuple[list[Article], list[Outcome]]:
    """Fetch and extract every input, each URL within `timeout` seconds and all of them within
    `budget` (None: no limit): what is left when it runs out is one "skipped" outcome each. A
    URL that `indexed` holds is a "duplicate" outcome, not fetched. One failure never stops the
    others."""
    import httpx

    reporter = reporter or NullReporter()
    articles: list[Article] = []
    outcomes: list[Outcome] = []
    clock = _Budget(timeout, budget)
    seen = set() if indexed is None else indexed.urls([i for i in inputs if isinstance(i, str)])
    headers = {"User-Agent": "perspect-news/0.1 (+https://github.com/perspect)"}
    with (
        httpx.Client(timeout=timeout, follow_redirects=True, headers=headers) as client,
        reporter.stage("fetching news", total=len(inputs)) as advance,
    ):
        for i, item in enumerate(inputs):
            if isinstance(item, str):
                url = item.strip()
                if url and canonical_url(url) in seen:
                    outcomes.append(Outcome(url, "duplicate", NOT_FETCHED))
                else:
                    _collect_url(client, url, clock, indexed, articles, outcomes, reporter)
            else:
                got = from_object(item, f"article {i + 1}")
                (articles if isinstance(got, Article) else outcomes).append(got)
            advance(1)
    return articles, outcomes


def _collect_url(client, url, clock, indexed, articles, outcomes, reporter) -> None:
    seconds = clock.left()
    if seconds is None:
        outcomes.append(clock.spent(url))
        return
    try:
        page = fetch(client, url, seconds)
    except FetchError as e:
        outcomes.append(Outcome(url, e.status, e.detail))
        return
    try:
        feed = feed_entries(page) if looks_like_feed(page) else None
    except FetchError as e:
        outcomes.append(Outcome(url, e.status, e.detail))
        return
    if feed is None:
        got = extract_page(page)
        if isinstance(got, Outcome):
            got = Outcome(url, got.status, got.detail, title=got.title)  # the URL as given
        (articles if isinstance(got, Article) else outcomes).append(got)
        return
    title, entries = feed
    if not entries:
        outcomes.append(Outcome(url, "empty", f"feed {title!r} has no entries with a link"))
        return
    known = set() if indexed is None else indexed.urls([link for link, _ in entries])
    with reporter.stage(f"feed {title}", total=len(entries)) as advance:
        for link, meta in entries:
            seconds = clock.left()
            if canonical_url(link) in known:
                got = Outcome(link, "duplicate", NOT_FETCHED, title=meta.get("title"))
            elif seconds is None:
                got = clock.spent(link, meta.get("title"))
            else:
                try:
                    got = extract_page(fetch(client, link, seconds), meta)
                except FetchError as e:
                    got = Outcome(link, e.status, e.detail, title=meta.get("title"))
            (articles if isinstance(got, Article) else outcomes).append(got)
            advance(1)


def dedupe(
    articles: Sequence[Article], known_urls: set[str], known_hashes: set[str]
) -> tuple[list[Article], list[Outcome]]:
    """Drop articles whose URL or text is already indexed or earlier in the batch."""
    keep: list[Article] = []
    dropped: list[Outcome] = []
    urls, hashes = set(), set()  # of this batch

    def dup(a: Article, what: str, batch: bool) -> None:
        where = "earlier in this batch" if batch else "already indexed"
        dropped.append(Outcome(a.url or a.id, "duplicate", f"{what} {where}", a.id, a.title))

    for a in articles:
        url = canonical_url(a.url) if a.url else None
        if url and (url in urls or url in known_urls):
            dup(a, "URL", url in urls)
        elif a.content_hash in hashes or a.content_hash in known_hashes:
            dup(a, "same text", a.content_hash in hashes)
        else:
            keep.append(a)
            hashes.add(a.content_hash)
            if url:
                urls.add(url)
    return keep, dropped


def add_news(
    name: str,
    inputs: Sequence[str | dict[str, Any]],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    timeout: float = 10.0,
    budget: float | None = None,
    wait: float = 60.0,
    on_write: Callable[[], None] | None = None,
    pool: str = "news",
    leaning: str | None = None,
) -> NewsReport:
    """Fetch, extract and de-duplicate `inputs`, then add the new articles to the news pool of
    index `name` (`pool`: or to the reader's documents, which a search mines for perspectives).
    `timeout`: seconds per URL, the whole fetch; `budget`: seconds for fetching them all (None:
    no limit; the write that follows is not cut short); `wait`: seconds to wait for another
    writer of the index (IndexBusy after); `leaning`: the outlets' leaning (left, centre, right)
    for the articles that name none, "unrated" where neither does."""
    from perspect.indexer.indexer import Indexer, Source
    from perspect.indexer.news import leaning_of

    if leaning is not None and leaning_of(leaning) == "unrated" and leaning != "unrated":
        raise PerspectError(
            f"unknown leaning {leaning!r}", hint="left, centre (or center), right or unrated"
        )

    if not inputs:
        raise PerspectError("no news to add", hint="pass URLs of pages or feeds, or articles")
    for what, value in (("timeout", timeout), ("budget", budget)):
        if value is not None and not value > 0:
            raise PerspectError(f"the {what} must be a positive number of seconds, got {value}")
    root = resolve_home(home)
    d = IndexDir(root, check_name(name))
    live = d.current().name  # an unknown index is refused before anything is fetched
    if pool not in ARTICLE_POOLS:
        raise PerspectError(f"articles go to the news or documents pool, not {pool}")
    known = _Indexed(root, name, pool)
    try:
        articles, outcomes = collect(inputs, timeout, reporter, budget, known)
    finally:
        known.close()
    known = _Indexed(root, name, pool)  # the live version now: another add may have published
    try:
        urls = known.urls([a.url for a in articles if a.url])
        hashes = known.hashes([a.content_hash for a in articles])
    finally:
        known.close()
    fresh, dropped = dedupe(articles, urls, hashes)
    outcomes += dropped
    if not fresh:
        return NewsReport(name, live, tuple(outcomes))
    with tempfile.TemporaryDirectory(prefix="perspect-news-") as tmp:
        path = Path(tmp) / f"news-add-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
        lines = [
            json.dumps(
                {
                    **a.record(),
                    "leaning": leaning_of(a.leaning or leaning),
                    "content_hash": a.content_hash,
                }
            )
            for a in fresh
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        deadline = time.monotonic() + wait
        indexer = Indexer(name, home=root, reporter=reporter, skip_bad=True)
        while True:
            try:
                if on_write is not None:
                    on_write()
                rep = indexer.add([Source(pool, path)])
                break
            except IndexBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
    added = [Outcome(a.url or a.id, "added", "", a.id, a.title) for a in fresh]
    return NewsReport(
        name,
        rep.version,
        tuple(added + outcomes),
        sentences=rep.added.get(pool, 0) + rep.replaced.get(pool, 0),
        counts=dict(rep.counts),
    )
