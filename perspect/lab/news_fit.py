"""The news relation (issue 73): which news sentences a search may show as strengthening or
weakening a claim or a perspective, fitted on the judged set's (claim, news sentence) pairs
(`cn`, docs/judged-set.md) and cut for precision.

Why a stack over the trunk's heads and not the ClaimDiff head alone: ClaimDiff was taught on
pairs of articles about one event, where "strengthens" means "confirms a detail"; a reader's
"strengthens" is "argues for", which is what the bearing head (claim, text: for / against / no
side / off topic) and the stance head learnt from the judges and the debates. The stack reads all
of them from the one top pass a pair already costs (`every_head`), in both orders, and against the
claim's negation (a sentence that strengthens a claim and its denial alike only shares the topic).

    python -m perspect.lab.news_fit [--argument models/argument] [--write]

Rows: the agreed cn labels; `train` claims fit the stack, `tune` claims pick the cut (the lowest
whose precision of what is shown reaches PRECISION), `report` claims are only measured. `--write`
puts the stack into the pair model's `decisions.news_stack` (with the pipeline's other decisions).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from perspect.lab.judged import HERE, load_claims, perspective_texts, read_jsonl
from perspect.reranker.news_judge import COLUMNS

RELATIONS = ("neither", "strengthen", "weaken")
PRECISION = 0.80  # of what is shown, right (the target)


def rows() -> list[dict]:
    """The agreed news pairs of both rounds with their texts: the claim (or perspective) and the
    sentence as the judges read it. Round 1 (`cn`, judged.py): its sentences split as the
    judged-set draw split them; round 2 (`cn2`, news_draw.py): the index's sentence ids."""
    from perspect.lab.judged_news import articles, sentences_of

    claims = {c.id: c for c in load_claims()}
    want: dict[str, list[dict]] = {}
    for r in read_jsonl(HERE / "labels.jsonl"):
        if r["q"] == "cn" and r.get("label"):
            aid, j = r["id"].split(":")[2].split("#")
            want.setdefault(aid, []).append({**r, "sent": int(j)})
    second: dict[str, list[dict]] = {}
    if (HERE / "news-labels.jsonl").exists():
        for r in read_jsonl(HERE / "news-labels.jsonl"):
            if r.get("label"):
                aid, j = r["id"].split(":")[2].split("#")
                second.setdefault(aid, []).append({**r, "pos": int(j)})
    ptext = perspective_texts() if second else {}
    out = []
    for art in articles():
        for r in want.get(art["id"], ()):
            out.append({"id": r["id"], "round": 1, "split": r["split"], "group": r["claim"],
                        "claim": claims[r["claim"]].text, "text": sentences_of(art)[r["sent"]],
                        "y": RELATIONS.index(r["label"].removesuffix("s"))})  # fmt: skip
        if art["id"] in second:
            index_sents = paragraph_sentences_of(art)
            for r in second[art["id"]]:
                q = r["query"]
                text = claims[q].text if r["kind"] == "claim" else ptext[q[1:]]
                out.append({"id": r["id"], "round": 2, "split": r["split"], "group": q,
                            "claim": text, "text": index_sents[r["pos"]],
                            "y": RELATIONS.index(r["label"].removesuffix("s"))})  # fmt: skip
    return out


def paragraph_sentences_of(art: dict) -> dict[int, str]:
    """An article's sentences by their index position (`ARTICLE#POSITION`), as the news reader
    splits them."""
    from perspect.indexer.news import _HAS_WORD, split_sentences
    from perspect.indexer.readers import normalize_text

    return {
        i: normalize_text(s)
        for i, s in enumerate(split_sentences(art["text"]))
        if _HAS_WORD.search(s)
    }


def features(trunk, pairs: list[tuple[str, str]], batch: int = 64) -> np.ndarray:
    """Per (claim, sentence): the stack's columns (reranker.news_judge.COLUMNS) from the one
    claim -> sentence pass a search pays."""
    from perspect.reranker.news_judge import columns

    texts = list(dict.fromkeys(t for p in pairs for t in p))
    lower = dict(zip(texts, trunk.lower(texts), strict=True))
    heads = trunk.every_head([lower[c] for c, _ in pairs], [lower[s] for _, s in pairs], batch)
    return columns(heads, FEATURES)


FEATURES = tuple(COLUMNS)  # every column the judge reads, in its order


def fit(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    mu, sd = x.mean(0), x.std(0) + 1e-6
    lr = LogisticRegression(C=c, max_iter=4000).fit((x - mu) / sd, y)
    w = lr.coef_ / sd
    b = lr.intercept_ - (lr.coef_ * (mu / sd)).sum(1)
    return w, b


def probs(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    z = x @ w.T + b
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def shown_at(p: np.ndarray, y: np.ndarray, cut: float) -> dict:
    """What a cut shows (reranker.news_judge): a sentence whose P(strengthen) + P(weaken) clears
    `cut`, as the likelier of the two."""
    rel = 1 + p[:, 1:].argmax(1)
    shown = p[:, 1:].sum(1) >= cut
    right = (rel == y) & shown
    n = int(shown.sum())
    pos = int((y > 0).sum())
    return {
        "cut": round(float(cut), 4),
        "shown": n,
        "right": int(right.sum()),
        "precision": round(float(right.sum() / n), 4) if n else None,
        "recall": round(float(right.sum() / pos), 4) if pos else None,
    }


def precision_cut(p: np.ndarray, y: np.ndarray, precision: float, least: int = 20) -> float:
    """The lowest cut whose shown sentences (at least `least`) are right at `precision`; where
    none is, the cut of the best precision over at least `least` shown (said in the report)."""
    grid = [shown_at(p, y, float(c)) for c in np.arange(0.05, 0.99, 0.01)]
    grid = [g for g in grid if g["shown"] >= least]
    for g in grid:
        if g["precision"] >= precision:
            return g["cut"]
    return max(grid, key=lambda g: (g["precision"], -g["cut"]))["cut"] if grid else 1.01


def main(argv=None) -> int:
    from perspect.reranker import factory

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--argument", type=Path, default=Path("models/argument"))
    ap.add_argument("--pair", type=Path, default=Path("models/pair"), help="where --write puts it")
    ap.add_argument("--work", type=Path, default=Path("/tmp/news_fit"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    got = rows()
    pairs = [(r["claim"], r["text"]) for r in got]
    key = hashlib.sha1(json.dumps([pairs, str(args.argument), FEATURES]).encode()).hexdigest()[:12]
    cache = args.work / f"features-{key}.npz"
    if cache.exists():
        x = np.load(cache)["x"]
    else:
        trunk = factory.load(["trunk"], factory.Serving(), entries={"trunk": args.argument}).trunk
        x = features(trunk, pairs)
        np.savez(cache, x=x)
    y = np.array([r["y"] for r in got])
    split = np.array([r["split"] for r in got])
    rnd = np.array([r["round"] for r in got])
    counts = {f"{s} r{k}": np.bincount(y[(split == s) & (rnd == k)], minlength=3).tolist()
              for s in ("train", "tune", "report") for k in (1, 2)}  # fmt: skip
    print(f"{len(got)} pairs (neither, strengthen, weaken):", counts)
    tr, tu, rp = (split == s for s in ("train", "tune", "report"))
    best = None
    for c in (0.03, 0.1, 0.3, 1.0):
        w, b = fit(x[tr], y[tr], c)
        p = probs(w, b, x[tu])
        ll = float(-np.log(p[np.arange(len(p)), y[tu]] + 1e-9).mean())
        print(f"C={c}: tune log-loss {ll:.4f}")
        if best is None or ll < best[0]:
            best = (ll, c, w, b)
    _, c, w, b = best
    cut = precision_cut(probs(w, b, x[tu]), y[tu], PRECISION)
    report = {
        "C": c,
        "shown_at": cut,
        "rows": {"train": int(tr.sum()), "tune": int(tu.sum()), "report": int(rp.sum())},
        "tune": shown_at(probs(w, b, x[tu]), y[tu], cut),
        "report": shown_at(probs(w, b, x[rp]), y[rp], cut),
        "curve_tune": [shown_at(probs(w, b, x[tu]), y[tu], k) for k in (0.2, 0.3, 0.4, 0.5, 0.6)],
        "curve_report": [shown_at(probs(w, b, x[rp]), y[rp], k) for k in (0.2, 0.3, 0.4, 0.5)],
    }
    print(json.dumps(report, indent=1))
    (args.work / "news_stack.json").write_text(json.dumps(report, indent=1) + "\n")
    if args.write:
        # refit on train and tune claims (the report claims stay unseen), the cut as chosen
        both = tr | tu
        w, b = fit(x[both], y[both], c)
        decision = {
            "features": list(FEATURES), "weights": w.round(6).tolist(), "bias": b.round(6).tolist(),
            "shown_at": cut, "classes": list(RELATIONS),
            "fitted_on": f"judged news pairs (rounds 1-2): the stack on train + tune claims, the "
            f"cut on tune claims at precision >= {PRECISION}",
            "tune": report["tune"], "report": report["report"], "rows": report["rows"],
        }  # fmt: skip
        write_stack(args.pair, decision)
    return 0


def write_stack(pair: Path, decision: dict) -> None:
    """The news stack into the pair model's manifest (`decisions.news_stack`), where the
    pipeline's fitted decisions live, with the judged files' checksums."""
    from perspect.core.model.bundle import sha256_file
    from perspect.reranker import factory

    model = factory.load(["pair"], factory.TORCH, pair).pair
    model.manifest.setdefault("decisions", {})["news_stack"] = decision
    files = {n: sha256_file(HERE / n) for n in ("news-labels.jsonl", "news-items.jsonl")}
    model.manifest["news_stack_data"] = [
        {"file": f"judged/{k}", "sha256": v} for k, v in files.items()
    ]
    model.manifest.setdefault("tune_metrics", {})["news_stack"] = decision["tune"]
    model.save(pair)
    print(f"{pair}: news stack written")


if __name__ == "__main__":
    raise SystemExit(main())
