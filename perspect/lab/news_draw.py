"""The judged set's second news round (issue 73): (claim or perspective, news sentence) pairs as a
search meets them, for the news relation to learn from.

Why a second round: the first (`judged_news.draw_news`) drew sentences by BM25 alone, and 94 of
its 1,509 agreed pairs strengthen or weaken the claim (6 %), too few to fit a cut that shows only
what is right. This round draws what the news stage would consider (BM25 over the index's news
pool, the AllSides articles split as the index splits them), ranks each query's candidates by the
first round's stack, and sends the top ones to the judges: the pairs near the cut, where the cut
is decided. Queries: the judged set's train and tune claims and the perspectives judged for or
against them (never a report claim's). Ids are `cn2:QUERY:ARTICLE#POSITION` (the index's sentence
ids); texts are read back from ../shared by `read_news`.

    python -m perspect.lab.news_draw --index default --home H --out DIR   # draw
    python -m perspect.lab.news_draw --tally DIR                         # the judges' labels
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np

from perspect.lab.judged import HERE, load_claims, perspective_texts, read_jsonl

DEPTH = 10  # candidates a query's BM25 gives the ranking
TAKE = 3  # sent to the judges per query
PERSPECTIVES = 260
MIN_WORDS, MAX_WORDS = 8, 60
BEAR = [4, 5, 6, 7]  # news_fit.FEATURES: the bearing head's four columns (claim -> sentence)


def queries(seed: int = 73) -> list[dict]:
    claims = [c for c in load_claims() if c.split in ("train", "tune")]
    out = [{"query": c.id, "kind": "claim", "text": c.text, "split": c.split} for c in claims]
    split_of = {c.id: c.split for c in claims}
    ptext = perspective_texts()
    seen, persp = set(), []
    for r in read_jsonl(HERE / "labels.jsonl"):
        if r["q"] == "cp" and r.get("label") in ("for", "against") and r["claim"] in split_of:
            pid = r["id"].split(":")[2]
            if pid not in seen and pid in ptext:
                seen.add(pid)
                persp.append({"query": f"p{pid}", "kind": "perspective", "text": ptext[pid],
                              "split": split_of[r["claim"]]})  # fmt: skip
    random.Random(seed).shuffle(persp)
    return out + persp[:PERSPECTIVES]


def ranker(work: Path):
    """The first round's stack over the bearing head alone (one pass a pair), fitted on every
    agreed first-round pair: a ranking, not a decision."""
    from sklearn.linear_model import LogisticRegression

    from perspect.lab.news_fit import rows

    x = np.load(work / "features.npz")["x"][:, BEAR]
    y = np.array([r["y"] > 0 for r in rows()])
    return LogisticRegression(C=0.3, max_iter=2000).fit(x, y)


def main(argv=None) -> int:
    from perspect.reranker import factory
    from perspect.retriever.searcher import Searcher

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/news_fit"))
    ap.add_argument("--argument", default="models/argument")
    ap.add_argument("--tally", type=Path, metavar="DIR", help="tally the judges' outputs in DIR")
    args = ap.parse_args(argv)
    if args.tally:
        tally(args.tally)
        return 0
    s = Searcher(args.index, args.home)
    s.store("news")
    qs = queries()
    cands: list[tuple[dict, str, str, dict]] = []
    for q in qs:
        hits = s.search(q["text"], "news", 40, retriever="bm25")
        got, texts = 0, set()
        for h in hits.hits:
            n = len(h.text.split())
            if not MIN_WORDS <= n <= MAX_WORDS or h.text.casefold() in texts:
                continue
            texts.add(h.text.casefold())
            cands.append((q, h.id, h.text, dict(h.metadata)))
            got += 1
            if got == DEPTH:
                break
    print(f"{len(qs)} queries, {len(cands)} candidates", flush=True)
    trunk = factory.load(["trunk"], factory.Serving(), entries={"trunk": args.argument}).trunk
    texts = list(dict.fromkeys([q["text"] for q, *_ in cands] + [t for _, _, t, _ in cands]))
    lower = dict(zip(texts, trunk.lower(texts), strict=True))
    heads = trunk.every_head(
        [lower[q["text"]] for q, *_ in cands], [lower[t] for _, _, t, _ in cands]
    )
    x = np.log(np.clip(heads["bearing"], 1e-5, 1 - 1e-5) / np.clip(1 - heads["bearing"], 1e-5, 1))
    score = ranker(args.work).predict_proba(x)[:, 1]
    by: dict[str, list[int]] = {}
    for i, (q, *_) in enumerate(cands):
        by.setdefault(q["query"], []).append(i)
    items, lines = [], []
    for qid, idx in by.items():
        for i in sorted(idx, key=lambda i: -score[i])[:TAKE]:
            q, sid, text, meta = cands[i]
            iid = f"cn2:{qid}:{sid}"
            items.append({"id": iid, "q": "cn", "query": qid, "kind": q["kind"],
                          "split": q["split"], "found": [f"news-bm25+bearing@{round(float(score[i]), 3)}"]})  # fmt: skip
            lines.append({"id": iid, "q": "cn", "claim": q["text"], "title": meta.get("title") or "",
                          "sentence": text})  # fmt: skip
    (HERE / "news-items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "texts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    print(f"{len(items)} items -> {HERE / 'news-items.jsonl'}; texts -> {args.out}")
    return 0


def tally(folder: Path, first_rep_batches: int = 8) -> dict:
    """The two judges' labels of each drawn item (batches 0..first_rep_batches-1 hold every item
    once, the rest once more) into bench/judged/news-labels.jsonl: both labels, and `label`
    where they agree (None where not: nothing fits on those). Returns the agreement."""
    from perspect.lab.judged_tally import kappa

    items = {r["id"]: r for r in read_jsonl(HERE / "news-items.jsonl")}
    got: dict[str, dict[int, str]] = {}
    for batch in sorted(folder.glob("batch-*.jsonl")):
        n = int(batch.stem.split("-")[1])
        out = folder / f"out-{n:03d}.jsonl"
        if not out.exists():
            continue
        rep = 0 if n < first_rep_batches else 1
        for line in out.read_text().splitlines():
            row = json.loads(line)
            if row.get("id") in items and row.get("label") in ("strengthens", "weakens", "neither"):
                got.setdefault(row["id"], {})[rep] = row["label"]
    rows, pairs = [], []
    for iid, it in items.items():
        labels = got.get(iid, {})
        if len(labels) < 2:
            continue
        a, b = labels[0], labels[1]
        pairs.append((a, b))
        rows.append({"id": iid, "q": "cn", "query": it["query"], "kind": it["kind"],
                     "split": it["split"], "labels": [a, b], "label": a if a == b else None})  # fmt: skip
    (HERE / "news-labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    agree = sum(a == b for a, b in pairs) / max(len(pairs), 1)
    shown = [(a != "neither", b != "neither") for a, b in pairs]
    summary = {
        "items": len(items),
        "judged_twice": len(pairs),
        "agreement": round(agree, 4),
        "kappa": round(kappa(pairs), 4),
        "bears_agreement": round(sum(x == y for x, y in shown) / max(len(shown), 1), 4),
        "agreed": dict(sorted(Counter(r["label"] for r in rows if r["label"]).items())),
    }
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
