"""Mining on a topic nothing was trained or fitted on, as a reader meets it: the pages UKP found
for a held-out topic added as documents to a copy of an index, the topic searched as a claim,
and every mined sentence shown scored against UKP's own label of it (argument for, against, or
not an argument).

Figures (issue 55's targets): mined sentences shown, the share that are arguments, the share of
those shown on a side, and the share of those on the right side. The held-out topic here
(UKP_HELD_OUT[1]) is the one the mining cuts were *not* fitted on.

    python bench/mining_ukp.py --index default [--topic "marijuana legalization"] [--k 16]
        [--claim "Marijuana should be legalized"] [--no-argument]

Skips with a reason where the data or the index is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLAIMS = {  # the topic as a reader would write the claim ("support" = in favour of the topic)
    "marijuana legalization": "Marijuana should be legalized",
    "minimum wage": "There should be a minimum wage",
}


def norm(t: str) -> str:
    return re.sub(r"\W+", " ", t).strip().casefold()


def main() -> int:
    from perspect.lab.train import argument_data as ad

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", type=Path, default=ROOT / "indexes")
    ap.add_argument("--argument", type=Path, default=ROOT.parent / "shared" / "data" / "argument")
    ap.add_argument("--topic", default=ad.UKP_HELD_OUT[1])
    ap.add_argument("--claim", default=None)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--no-argument", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    if not (a.argument / "ukp_sentential.jsonl").is_file():
        print(f"skipped: no UKP data at {a.argument}")
        return 0
    if not (a.home / a.index).is_dir():
        print(f"skipped: no index {a.index!r} in {a.home} (make demo)")
        return 0
    from perspect import api
    from perspect.api import Perspect, Source
    from perspect.pipeline.engine import EngineConfig

    claim = a.claim or CLAIMS.get(a.topic, a.topic)
    pages = ad.ukp_pages(a.argument, a.topic)
    label = {norm(r["text"]): r["label"] for rows in pages.values() for r in rows}
    with tempfile.TemporaryDirectory(prefix="perspect-ukp-") as tmp:
        home = Path(tmp)
        shutil.copytree(a.home / a.index, home / a.index, symlinks=True)
        docs = home / "docs.jsonl"
        with docs.open("w") as f:
            for url, rows in pages.items():
                art = {"id": hashlib.md5(url.encode()).hexdigest()[:12], "title": url[-60:],
                       "url": url, "text": " ".join(r["text"] for r in rows)}  # fmt: skip
                f.write(json.dumps(art) + "\n")
        t0 = time.perf_counter()
        api.add_to_index(a.index, [Source("documents", docs)], home=home)
        added = time.perf_counter() - t0
        with Perspect.open(
            a.index, home=home, config=EngineConfig(argument=not a.no_argument)
        ) as p:
            t0 = time.perf_counter()
            res = p.search(claim, k=a.k)
            took = time.perf_counter() - t0
    mined = [(c, m) for c in res.clusters for m in c.members if m.mined]
    rows = []
    for c, m in mined:
        gold = label.get(norm(m.text))
        if gold is None:  # split otherwise than UKP's sentences: the longest one it holds
            inside = [k for k in label if k and k in norm(m.text)]
            gold = label[max(inside, key=len)] if inside else "unknown"
        shown = c.stance if c.stance in ("support", "oppose") else "unclear"
        rows.append({"text": m.text, "gold": gold, "shown": shown, "alone": c.mined_only})
    args_ = [r for r in rows if r["gold"] in ("support", "oppose")]
    sided = [r for r in args_ if r["shown"] != "unclear"]
    right = [r for r in sided if r["shown"] == r["gold"]]
    out = {
        "topic": a.topic,
        "claim": claim,
        "pages": len(pages),
        "argument_model": not a.no_argument,
        "mined_shown": len(rows),
        "arguments": len(args_),
        "sided": len(sided),
        "sided_right": len(right),
        "add_seconds": round(added, 1),
        "search_seconds": round(took, 2),
        "rows": rows,
    }
    print(
        f"{a.topic}: claim {claim!r}, {len(pages)} pages added in {added:.0f} s, search {took:.2f} s"
    )
    for r in rows:
        print(f"  [{r['shown']:>7} | gold {r['gold']:>7}] {r['text'][:110]}")
    n = max(1, len(rows))
    print(f"mined shown {len(rows)}; arguments {len(args_)} ({len(args_) / n:.0%}); "
          f"sided {len(sided)} of them ({len(sided) / max(1, len(args_)):.0%}); "
          f"right {len(right)} of those ({len(right) / max(1, len(sided)):.0%})")  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
