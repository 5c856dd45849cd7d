"""Articles to sentence items: the news pool and the reader's documents.

Articles come as JSONL (`id`, `title`, `source` or `outlet`, `date`, `url`, `leaning`, `topic`,
`text`; gzipped as `.jsonl.gz` too), a JSON list of the same, or a folder of `.txt` / `.md` files (the file name is the id, a leading `# heading` the title);
documents also as `.html` pages (main text, title, date and site name by trafilatura, as a page
fetched from the web). Sentences are split with sentencex (Wikimedia's maintained rule-based
segmenter: no model download, handles abbreviations and quotes); each sentence keeps its article
id, position, outlet, date, title and url, and gets the id `ARTICLE#POSITION`, stable as long as
the article text is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perspect.core.errors import InputError
from perspect.indexer.readers import (
    ReadReport,
    _Collector,
    _unstorable,
    inner_suffix,
    iter_files,
    load_json,
    read_text_file,
)
from perspect.indexer.web_fetch import extract_json

NEWS_FILE_SUFFIXES = (".txt", ".md")
DOCUMENT_FILE_SUFFIXES = (".txt", ".md", ".html", ".htm")
HTML_SUFFIXES = (".html", ".htm")
_HAS_WORD = re.compile(r"[^\W\d_]{2,}")


def split_sentences(text: str, language: str = "en") -> list[str]:
    from sentencex import segment

    out = []
    for block in re.split(r"\n\s*\n", text):  # paragraphs never share a sentence
        out.extend(s.strip() for s in segment(language, block) if s.strip())
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of `text`, in order."""
    out, pos = [], 0
    for s in split_sentences(text):
        start = text.find(s, pos)
        if start < 0:  # the segmenter changed it (whitespace): skip rather than misplace
            continue
        out.append((start, start + len(s)))
        pos = start + len(s)
    return out


def _articles_from_json(path: Path, col: _Collector) -> Iterator[tuple[dict[str, Any], int]]:
    content = read_text_file(path)
    if inner_suffix(path) == ".json":
        try:
            data = load_json(content)
        except json.JSONDecodeError as e:
            raise InputError(str(path), f"malformed JSON: {e.msg}", line=e.lineno) from None
        if not isinstance(data, list):
            raise InputError(str(path), "expected a JSON list of articles")
        col.unit = "record"
        for i, rec in enumerate(data, start=1):
            yield rec, i
        return
    for n, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield load_json(line), n
        except json.JSONDecodeError as e:
            col.error(n, f"malformed JSON: {e.msg}")


def _articles_from_folder(
    path: Path, col: _Collector, suffixes: tuple[str, ...]
) -> Iterator[tuple[dict[str, Any], int]]:
    """One article per file; a file that cannot be read (empty, binary, wrong encoding) is a bad
    record of the folder, so `--skip-bad` indexes the others instead of refusing them all."""
    files = list(iter_files(path, suffixes))
    if not files:
        kinds = [s for s in suffixes if s != ".htm"]
        kinds = f"{', '.join(kinds[:-1])} or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
        raise InputError(str(path), f"no {kinds} files in this folder")
    for f in files:
        try:
            yield _article_file(f, str(f.relative_to(path).with_suffix(""))), 0
        except InputError as e:
            col.error(None, f"{f.relative_to(path)}: {e.reason}")


def _article_file(f: Path, ident: str) -> dict[str, Any]:
    """One file as an article: an HTML page through trafilatura, else text with an optional
    leading `# title` line."""
    text = read_text_file(f)
    if f.suffix.lower() in HTML_SUFFIXES:
        return {"id": ident, **html_article(text, str(f))}
    title = None
    first, _, rest = text.partition("\n")
    if first.startswith("#"):
        title, text = first.lstrip("#").strip(), rest
    return {"id": ident, "title": title, "text": text}


def html_article(html: str, where: str) -> dict[str, Any]:
    """Main text, title, date, site name and canonical URL of a saved page (trafilatura, as a
    page from the web: paragraphs kept apart, the headline not repeated as a sentence)."""
    got = extract_json(html)
    text = (got.get("text") or "").strip()
    if not text:
        raise InputError(where, "no article text in this page")
    title = got.get("title")
    first, _, rest = text.partition("\n")
    if title and first.strip() == title.strip() and rest.strip():
        text = rest.strip()
    rec = {
        "title": title,
        # trafilatura's JSON: the site name under "source-hostname", the canonical URL "source"
        "outlet": got.get("source-hostname") or got.get("hostname"),
        "date": got.get("date"),
        "url": got.get("source"),
        "text": re.sub(r"\n+", "\n\n", text),
    }
    return {k: v for k, v in rec.items() if v}


def read_documents(path: str | Path, language: str = "en") -> ReadReport:
    """The reader's documents: articles as for news, and `.html` pages too."""
    return read_news(path, language, DOCUMENT_FILE_SUFFIXES)


def leaning_of(value: object) -> str:
    """An outlet's leaning as Perspect shows it: left, centre, right or unrated. AllSides' five
    grades fold to three ("lean left" is left); anything else a reader wrote is "unrated", never a
    guess."""
    v = str(value or "").strip().casefold().replace("-", " ").replace("_", " ")
    v = v.removeprefix("lean ").strip()
    if v in ("left", "right"):
        return v
    if v in ("center", "centre", "central", "middle"):
        return "centre"
    return "unrated"


LEANINGS = ("left", "centre", "right")


def read_news(
    path: str | Path,
    language: str = "en",
    suffixes: tuple[str, ...] = NEWS_FILE_SUFFIXES,
    default_leaning: str | None = None,
) -> ReadReport:
    """Read articles and return one Item per sentence, each with its article's outlet, date,
    title, url, leaning (the record's, else `default_leaning`, else "unrated") and topic."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "no such file or folder")
    col = _Collector(str(p), id_field=None, text_field=None, id_prefix="s")
    if p.is_dir():
        articles = _articles_from_folder(p, col, suffixes)
    elif inner_suffix(p) in (".jsonl", ".ndjson", ".json"):
        articles = _articles_from_json(p, col)
    elif p.suffix.lower() in HTML_SUFFIXES and p.suffix.lower() in suffixes:
        articles = iter([(_article_file(p, p.stem), 0)])
    else:
        articles = iter([({"id": p.stem, "text": read_text_file(p)}, 0)])
    seen: set[str] = set()
    for rec, line in articles:
        where = line or None
        if not isinstance(rec, dict):
            col.error(where, "expected an article object")
            continue
        text = rec.get("text") or rec.get("body") or rec.get("content")
        if not isinstance(text, str) or not text.strip():
            col.error(where, "article has no text")
            continue
        if (why := _unstorable(text)) is not None:  # a JSON escape (\ud800) the splitter refuses
            col.error(where, f"article text {why}")
            continue
        aid = rec.get("id") or rec.get("url")
        if aid is None or not str(aid).strip():
            col.error(where, "article has no id (or url)")
            continue
        aid = str(aid).strip()
        if aid in seen:
            col.report.duplicate_ids.append(aid)
            continue
        seen.add(aid)
        meta = {
            "article_id": aid,
            "title": rec.get("title"),
            "outlet": rec.get("outlet") or rec.get("source"),
            "date": rec.get("date"),
            "url": rec.get("url"),
            "leaning": leaning_of(rec.get("leaning") or default_leaning),
            "topic": rec.get("topic") or None,
            "content_hash": rec.get("content_hash"),  # set by a news add (indexer.web_news)
        }
        meta = {k: v for k, v in meta.items() if v is not None}
        for pos, sent in enumerate(split_sentences(text, language)):
            if _HAS_WORD.search(sent):
                col.add(sent, f"{aid}#{pos}", {**meta, "position": pos}, where)
    return col.report
