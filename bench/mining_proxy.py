"""The sources issue's in-domain proxy: how many of the dev claims' gold perspective clusters an
answer recovers when perspectives are mined from documents, with the curated pool stripped of
those claims' gold perspectives, beside the same claims answered from the intact curated pool.

Three steps (each prints what it made):

    python bench/mining_proxy.py files --data data/perspectrum --out /tmp/proxy
        writes /tmp/proxy/pool.json (the perspective pool minus every dev claim's gold
        perspectives) and /tmp/proxy/evidence_documents.jsonl (the evidence paragraphs as
        articles, as the `mining` step of `make models` indexes them)
    perspect index build --name proxy --perspectives /tmp/proxy/pool.json \
        --news data/claimdiff/claimdiff_train_articles.jsonl
    perspect index add --name proxy --documents /tmp/proxy/evidence_documents.jsonl
    python bench/mining_proxy.py run --index proxy --baseline default [--claims N]

(The figures in bench/RESULTS.md used the mining step's own index, kept in the cache, with the
dev claims' gold perspectives deleted: the same pools.)

A gold cluster is recovered when a shown cluster on the gold side holds a member that makes its
point: P(same point) >= 0.5 from the equivalence cross-encoder (claim-conditioned, the matcher
perspect.lab.mining_fit fits with). Counted per claim, then averaged; "mined" counts only mined
members, so the stripped index can recover a cluster only from the documents. Dev claims only:
the decision is fitted on held-out train claims.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from perspect import Perspect
from perspect.core.datasets.perspectrum import load_claims, load_perspectives
from perspect.lab.mining_fit import MATCH, evidence_articles, match


def files(data: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    gold = {p for c in load_claims(data, "dev") for cl in c.clusters for p in cl.pids}
    pool = json.loads((data / "perspective_pool_v1.0.json").read_text())
    kept = [r for r in pool if int(r["pId"]) not in gold]
    (out / "pool.json").write_text(json.dumps(kept))
    docs = evidence_articles(data)  # as the mining step indexes them
    (out / "evidence_documents.jsonl").write_text("".join(json.dumps(r) + "\n" for r in docs))
    print(f"pool.json: {len(kept)} of {len(pool)} perspectives ({len(pool) - len(kept)} removed)")
    print(f"evidence_documents.jsonl: {len(docs)} paragraphs as articles")


def recovered(p: Perspect, claims, persp: dict[int, str], mined_only: bool) -> dict:
    ce = p.engine().equivalence_ce
    per_claim, sides, shown_mined, secs = [], [], 0, []
    for c in claims:
        t0 = time.perf_counter()
        res = p.search(c.text)
        secs.append(time.perf_counter() - t0)
        members = [
            (m, cl.stance)
            for cl in res.clusters
            for m in cl.members
            if not mined_only or m.source is not None
        ]
        shown_mined += sum(m.source is not None for m, _ in members)
        if not members:
            per_claim.append(0.0)
            continue
        best, at = match(ce, c, [m.text for m, _ in members], persp)
        got = set()
        for (_, stance), b, g in zip(members, best, at, strict=True):
            if b < MATCH:
                continue
            gold = "support" if c.clusters[g].stance == "SUPPORT" else "oppose"
            if stance != "unclear":
                sides.append(stance == gold)
            if stance == gold:
                got.add(int(g))
        per_claim.append(len(got) / max(1, len(c.clusters)))
    return {
        "claims": len(claims),
        "clusters_recovered": round(float(np.mean(per_claim)), 4),
        "matched_side_accuracy": round(float(np.mean(sides)), 4) if sides else None,
        "matched_sided": len(sides),
        "mined_members_shown": shown_mined,
        "search_p50_ms": round(1000 * float(np.median(secs)), 1),
    }


def run(args) -> None:
    claims = load_claims(args.data, "dev")[: args.claims]
    persp = load_perspectives(args.data)
    out = {}
    with Perspect.open(args.index, home=args.home) as p:
        if not p.pools.get("documents"):
            sys.exit(f"index {args.index} has no documents: see this script's docstring")
        out["mined (curated gold removed)"] = recovered(p, claims, persp, mined_only=True)
        out["answer (curated gold removed)"] = recovered(p, claims, persp, mined_only=False)
    if args.baseline:
        with Perspect.open(args.baseline, home=args.home) as p:
            out[f"baseline: {args.baseline} (curated intact)"] = recovered(
                p, claims, persp, mined_only=False
            )
    print(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("files")
    f.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    f.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--index", required=True)
    r.add_argument("--baseline", default=None, help="an index with the intact curated pool")
    r.add_argument("--home", default=None)
    r.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    r.add_argument("--claims", type=int, default=None)
    args = ap.parse_args()
    if args.cmd == "files":
        files(args.data, args.out)
    else:
        run(args)


if __name__ == "__main__":
    main()
