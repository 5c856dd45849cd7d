"""The judged set's commands (docs/judged-set.md):

python -m perspect.lab.judged_cli draw [--news 3]  # items without an index (BM25, news)
python -m perspect.lab.judged_draw --index default  # items from every retriever, linked sentences
python -m perspect.lab.judged_cli batches --out DIR --q cp  # judge batches (outside the repo)
python -m perspect.lab.judged_cli tally --judgments DIR     # labels.jsonl, manifest.json
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from perspect.lab.judged import HERE, _write_jsonl, draw_bm25, load_claims, merge_items, read_jsonl


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m perspect.lab.judged_cli", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("draw", help="wave 1: BM25 candidates per claim, no index needed")
    d.add_argument("--k", type=int, default=6)
    d.add_argument("--news", type=int, default=0, help="also k news sentences a claim (cn)")
    b = sub.add_parser("batches", help="judge batch files (with texts) for unjudged items")
    b.add_argument("--out", type=Path, required=True, help="a folder outside the repository")
    b.add_argument("--size", type=int, default=400)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--q", default="cp")
    t = sub.add_parser("tally", help="join the judges' files into labels.jsonl and manifest.json")
    t.add_argument("--judgments", type=Path, required=True)
    args = ap.parse_args(argv)
    claims = load_claims()
    items_path = HERE / "items.jsonl"
    if args.cmd == "draw":
        items = merge_items(read_jsonl(items_path), draw_bm25(claims, args.k))
        if args.news:
            from perspect.lab.judged_news import draw_news

            items = merge_items(items, draw_news(claims, args.news))
        print(f"{_write_jsonl(items_path, items)} items -> {items_path}")
        _write_jsonl(HERE / "claims.jsonl", (c.__dict__ for c in claims))
        return 0
    if args.cmd == "batches":
        from perspect.lab.judged_batches import write_batches

        return write_batches(args, claims, read_jsonl(items_path))
    from perspect.lab.judged_tally import tally

    return tally(args.judgments, claims, read_jsonl(items_path))


if __name__ == "__main__":
    raise SystemExit(main())
