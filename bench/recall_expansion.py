"""Can query or document expansion lift perspective recall@15 toward the issue's .93? One run.

    python bench/recall_expansion.py [--index default] [--data DIR] [--relevance-ce DIR [--train]]

Perspective recall of gold clusters (bench/retrieval.py's measure) for the tune claims (held-out
train claims, where a choice would be made) and dev, for the shipped hybrid (RRF over BM25,
dense and ColBERT, depth 100) and three expansions, each fused with the hybrid's runs as a fourth
RRF run:
- evidence bridge: the claim retrieves evidence paragraphs (hybrid), and the perspectives whose
  index-time links (indexer.links) include those paragraphs are ranked by the paragraphs' rank.
  Why it could help: a perspective such as "Less incentive to study at university" shares no word
  with its claim, but the paragraph written under it does;
- dense pseudo-relevance feedback (Rocchio): the claim vector plus the mean of the top hybrid
  hits' vectors;
- document expansion: every perspective's vector plus a share of its first linked paragraph's
  vector (the debate's context), searched with the claim vector.

Measured (2026-11-22, index `default`, 82 tune / 139 dev claims), R@15 / R@60:

| run | tune | dev |
|---|---|---|
| hybrid (shipped) | .615 / .795 | .602 / .793 |
| + evidence bridge (10 paragraphs) | .614 / .803 | .625 / .806 |
| + dense PRF (3 hits, alpha 1) | .632 / .791 | .616 / .791 |
| + document expansion (beta .5) | .629 / .805 | .619 / .809 |

Reranking the hybrid's top 30/60/100 by the shipped relevance stack gives R@15 .617 on dev at
any depth (the stack reads the fused rank); by the pair model's relevance head alone, .431.
`--relevance-ce DIR` (with `--train` to make one first) reranks the hybrid's top 100 with a
(claim, perspective) cross-encoder: trained here from the equivalence cross-encoder on the fit
claims' gold perspectives against hybrid top-100 negatives (14k pairs, 2 epochs, 64 tokens,
28 min; loss .68 -> .45), alone R@15 / R@60 tune .560 / .796, dev .556 / .783; RRF-fused with the
hybrid, tune .611 / .800, dev .613 / .808. Every expansion moves R@15 by at most 2.5 points,
against a gap of 33: none is in the pipeline. The measure itself is strict (each gold cluster of
a claim must appear; dev claims have 6.6 on average, up to 38): 92 % of dev claims have at
least one gold cluster in the hybrid's top 15 (bench/retrieval.py, success@k). Even the union of
the three retrievers' top 300 holds only .942 of dev's gold clusters (dense alone: R@300 .923).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.perspectrum import load_claims, load_perspectives  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.fusion import rrf  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402

KS = (15, 60)
DEPTH = 100
BETA = 0.5  # document expansion's share of the linked paragraph


def recall(golds: list[list[set[str]]], ranked: list[list[str]]) -> dict[int, float]:
    return {
        k: statistics.mean(
            sum(1 for g in gold if set(ids[:k]) & g) / len(gold)
            for gold, ids in zip(golds, ranked, strict=True)
        )
        for k in KS
    }


class Expansions:
    """The three expansions over one index's stored vectors and links (no re-encoding)."""

    def __init__(self, s: Searcher):
        self.s = s
        self.dense = s.backend("perspectives", "dense")
        self.pids = [it.id for it in s.store("perspectives")]
        self.pos = {p: i for i, p in enumerate(self.pids)}
        self.V = _unit(self.dense.vectors(self.pids))
        links = s.links().get(self.pids)
        self.by_eid: dict[str, list[str]] = {}
        for pid, ls in links.items():
            for eid, *_ in ls:
                self.by_eid.setdefault(eid, []).append(pid)
        first = [links.get(p, [(None,)])[0][0] for p in self.pids]
        ev = s.backend("evidence", "dense").vectors([e or "" for e in first])
        # each perspective + BETA x its first linked paragraph (no link: a zero row, unchanged)
        self.expanded = _unit(self.V + BETA * _unit(ev))

    def bridge(self, claim: str, n: int = 10) -> list[tuple[str, float]]:
        runs, _ = self.s.runs(claim, "evidence", DEPTH)
        fused: dict[str, float] = {}
        for rank, (eid, _) in enumerate(rrf(runs, limit=n), start=1):
            for pid in self.by_eid.get(eid, []):
                fused[pid] = fused.get(pid, 0.0) + 1.0 / (60 + rank)
        return sorted(fused.items(), key=lambda x: -x[1])

    def prf(self, qv: np.ndarray, hybrid: list[str], m: int = 3, alpha: float = 1.0):
        q = _unit(qv[None, :])[0] + alpha * self.V[[self.pos[p] for p in hybrid[:m]]].mean(0)
        return self._top(self.V, q)

    def doc_expansion(self, qv: np.ndarray):
        return self._top(self.expanded, qv)

    def _top(self, M: np.ndarray, q: np.ndarray) -> list[tuple[str, float]]:
        sc = M @ (q / np.linalg.norm(q))
        top = np.argsort(-sc)[:DEPTH]
        return [(self.pids[i], float(sc[i])) for i in top]


def train_relevance_ce(s: Searcher, fit, args) -> None:
    """(claim, perspective) pairs of the fit claims: every gold perspective, and per claim 12 of
    the hybrid's top non-gold candidates plus 6 deeper ones (hard negatives, as T1 needs)."""
    from reranker.st_training import train_cross_encoder

    texts, rng, rows = load_perspectives(args.data), random.Random(13), []
    for c in fit:
        gold = {str(p) for cl in c.clusters for p in cl.pids}
        rows += [(c.text, texts[int(p)], 1.0) for p in gold if int(p) in texts]
        runs, _ = s.runs(c.text, "perspectives", DEPTH)
        neg = [d for d, _ in rrf(runs) if d not in gold]
        neg = neg[:12] + rng.sample(neg[12:], min(6, len(neg[12:])))
        rows += [(c.text, texts[int(d)], 0.0) for d in neg]
    rng.shuffle(rows)
    with tempfile.TemporaryDirectory(prefix="perspect-relce-") as tmp:
        model, trainer, _ = train_cross_encoder(
            rows,
            args.base,
            tmp,
            max_length=64,
            batch_size=32,
            lr=4e-5,
            epochs=2,
            max_seconds=args.minutes * 60,
        )
    print(f"trained {trainer.state.global_step} steps on {len(rows)} pairs", flush=True)
    model.save(args.relevance_ce)


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n == 0, 1, n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--relevance-ce", default=None, help="rerank with this cross-encoder too")
    ap.add_argument("--train", action="store_true", help="train --relevance-ce first")
    ap.add_argument("--base", default=str(ROOT / "models" / "equivalence"))
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--limit", type=int, default=None, help="first N claims of each set (smoke)")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    s = Searcher(args.index, home=args.home)
    if "dense" not in s.retrievers or s.links() is None or "evidence" not in s.pools:
        print(f"skip: index {args.index!r} needs dense vectors, evidence and links")
        return 0
    x = Expansions(s)
    tune, fit = (x[: args.limit] for x in tune_claims_of(args.data))
    ce = None
    if args.relevance_ce:
        if args.train:
            train_relevance_ce(s, fit, args)
        from sentence_transformers.cross_encoder import CrossEncoder

        ce = CrossEncoder(args.relevance_ce, device="cpu")
    claims = {"tune": tune, "dev": load_claims(args.data, "dev")[: args.limit]}
    names = ("hybrid (shipped)", "+ evidence bridge", "+ dense PRF", "+ document expansion")
    if ce is not None:
        names += ("relevance cross-encoder alone", "+ relevance cross-encoder")
    texts = load_perspectives(args.data)
    table = {n: {} for n in names}
    for split, cs in claims.items():
        golds = [[{str(p) for p in cl.pids} for cl in c.clusters] for c in cs]
        ranked = {n: [] for n in names}
        for c in cs:
            runs, qv = s.runs(c.text, "perspectives", DEPTH)
            hybrid = [d for d, _ in rrf(runs)]
            ranked[names[0]].append(hybrid)
            extra = (x.bridge(c.text), x.prf(qv, hybrid), x.doc_expansion(qv))
            for n, run in zip(names[1:4], extra, strict=True):
                ranked[n].append([d for d, _ in rrf([*runs, run])])
            if ce is not None:
                pairs = [(c.text, texts[int(d)]) for d in hybrid[:DEPTH]]
                sc = ce.predict(pairs, batch_size=64, show_progress_bar=False)
                alone = [hybrid[i] for i in np.argsort(-np.asarray(sc), kind="stable")]
                ranked[names[4]].append(alone)
                both = rrf([[(d, 0.0) for d in hybrid[:DEPTH]], [(d, 0.0) for d in alone]])
                ranked[names[5]].append([d for d, _ in both])
        for n in names:
            table[n][split] = recall(golds, ranked[n])
    print(f"# Perspective recall with expansions, index {args.index}\n")
    print("| run | tune R@15 / R@60 | dev R@15 / R@60 |\n|---|---|---|")
    for n, by in table.items():
        cells = [f"{by[sp][15]:.3f} / {by[sp][60]:.3f}" for sp in ("tune", "dev")]
        print(f"| {n} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
