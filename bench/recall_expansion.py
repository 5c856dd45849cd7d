"""Can query or document expansion lift perspective recall@15 toward the issue's .93? One run.

    python bench/recall_expansion.py [--index default] [--data DIR]

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
any depth (the stack reads the fused rank). Every expansion moves R@15 by at most 2.5 points,
against a gap of 33: none is in the pipeline. The measure itself is strict (each gold cluster of
a claim must appear; claims have up to 12): 92 % of dev claims have at least one gold cluster in
the hybrid's top 15 (bench/retrieval.py, success@k).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.perspectrum import load_claims  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.fusion import rrf  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402

KS = (15, 60)
DEPTH = 100


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
        self.V = _unit(self.dense.vectors(self.pids))
        links = s.links().get(self.pids)
        self.by_eid: dict[str, list[str]] = {}
        for pid, ls in links.items():
            for eid, *_ in ls:
                self.by_eid.setdefault(eid, []).append(pid)
        first = [links.get(p, [(None,)])[0][0] for p in self.pids]
        ev = s.backend("evidence", "dense").vectors([e or "" for e in first])
        self.first_link = _unit(ev)  # zero rows (no link) stay zero

    def bridge(self, claim: str, n: int = 10) -> list[tuple[str, float]]:
        runs, _ = self.s.runs(claim, "evidence", DEPTH)
        fused: dict[str, float] = {}
        for rank, (eid, _) in enumerate(rrf(runs, limit=n), start=1):
            for pid in self.by_eid.get(eid, []):
                fused[pid] = fused.get(pid, 0.0) + 1.0 / (60 + rank)
        return sorted(fused.items(), key=lambda x: -x[1])

    def prf(self, qv: np.ndarray, hybrid: list[str], m: int = 3, alpha: float = 1.0):
        pos = {p: i for i, p in enumerate(self.pids)}
        q = _unit(qv[None, :])[0] + alpha * self.V[[pos[p] for p in hybrid[:m]]].mean(0)
        return self._top(self.V, q)

    def doc_expansion(self, qv: np.ndarray, beta: float = 0.5):
        if not hasattr(self, "_X"):
            self._X = _unit(self.V + beta * self.first_link)
        return self._top(self._X, qv)

    def _top(self, M: np.ndarray, q: np.ndarray) -> list[tuple[str, float]]:
        sc = M @ (q / np.linalg.norm(q))
        top = np.argsort(-sc)[:DEPTH]
        return [(self.pids[i], float(sc[i])) for i in top]


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n == 0, 1, n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    s = Searcher(args.index, home=args.home)
    if "dense" not in s.retrievers or s.links() is None or "evidence" not in s.pools:
        print(f"skip: index {args.index!r} needs dense vectors, evidence and links")
        return 0
    x = Expansions(s)
    tune, _ = tune_claims_of(args.data)
    claims = {"tune": tune, "dev": load_claims(args.data, "dev")}
    names = ("hybrid (shipped)", "+ evidence bridge", "+ dense PRF", "+ document expansion")
    table = {n: {} for n in names}
    for split, cs in claims.items():
        golds = [[{str(p) for p in cl.pids} for cl in c.clusters] for c in cs]
        ranked = {n: [] for n in names}
        for c in cs:
            runs, qv = s.runs(c.text, "perspectives", DEPTH)
            hybrid = [d for d, _ in rrf(runs)]
            ranked[names[0]].append(hybrid)
            extra = (x.bridge(c.text), x.prf(qv, hybrid), x.doc_expansion(qv))
            for n, run in zip(names[1:], extra, strict=True):
                ranked[n].append([d for d, _ in rrf([*runs, run])])
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
