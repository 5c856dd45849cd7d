"""The reader's own sources, read as a reader would (issue 45): three claims outside PERSPECTRUM,
ten short hand-written articles each (`bench/sources/*.jsonl`: four arguing each side, two only
reporting), answered before (the curated pool alone) and after (the same index with the articles
added as documents).

Every mined member is printed with its article and that article's kind (what the bench's author
wrote it as: argues for, argues against, reports), and counted: sides shown that match the
article's side, and sentences of reporting articles shown as arguments. The automatic counts
are a floor for a person's reading (a sentence of an arguing article can itself be background),
so `--json` saves the run for judging by hand.

    python bench/sources.py --index default [--name sources] [--json OUT]

`--name` is the index made for the run: a copy of `--index` (its folder, as is) with the
articles added through `Indexer.add`, rebuilt only when missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from perspect import Perspect
from perspect.core import paths
from perspect.indexer.indexer import Indexer, Source

HERE = Path(__file__).resolve().parent / "sources"
CLAIMS = {
    "zoos.jsonl": "Zoos should be closed",
    "crypto.jsonl": "Cryptocurrency should be banned",
    "ai_pause.jsonl": "Artificial intelligence research should be paused",
}
# what each article was written as: the side it argues on its file's claim, or "report"
KIND = {
    **{f"zoo-{i}": "support" for i in (1, 2, 3, 4)},
    **{f"zoo-{i}": "oppose" for i in (5, 6, 7, 8)},
    **{f"cr-{i}": "support" for i in (1, 2, 3, 4)},
    **{f"cr-{i}": "oppose" for i in (5, 6, 7, 8)},
    **{f"ai-{i}": "support" for i in (1, 2, 3, 4)},
    **{f"ai-{i}": "oppose" for i in (5, 6, 7, 8)},
    **{i: "report" for i in ("zoo-9", "zoo-10", "cr-9", "cr-10", "ai-9", "ai-10")},
}


def prepare(base: str, name: str, home: Path) -> None:
    if (home / name).is_dir():
        return
    shutil.copytree(home / base, home / name, symlinks=True)
    t0 = time.perf_counter()
    Indexer(name, home=home).add([Source("documents", HERE / f) for f in CLAIMS])
    print(f"index {name}: {base} + {len(CLAIMS) * 10} articles in {time.perf_counter() - t0:.1f} s")


def answer(p: Perspect, claim: str) -> dict:
    t0 = time.perf_counter()
    res = p.search(claim)
    ms = 1000 * (time.perf_counter() - t0)
    clusters = []
    for cl in res.clusters:
        members = []
        for m in cl.members:
            src = m.source
            members.append(
                {
                    "text": m.text,
                    "article": src.article_id if src else None,
                    "outlet": src.outlet if src else None,
                    "kind": KIND.get(src.article_id) if src else "curated",
                }
            )
        clusters.append(
            {
                "stance": cl.stance,
                "leans": cl.leans,
                "strength": round(cl.strength, 3),
                "members": members,
            }
        )
    cov = res.coverage
    return {
        "ms": round(ms),
        "coverage": {"support": cov.support, "oppose": cov.oppose, "warning": cov.warning},
        "clusters": clusters,
    }


def counts(run: dict) -> dict:
    mined = [(cl["stance"], m) for cl in run["clusters"] for m in cl["members"] if m["article"]]
    sides = {cl["stance"] for cl in run["clusters"] if any(m["article"] for m in cl["members"])}
    arguing = [(s, m) for s, m in mined if m["kind"] in ("support", "oppose")]
    return {
        "mined_shown": len(mined),
        "from_reporting_articles": sum(m["kind"] == "report" for _, m in mined),
        "side_as_article": sum(s == m["kind"] for s, m in arguing),
        "side_against_article": sum(s not in (m["kind"], "unclear") for s, m in arguing),
        "unclear": sum(s == "unclear" for s, _ in arguing),
        "unclear_leaning_as_article": sum(
            cl["leans"] == m["kind"]
            for cl in run["clusters"]
            if cl["stance"] == "unclear"
            for m in cl["members"]
            if m["article"]
        ),
        "mined_sides": sorted(sides - {"unclear"}),
    }


def show(claim: str, run: dict) -> None:
    cov = run["coverage"]
    print(f"\n## {claim}  ({run['ms']} ms; support {cov['support']} / oppose {cov['oppose']})")
    if cov["warning"]:
        print(f"   ! {cov['warning']}")
    for cl in run["clusters"]:
        lean = f", leans {cl['leans']}" if cl["leans"] else ""
        print(f"  [{cl['stance']} {cl['strength']:.2f}{lean}]")
        for m in cl["members"]:
            where = f"  <- {m['article']} ({m['kind']})" if m["article"] else ""
            print(f"     - {m['text'][:110]}{where}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default", help="the curated index (before)")
    ap.add_argument("--name", default="sources", help="the index made with the articles (after)")
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    home = args.home or paths.home()
    prepare(args.index, args.name, home)
    out: dict = {}
    for label, name in (("before", args.index), ("after", args.name)):
        with Perspect.open(name, home=home) as p:
            p.search("warm-up: the models load once")
            out[label] = {claim: answer(p, claim) for claim in CLAIMS.values()}
    for claim in CLAIMS.values():
        for label in ("before", "after"):
            print(f"\n# {label}", end="")
            show(claim, out[label][claim])
        out["after"][claim]["counts"] = counts(out["after"][claim])
        print("\ncounts:", json.dumps(out["after"][claim]["counts"]))
    total = {
        k: sum(out["after"][c]["counts"][k] for c in CLAIMS.values())
        for k in ("mined_shown", "from_reporting_articles", "side_as_article",
                  "side_against_article", "unclear", "unclear_leaning_as_article")
    }  # fmt: skip
    both = sum(len(out["after"][c]["counts"]["mined_sides"]) == 2 for c in CLAIMS.values())
    print(f"\nall three claims: {json.dumps(total)}; both sides mined for {both}/3 claims")
    p50 = {label: sorted(r["ms"] for r in out[label].values())[1] for label in ("before", "after")}
    print(f"search ms (median of 3): before {p50['before']}, after {p50['after']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
