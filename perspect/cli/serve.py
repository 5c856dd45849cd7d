"""`perspect serve`: the HTTP JSON API over one index (perspect.serve)."""

from __future__ import annotations

import argparse

from perspect.cli.common import add_home
from perspect.serve.config import ServeConfig


def cmd_serve(args: argparse.Namespace) -> int:
    from perspect.serve.app import run

    if args.open:  # the page, once the server listens (a browser that is not there: a line)
        import threading
        import webbrowser

        url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}/"
        threading.Timer(1.5, lambda: webbrowser.open(url) or print(f"open {url}")).start()
    run(
        ServeConfig(
            index=args.index,
            home=args.home,
            model=args.model,
            host=args.host,
            port=args.port,
            workers=args.workers,
            max_body_bytes=args.max_body_bytes,
            max_claim_chars=args.max_claim_chars,
            max_k=args.max_k,
            time_budget_s=args.time_budget,
            concurrent_searches=args.concurrent_searches,
            access_log=args.access_log,
            idle_fill=not args.no_idle_fill and args.ray is None,
            ray=args.ray,
            shards=args.shards,
            replicas=args.replicas,
        )
    )
    return 0


def register(sub) -> None:
    """`perspect serve`."""
    d = ServeConfig()  # its defaults (the module imports no server)
    s = sub.add_parser(
        "serve", help="serve search, compare and news adds over HTTP (JSON API, OpenAPI at /docs)"
    )
    s.add_argument("--index", default="default")
    s.add_argument("--open", action="store_true", help="open the page (/) in a browser")
    s.add_argument("--host", default=d.host)
    s.add_argument("--port", type=int, default=d.port)
    s.add_argument(
        "--workers", type=int, default=d.workers, help="processes, each with its own models"
    )
    s.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    s.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes)
    s.add_argument("--max-claim-chars", type=int, default=d.max_claim_chars)
    s.add_argument("--max-k", type=int, default=d.max_k)
    s.add_argument(
        "--time-budget",
        type=float,
        default=d.time_budget_s,
        help="seconds per request (504 past it)",
    )
    s.add_argument(
        "--concurrent-searches",
        type=int,
        default=d.concurrent_searches,
        help="searches run at once per worker; the rest queue (default 2: this machine's cores)",
    )
    s.add_argument("--access-log", action="store_true", help="log every request")
    s.add_argument(
        "--no-idle-fill",
        action="store_true",
        help="do not compute the perspectives' lower states while idle (by default the server "
        "keeps them with the index, so that a claim's first search computes none)",
    )
    s.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the searches on a Ray cluster ('auto', HOST:6379): the pools split into shards, "
        "the models on autoscaled replicas (pip install 'perspect[ray]'); the same HTTP API",
    )
    s.add_argument(
        "--shards", type=int, default=None, help="with --ray: shards (default: one a node)"
    )
    s.add_argument(
        "--replicas", type=int, default=d.replicas, help="with --ray: the least pipeline replicas"
    )
    add_home(s)
    s.set_defaults(func=cmd_serve)
