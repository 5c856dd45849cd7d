"""The judged set's news items (question `cn`): for each claim, sentences of the AllSides articles
(../shared/data/news) that BM25 finds, in two steps so that no index is needed: the articles by
title and lead, then the sentences of the best articles."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from perspect.lab.judged import SHARED, Claim, SmallBM25, split_sentences

NEWS = SHARED / "news" / "allsides_articles.jsonl.gz"
LEAD = 600  # characters of the body read with the title in the first step
MIN_WORDS, MAX_WORDS = 8, 60  # a sentence a reader can judge alone


def articles(path: Path = NEWS):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def sentences_of(art: dict) -> list[str]:
    return [s for s in split_sentences(art["text"].replace("\n", " "))]


def _judgeable(s: str) -> bool:
    return MIN_WORDS <= len(s.split()) <= MAX_WORDS


def draw_news(claims: Sequence[Claim], k: int = 3, top_articles: int = 8) -> list[dict]:
    arts = {a["id"]: a for a in articles()}
    lead = SmallBM25(
        [(i, f"{a['title']} {a['title']} {a['text'][:LEAD]}") for i, a in arts.items()]
    )
    rows = []
    for c in claims:
        pool = []
        for aid, _ in lead.top(c.text, top_articles):
            for j, s in enumerate(sentences_of(arts[aid])):
                if _judgeable(s):
                    pool.append((f"{aid}#{j}", s))
        if not pool:
            continue
        for rank, (sid, _) in enumerate(SmallBM25(pool).top(c.text, k)):
            aid, j = sid.split("#")
            rows.append(
                {
                    "id": f"cn:{c.id}:{sid}",
                    "q": "cn",
                    "claim": c.id,
                    "article": aid,
                    "sent": int(j),
                    "found": [f"draw-news-bm25@{rank + 1}"],
                }
            )
    return rows


def news_sentences_for(items: Sequence[dict]) -> dict[str, dict]:
    want = {it["article"] for it in items if it["q"] == "cn"}
    return {
        a["id"]: {"title": a["title"], "sentences": sentences_of(a)}
        for a in articles()
        if a["id"] in want
    }
