"""Cheap evidence signals beside the shipped evidence stack, T4 on tune and dev in one run.

    python bench/evidence_signals.py [--model models/pair] [--index default] [--links 3]
                                     [--signals cp_cos,lex_rmargin,sinkhorn] [--tau 0.05]

The shipped stack scores a cluster's links by fused RRF score, cosine and reverse margin (see
perspect.engine). Each signal below takes the stack's fourth slot. The stack and the rule (cut,
delta, k) are then re-fitted on the tune claims and dev T4 is reported:
- `cp_cos`: cosine of "claim + perspective" to the paragraph. Why: the engine knows the claim at
  search time, and the paragraph argues about the claim, not only about the perspective;
- `lex_rmargin`: the reverse margin in BM25 terms. The paragraph is a query over the perspective
  pool, scored as (best cluster member - best other perspective) / top score. Why: a paragraph
  repeats the words of the perspective it was written under;
- `sinkhorn`: a soft one-to-one assignment of the whole perspective pool to the evidence pool
  (Sinkhorn over exp((cosine - 1) / tau), a dustbin for perspectives without a paragraph), the
  link's value the best member's share. Why: the pool's paragraphs were each written under one
  perspective, so a paragraph that another perspective claims more strongly is less likely to be
  this one's, and the reverse margin only sees the paragraph's side of that competition.

Measured (2026-11-22, 3 links, 281 tune / 571 dev clusters), tune / dev T4 F1: shipped 51.0 /
52.1; + cp_cos 51.4 / 52.6; + lex_rmargin 52.2 / 52.1. Neither signal is in the pipeline: each
gains at most 0.5 on dev, within the tune-dev noise.

Measured (2026-11-22, eighth session), `sinkhorn`, tune / dev T4 F1: tau 0.02: 49.2 / 50.1;
tau 0.05: 51.0 / 51.5; tau 0.1: 51.1 / 52.1 (shipped 51.0 / 52.1, same runs). Not in the
pipeline: the reverse margin already carries the assignment's information.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import perspectrum_eval as pe  # noqa: E402
from perspect.engine import LINK_VALUES, Engine, EngineConfig  # noqa: E402
from perspect.perspectrum import load_claims, load_evidence, load_perspectives  # noqa: E402
from reranker.model import PairModel  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402

TAU = 0.05  # temperature of the Sinkhorn assignment (cosines are within [-1, 1])


class Signals:
    def __init__(self, engine: Engine, persp, evidence):
        self.engine, self.persp, self.evidence = engine, persp, evidence
        self.edense = engine.searcher.backend("evidence", "dense")
        self.pbm25 = engine.searcher.backend("perspectives", "bm25")
        self._lex: dict[int, list[tuple[str, float]]] = {}
        self._plan = None
        self._clusters: dict = {}
        self.tau = TAU

    def assignment(self, iters: int = 20):
        """Soft one-to-one assignment of perspectives to paragraphs (Sinkhorn), computed once.
        A pool paragraph was written under one perspective, and a perspective has at most one,
        so both sides compete: each paragraph's column is normalised over perspectives, and each
        perspective's row over paragraphs plus a dustbin of mass 1 (most perspectives have no
        paragraph in the partial pool: idebate's, the distractors')."""
        if self._plan is None:
            pdense = self.engine.searcher.backend("perspectives", "dense")
            pids, eids = [str(p) for p in self.persp], [str(e) for e in self.evidence]
            P, E = pdense.vectors(pids), self.edense.vectors(eids)
            K = np.exp((P @ E.T - 1.0) / self.tau)  # (n_persp, n_evid), <= 1
            for _ in range(iters):
                K /= K.sum(axis=0, keepdims=True)  # each paragraph: one unit over perspectives
                K /= K.sum(axis=1, keepdims=True) + 1.0  # each perspective: <= 1 (dustbin)
            self._plan = ({p: i for i, p in enumerate(pids)}, {e: j for j, e in enumerate(eids)}, K)
        return self._plan

    def clusters(self, claim):
        """The claim's T4 rows as `perspect eval` builds them (perspectrum_eval.predict), each
        as (gold, links, members, representative): the members are the cluster's perspective
        ids, the representative the first member with links (None if none has). Computed once
        per claim, whichever signals are asked for."""
        if claim.cid not in self._clusters:
            stored = self.engine.searcher.store("evidence")
            t4 = pe.predict(self.engine, [claim], self.persp, tasks=("evidence",)).t4
            # predict's rows are the clusters with resolvable evidence, in order
            kept = [cl for cl in claim.clusters if stored.existing([str(e) for e in cl.evidence])]
            out = []
            for (gold, links), cl in zip(t4, kept, strict=True):
                mem = [str(p) for p in cl.pids if p in self.persp]
                rep = next((p for p in mem if self.engine._links([p]).get(p)), None)
                out.append((gold, links, mem, rep))
            self._clusters[claim.cid] = out
        return self._clusters[claim.cid]

    def rows(self, claims, signal: str):
        """T4 rows with the signal appended to each link. The representative member stands
        for the cluster in `cp_cos`."""
        out = []
        for c in claims:
            rows = self.clusters(c)
            if signal == "cp_cos" and rows:
                qs = self.edense.embed_queries(
                    [f"{c.text} {self.persp[int(r)] if r else ''}" for *_, r in rows]
                )
            for n, (gold, links, mem, _) in enumerate(rows):
                if signal == "cp_cos" and links:
                    vals = self.edense.vectors([str(x[0]) for x in links]) @ qs[n]
                elif signal == "sinkhorn":
                    prow, ecol, K = self.assignment()
                    idx = [prow[m] for m in mem if m in prow]
                    vals = [float(K[idx, ecol[str(x[0])]].max()) if idx else 0.0 for x in links]
                else:
                    vals = [self.lex_rmargin(x[0], set(mem)) for x in links]
                out.append((gold, [(*x, float(v)) for x, v in zip(links, vals, strict=True)]))
        return out

    def lex_rmargin(self, eid: int, members: set[str]) -> float:
        if eid not in self._lex:
            self._lex[eid] = self.pbm25.search(self.evidence[eid][:2000], 50)
        res = self._lex[eid]
        if not res or res[0][1] <= 0:
            return 0.0
        best_in = max((s for d, s in res if d in members), default=0.0)
        best_out = max((s for d, s in res if d not in members), default=0.0)
        return (best_in - best_out) / res[0][1]


def t4(tune_rows, dev_rows, names):
    def keep(x):
        return (x[0], *(v if n in names else 0.0 for n, v in zip(LINK_VALUES, x[1:], strict=True)))

    t = [(g, [keep(x) for x in links]) for g, links in tune_rows]
    d = [(g, [keep(x) for x in links]) for g, links in dev_rows]
    thr, stacks = pe.tune(pe.Predictions(t4=t))
    rule = pe.evidence_rule(thr, stacks)
    return pe._t4(t, *rule, stacks["evidence"]), pe._t4(d, *rule, stacks["evidence"]), rule


BASE = ("rrf", "cos", "rmargin")  # the shipped evidence stack


def setup(args):
    """The engine's signals and the tune and dev claims, as --data, --index, --model, --links and
    --limit say (bench/vitaminc_ce.py runs its verifier through the same)."""
    persp, evidence = load_perspectives(args.data), load_evidence(args.data)
    tune = tune_claims_of(args.data)[0][: args.limit]
    dev = load_claims(args.data, "dev")[: args.limit]
    cfg = EngineConfig(evidence_per_cluster=args.links)
    sig = Signals(Engine(Searcher(args.index), PairModel.load(args.model), cfg), persp, evidence)
    return sig, tune, dev


def print_rows(tune_rows, dev_rows, variants) -> None:
    """One table row per (stack feature names, label): fitted on tune, reported on dev."""
    for names, label in variants:
        a, b, rule = t4(tune_rows, dev_rows, names)
        print(
            f"| {label} | {100 * a.f1:.1f} | {100 * b.precision:.1f} / {100 * b.recall:.1f} "
            f"/ {100 * b.f1:.1f} | {rule} |",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--model", default=str(ROOT / "models" / "pair"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--links", type=int, default=3, help="links per cluster considered")
    ap.add_argument("--limit", type=int, default=None, help="first N claims of each set (smoke)")
    ap.add_argument("--signals", default="cp_cos,lex_rmargin,sinkhorn")
    ap.add_argument("--tau", type=float, default=TAU, help="Sinkhorn temperature")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    sig, tune, dev = setup(args)
    sig.tau = args.tau
    print("| evidence stack | tune T4 F1 | dev T4 P / R / F1 | rule |\n|---|---|---|---|")
    for i, signal in enumerate(args.signals.split(",")):
        tr, dr = sig.rows(tune, signal), sig.rows(dev, signal)
        variants = ((BASE, "shipped stack"),) if i == 0 else ()
        print_rows(tr, dr, (*variants, ((*BASE, "ce"), f"+ {signal}")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
