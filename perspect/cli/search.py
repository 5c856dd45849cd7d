"""`perspect search`: the full pipeline, or plain retrieval, as text or JSON."""

from __future__ import annotations

import argparse

from perspect.cli.common import (
    add_home,
    console,
)
from perspect.core.presentation.render import json_text, literal
from perspect.core.types import POOLS


def cmd_search(args: argparse.Namespace) -> int:
    from perspect.api import Perspect

    retrieval_only = args.retrieval_only or args.pool != "perspectives" or args.retriever
    with Perspect.open(args.index, home=args.home, model=args.model, fast=args.fast) as p:
        if not retrieval_only:
            res = p.search(args.claim, k=args.k)
            if args.json:
                print(json_text(res.to_json()))
            else:
                from perspect.core.presentation.render import print_result

                print_result(res)
            return 0
        res = p.retrieve(
            args.claim, k=20 if args.k is None else args.k, pool=args.pool, retriever=args.retriever
        )
    if args.json:
        print(json_text(res.to_json()))
        return 0
    from rich.table import Table

    t = Table(
        title=f"{args.pool} for “{literal(res.query)}” ({res.retriever}, {res.took_ms:.1f} ms)"
    )
    t.add_column("#", justify="right")
    t.add_column("score", justify="right")
    t.add_column("id")
    t.add_column("text")
    for h in res.hits:
        t.add_row(str(h.rank), f"{h.score:.2f}", literal(h.id), literal(h.text))
    console().print(t)
    if not res.hits:
        console().print("[yellow]no matching items[/]")
    return 0


def register(sub) -> None:
    """`perspect search`."""
    q = sub.add_parser("search", help="search an index for a claim")
    q.add_argument("claim")
    q.add_argument("--index", default="default")
    q.add_argument(
        "--k",
        type=int,
        default=None,
        help="how many: perspective clusters (full pipeline, default 16) or hits (default 20)",
    )
    q.add_argument("--pool", default="perspectives", choices=POOLS)
    q.add_argument(
        "--retriever",
        default=None,
        help="bm25, dense, colbert or hybrid (default: hybrid, RRF over the index's retrievers)",
    )
    q.add_argument("--json", action="store_true", help="print the documented JSON schema")
    q.add_argument(
        "--fast",
        action="store_true",
        help="int8 cross-encoders and at most 24 equivalence pairs: p50 1.9x and p95 4x faster "
        "here, for some clustering quality (measured: bench/RESULTS.md, Latency)",
    )
    q.add_argument(
        "--retrieval-only",
        action="store_true",
        help="plain top-k retrieval, no models (implied by --pool/--retriever)",
    )
    q.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    add_home(q)
    q.set_defaults(func=cmd_search)
