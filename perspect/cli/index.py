"""`perspect index build|complete|add|rebuild|delete|status`: writes go through the API, with rich
bars."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from perspect.cli.common import (
    add_backend,
    add_home,
    add_pool_inputs,
    console,
    engine_args,
)
from perspect.core.presentation.render import json_text, literal
from perspect.core.types import POOLS

# seconds `index add` waits for another writer of the index (the service, another add) before
# it gives up with one line: two adds started together both land (tests/test_soak.py)
WRITER_WAIT_S = 120.0


def _sources(args: argparse.Namespace):
    from perspect.api import Source

    out = []
    for pool in POOLS:
        for path in getattr(args, pool) or []:
            out.append(
                Source(
                    pool=pool,
                    path=Path(path),
                    fmt=args.format,
                    id_field=args.id_field,
                    text_field=args.text_field,
                )
            )
    return out


def _print_report(rep, verb: str) -> None:
    c = console()
    parts = [f"{p}: {n:,}" for p, n in rep.counts.items()]
    c.print(f"[green]✓[/] {verb} index [bold]{rep.index}[/] ({rep.version}) — {', '.join(parts)}")
    for pool, n in rep.added.items():
        extra = f", replaced {rep.replaced.get(pool, 0):,}" if rep.replaced.get(pool) else ""
        c.print(f"  {pool}: added {n:,}{extra}")
    for pool, n in rep.deleted.items():
        c.print(f"  {pool}: deleted {n:,}, not found {rep.not_found.get(pool, 0):,}")
    if rep.duplicate_ids:
        c.print(f"  [yellow]duplicate ids skipped: {rep.duplicate_ids:,}[/]")
    if rep.duplicate_texts:
        c.print(f"  [yellow]duplicate texts (kept, different ids): {rep.duplicate_texts:,}[/]")
    if rep.skipped_bad:
        c.print(f"  [yellow]bad records skipped: {rep.skipped_bad:,}[/]")


def _index_config(args: argparse.Namespace):
    from perspect import api

    retrievers = [r.strip() for r in (args.retrievers or "").split(",") if r.strip()]
    return api.index_config(
        retrievers or None,
        dense_model=args.dense_model,
        colbert_model=args.colbert_model,
        colbert_config=args.colbert_config,
        engine=args.backend,
        es_url=args.es_url,
        note=lambda msg: console(stderr=True).print(f"[yellow]note:[/] {literal(msg)}"),
        colbert_pools=_pools(args.colbert_pools),
        stance_states=args.stance_states,
    )


def _pools(value: str | None) -> tuple[str, ...] | None:
    if not value:
        return None
    return POOLS if value == "all" else tuple(p.strip() for p in value.split(",") if p.strip())


def cmd_index_build(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    engine_args(args)
    config = _index_config(args)

    def searchable(version: str) -> None:
        rest = (
            f"the rest: perspect index complete --name {args.name}"
            if args.pending
            else "completing the rest"
        )
        console().print(f"[green]✓[/] {args.name!r} is searchable ({version}); {rest}")

    with RichReporter(quiet=args.quiet) as rep:
        report = api.build_index(
            args.name,
            _sources(args),
            home=args.home,
            config=config,
            reporter=rep,
            skip_bad=args.skip_bad,
            ray=args.ray,
            leave_pending=args.pending,
            on_searchable=searchable,
        )
    _print_report(report, "built")
    return 0


def cmd_index_complete(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    t0 = time.perf_counter()
    with RichReporter(quiet=args.quiet) as rep:
        manifest = api.complete_index(args.name, home=args.home, reporter=rep, ray=args.ray)
    if manifest is None:
        console().print(f"{args.name!r} is complete already: nothing was pending")
        return 0
    console().print(
        f"[green]✓[/] {args.name!r} is complete ({manifest['version']}, "
        f"{time.perf_counter() - t0:.0f} s)"
    )
    return 0


def pending_line(manifest: dict, name: str) -> str | None:
    """What the live version of a build still waits for (its first, searchable version)."""
    got = manifest.get("pending")
    if not got:
        return None
    line = f"{name}: searchable; pending: {', '.join(got.get('work', []))}"
    running = manifest.get("completing")
    if not running:
        return f"{line} (perspect index complete --name {name})"
    done, total = running.get("done", 0), running.get("total")
    far = f" {100 * done / total:.0f} % of {total:,}" if total else ""
    took = max(0.0, float(running.get("at", 0)) - float(running.get("started", 0)))
    return f"{line}; completing: {running.get('stage')}{far} ({took / 60:.1f} min in)"


def _urls(args: argparse.Namespace) -> list[str]:
    """The pages and feeds given as --documents (fetched as `perspect news add` fetches)."""
    docs = args.documents or []
    args.documents = [d for d in docs if not d.startswith(("http://", "https://"))]
    return [d for d in docs if d.startswith(("http://", "https://"))]


def cmd_index_add(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    urls = _urls(args)
    sources = _sources(args)
    engine_args(args)
    api.check_engine(args.name, args.backend, home=args.home)
    with RichReporter(quiet=args.quiet) as rep:
        if urls:
            got = api.add_news(args.name, urls, home=args.home, reporter=rep, pool="documents")
        if sources or not urls:
            report = api.add_to_index(
                args.name, sources, home=args.home, reporter=rep, skip_bad=args.skip_bad,
                wait=WRITER_WAIT_S, ray=args.ray,
            )  # fmt: skip
    if urls:
        c = console()
        for o in got.outcomes:
            c.print(f"  {literal(o.line())}")
        c.print(f"[green]✓[/] documents from the web: {got.summary()}; {got.sentences:,} sentences")
    if sources or not urls:
        _print_report(report, "updated")
    return 0


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    with RichReporter(quiet=args.quiet) as rep:
        manifest = api.rebuild_index(
            args.name, args.retriever, args.model, home=args.home, reporter=rep
        )
    if args.retriever == "stance":
        got = manifest.get("stance_states", {})
        console().print(
            f"[green]✓[/] stored the stance trunk's states of {got.get('count', 0)} perspectives "
            f"of {args.name!r} ({got.get('seconds', 0):.0f} s)"
        )
        return 0
    model = manifest["config"]["backends"].get(args.retriever, {}).get("model")
    console().print(
        f"[green]✓[/] re-encoded {', '.join(manifest['pools'])} of {args.name!r} with "
        f"{args.retriever}" + (f" ({model})" if model else "")
    )
    return 0


def cmd_index_delete(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    engine_args(args)
    api.check_engine(args.name, args.backend, home=args.home)
    with RichReporter(quiet=args.quiet) as rep:
        report = api.delete_from_index(args.name, args.pool, args.ids, home=args.home, reporter=rep)
    _print_report(report, "updated")
    return 0


def cmd_index_status(args: argparse.Namespace) -> int:
    """Every index of the home; a damaged one is listed as damaged (its error and fix), and the
    command then exits 2 after printing the whole list, so a script notices it."""
    from rich.table import Table

    from perspect import api

    engine_args(args)
    home, rows = api.index_status(args.name, args.home)
    if args.name and args.backend and not rows[0].get("damaged"):
        api.check_engine(args.name, args.backend, home=args.home)
    damaged = [m for m in rows if m.get("damaged")]
    if args.json:
        print(json_text({"home": str(home), "indexes": rows}))
        return 2 if damaged else 0
    if not rows:
        console().print(
            f"no indexes in {literal(home)}  (build one: perspect index build --name NAME "
            "--perspectives FILE)"
        )
        return 0
    t = Table(title=f"indexes in {literal(home)}")
    for col in ("name", "version", "pool", "items", "retrievers", "sources", "updated"):
        t.add_column(col)
    for m in rows:
        if m.get("damaged"):
            t.add_row(literal(m["name"]), "", "[bold red]damaged[/]", "", "", "", "")
            continue
        for i, (pool, e) in enumerate(m["pools"].items()):
            srcs = [Path(s["path"]).name for s in m["sources"] if s["pool"] == pool]
            t.add_row(
                m["name"] if i == 0 else "",
                m["version"] if i == 0 else "",
                pool,
                f"{e['count']:,}" + _articles(m, pool, e),
                ",".join(e["retrievers"])
                + (" (elasticsearch)" if api.index_engine(m) == "elasticsearch" else ""),
                literal(", ".join(dict.fromkeys(srcs))),
                m["updated_at"] if i == 0 else "",
            )
    console().print(t)
    for m in rows:
        line = None if m.get("damaged") else pending_line(m, m["name"])
        if line:
            console().print(f"[yellow]{literal(line)}[/]", soft_wrap=True)
    err = console(stderr=True)
    for m in damaged:
        err.print(f"[bold red]error:[/] {literal(m['damaged'])}", highlight=False, soft_wrap=True)
        if m.get("hint"):
            err.print(f"  [dim]hint:[/] {literal(m['hint'])}", soft_wrap=True)
    return 2 if damaged else 0


def _articles(manifest: dict, pool: str, entry: dict) -> str:
    """An article pool's count of articles, and (documents) of the sentences a search can mine
    with the relation model's stored states."""
    if "articles" not in entry:
        return ""
    said = f" sentences of {entry['articles']:,} articles"
    states = manifest.get(f"stance_states_{pool}", {}).get("count")
    return said + (f"; {states:,} ready to mine" if states is not None else "")


def add_ray(p) -> None:
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the models' passes on a Ray cluster ('auto', HOST:6379 or ray://HOST:10001; "
        "pip install 'perspect[ray]'): the same index is written",
    )


def register(sub) -> None:
    """`perspect index`."""
    idx = sub.add_parser("index", help="build and maintain indexes").add_subparsers(
        dest="sub", required=True
    )
    b = idx.add_parser("build", help="build (or rebuild) an index from pool files")
    b.add_argument("--name", required=True)
    b.add_argument(
        "--retrievers",
        default=None,
        help="comma-separated of bm25,dense,colbert (default: all three when a ColBERT model "
        "exists, else bm25,dense)",
    )
    b.add_argument("--colbert-model", help="ColBERT model folder (default: models/colbert)")
    b.add_argument(
        "--colbert-pools",
        metavar="POOLS",
        help="pools ColBERT indexes, comma-separated, or 'all' (default: perspectives,news, and "
        "documents wherever news is: the search reads evidence through BM25 + dense links, not "
        "ColBERT)",
    )
    b.add_argument(
        "--dense-model",
        help="sentence-transformers folder or hub id (default: models/dense when "
        "`perspect train --task dense` wrote it, else the packaged all-MiniLM-L6-v2)",
    )
    b.add_argument(
        "--colbert-config",
        metavar="PLAN_JSON",
        help="take ColBERT settings from a colbert-ai/RAGatouille plan.json or metadata.json",
    )
    b.add_argument(
        "--stance-states",
        action="store_true",
        help="store every perspective's and document sentence's lower states now (slower build; "
        "by default a search computes those it needs once and keeps them with the index)",
    )
    add_pool_inputs(b)
    add_home(b)
    b.add_argument(
        "--pending",
        action="store_true",
        help="stop once the index is searchable (the perspectives through every retriever, the "
        "other pools through BM25); `perspect index complete` does the rest",
    )
    add_backend(b, build=True)
    add_ray(b)
    b.set_defaults(func=cmd_index_build)
    c = idx.add_parser(
        "complete", help="finish what `index build --pending` left: vectors, ColBERT, links"
    )
    c.add_argument("--name", required=True)
    c.add_argument("-q", "--quiet", action="store_true")
    add_home(c)
    add_ray(c)
    c.set_defaults(func=cmd_index_complete)
    a = idx.add_parser("add", help="add or replace items in an existing index")
    a.add_argument("--name", required=True)
    add_pool_inputs(a)
    add_home(a)
    add_backend(a)
    add_ray(a)
    a.set_defaults(func=cmd_index_add)
    r = idx.add_parser(
        "rebuild",
        help="re-encode all pools with one retriever (a new model, or a retriever the index "
        "lacks); the others are kept",
    )
    r.add_argument("--name", required=True)
    r.add_argument(
        "--retriever",
        required=True,
        choices=["bm25", "dense", "colbert", "stance"],
        help="stance: store the stance trunk's lower-layer states of every perspective",
    )
    r.add_argument(
        "--model", help="model folder or hub id (default: models/dense or models/colbert)"
    )
    r.add_argument("-q", "--quiet", action="store_true")
    add_home(r)
    r.set_defaults(func=cmd_index_rebuild)
    d = idx.add_parser("delete", help="delete items by id")
    d.add_argument("--name", required=True)
    d.add_argument("--pool", required=True, choices=POOLS)
    d.add_argument("--ids", required=True, nargs="+")
    d.add_argument("-q", "--quiet", action="store_true")
    add_home(d)
    add_backend(d)
    d.set_defaults(func=cmd_index_delete)
    s = idx.add_parser(
        "status", help="what is in each index (a damaged one is marked; exit 2 then)"
    )
    s.add_argument("--name")
    s.add_argument("--json", action="store_true")
    add_home(s)
    add_backend(s)
    s.set_defaults(func=cmd_index_status)
