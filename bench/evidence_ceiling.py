"""How much gold evidence do the index-time links hold at all? The ceiling under T4's ranking.

    python bench/evidence_ceiling.py [--index default] [--data DIR]

For every tune and dev cluster with resolvable gold evidence, the share of its gold paragraphs
found among: the first member's top 3 links (what the engine shows and T4 scores), every
member's top link, every member's top 2 links. A choice of links that holds more gold would
raise T4's ceiling; a better ranking can only approach it.

Measured (2026-11-22, eighth session), share of gold paragraphs held, tune / dev (281 / 571
clusters; 2.4 members and 1.8-1.9 gold paragraphs per cluster): first member's top 3 .560 /
.581; each member's top link .456 / .475; each member's top 2 .582 / .589. No other choice of
links lifts the ceiling much, so T4 stays bounded by link recall as much as by ranking.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.perspectrum import load_claims, load_perspectives  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402


def held(claims, persp, links, store) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        "members": [],
        "gold": [],
        "first3": [],
        "each1": [],
        "each2": [],
    }
    for c in claims:
        for cl in c.clusters:
            gold = set(store.existing([str(e) for e in cl.evidence]))
            members = [str(p) for p in cl.pids if p in persp]
            got = links.get(members, 3)
            members = [p for p in members if got.get(p)]
            if not gold or not members:
                continue
            choices = {
                "first3": {x[0] for x in got[members[0]][:3]},
                "each1": {got[p][0][0] for p in members},
                "each2": {x[0] for p in members for x in got[p][:2]},
            }
            out["members"].append(len(members))
            out["gold"].append(len(gold))
            for name, chosen in choices.items():
                out[name].append(len(chosen & gold) / len(gold))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--index", default="default")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    persp = load_perspectives(args.data)
    searcher = Searcher(args.index)
    links, store = searcher.links(), searcher.store("evidence")
    if links is None:
        print(f"index {args.index} has no precomputed links (build it with an evidence pool)")
        return 1
    print("| claims | clusters | members | gold | first member top 3 | each top 1 | each top 2 |")
    print("|---|---|---|---|---|---|---|")
    for name, claims in (
        ("tune", tune_claims_of(args.data)[0]),
        ("dev", load_claims(args.data, "dev")),
    ):
        h = held(claims, persp, links, store)
        print(
            f"| {name} | {len(h['gold'])} | "
            + " | ".join(f"{np.mean(h[k]):.2f}" for k in ("members", "gold"))
            + " | "
            + " | ".join(f"{np.mean(h[k]):.3f}" for k in ("first3", "each1", "each2"))
            + " |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
