"""`perspect` command line: a thin layer over the Python API; errors print one line, exit 2."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from pathlib import Path

from perspect.core.errors import PerspectError
from perspect.core.render import json_text, literal
from perspect.core.types import POOLS


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


# -- data --------------------------------------------------------------------------------------
def cmd_data_fetch(args: argparse.Namespace) -> int:
    from perspect.core.data import fetch_local, fetch_perspectrum

    if args.dataset == "perspectrum":
        files = fetch_perspectrum(args.dest, args.source)
    else:
        files = fetch_local(args.dataset, args.source, args.dest)
    for f in files:
        _console().print(f"[green]✓[/] {literal(f)} ({f.stat().st_size:,} bytes)")
    return 0


# -- index -------------------------------------------------------------------------------------
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
    c = _console()
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
        note=lambda msg: _console(stderr=True).print(f"[yellow]note:[/] {literal(msg)}"),
    )


def _engine_args(args: argparse.Namespace) -> None:
    """`--es-url` for this run (credentials in it are used, never stored; the index keeps the
    URL without them). `--backend` is checked by `api.check_engine`."""
    import os

    if getattr(args, "es_url", None):
        os.environ["PERSPECT_ES_URL"] = args.es_url


def cmd_index_build(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.progress import RichReporter

    _engine_args(args)
    config = _index_config(args)
    with RichReporter(quiet=args.quiet) as rep:
        report = api.build_index(
            args.name,
            _sources(args),
            home=args.home,
            config=config,
            reporter=rep,
            skip_bad=args.skip_bad,
        )
    _print_report(report, "built")
    return 0


def cmd_index_add(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.progress import RichReporter

    sources = _sources(args)
    _engine_args(args)
    api.check_engine(args.name, args.backend, home=args.home)
    with RichReporter(quiet=args.quiet) as rep:
        report = api.add_to_index(
            args.name, sources, home=args.home, reporter=rep, skip_bad=args.skip_bad
        )
    _print_report(report, "updated")
    return 0


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.progress import RichReporter

    with RichReporter(quiet=args.quiet) as rep:
        manifest = api.rebuild_index(
            args.name, args.retriever, args.model, home=args.home, reporter=rep
        )
    model = manifest["config"]["backends"].get(args.retriever, {}).get("model")
    _console().print(
        f"[green]✓[/] re-encoded {', '.join(manifest['pools'])} of {args.name!r} with "
        f"{args.retriever}" + (f" ({model})" if model else "")
    )
    return 0


def cmd_index_delete(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.progress import RichReporter

    _engine_args(args)
    api.check_engine(args.name, args.backend, home=args.home)
    with RichReporter(quiet=args.quiet) as rep:
        report = api.delete_from_index(args.name, args.pool, args.ids, home=args.home, reporter=rep)
    _print_report(report, "updated")
    return 0


def cmd_index_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from perspect import api

    _engine_args(args)
    if args.name:
        api.check_engine(args.name, args.backend, home=args.home)
    home, rows = api.index_status(args.name, args.home)
    if args.json:
        print(json_text({"home": str(home), "indexes": rows}))
        return 0
    if not rows:
        _console().print(
            f"no indexes in {literal(home)}  (build one: perspect index build --name NAME "
            "--perspectives FILE)"
        )
        return 0
    t = Table(title=f"indexes in {literal(home)}")
    for col in ("name", "version", "pool", "items", "retrievers", "sources", "updated"):
        t.add_column(col)
    for m in rows:
        for i, (pool, e) in enumerate(m["pools"].items()):
            srcs = [Path(s["path"]).name for s in m["sources"] if s["pool"] == pool]
            t.add_row(
                m["name"] if i == 0 else "",
                m["version"] if i == 0 else "",
                pool,
                f"{e['count']:,}",
                ",".join(e["retrievers"])
                + (" (elasticsearch)" if api.index_engine(m) == "elasticsearch" else ""),
                literal(", ".join(dict.fromkeys(srcs))),
                m["updated_at"] if i == 0 else "",
            )
    _console().print(t)
    return 0


# -- search ------------------------------------------------------------------------------------
def cmd_search(args: argparse.Namespace) -> int:
    from perspect.api import Perspect

    retrieval_only = args.retrieval_only or args.pool != "perspectives" or args.retriever
    with Perspect.open(args.index, home=args.home, model=args.model, fast=args.fast) as p:
        if not retrieval_only:
            res = p.search(args.claim, k=args.k)
            if args.json:
                print(json_text(res.to_json()))
            else:
                from perspect.core.render import print_result

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
    _console().print(t)
    if not res.hits:
        _console().print("[yellow]no matching items[/]")
    return 0


# -- models ------------------------------------------------------------------------------------
DEFAULT_DATA = Path("data") / "perspectrum"
DEFAULT_CLAIMDIFF = Path("data") / "claimdiff"


def cmd_train(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.progress import RichReporter

    with RichReporter(quiet=args.quiet) as rep:
        r = api.train(
            args.task,
            args.data or (DEFAULT_CLAIMDIFF if args.task == "claimdiff" else DEFAULT_DATA),
            args.out,
            base=args.base,
            profile=args.profile,
            init=args.init,
            models=args.models or (),
            index=args.index,
            home=args.home,
            equivalence_model=args.equivalence_model,
            train_layers=_layers(args.train_layers),
            max_minutes=args.max_minutes,
            reporter=rep,
            log=lambda msg: _console(stderr=True).print(literal(msg)),
        )
    m = r.manifest
    if args.task == "average":
        _console().print(
            f"[green]✓[/] averaged {len(args.models or [])} models → {r.out} "
            f"(re-fit its decisions: perspect train --task calibrate --out {r.out})"
        )
    elif args.task == "calibrate":
        _console().print(
            f"[green]✓[/] recalibrated {r.out}: tune-claim metrics "
            f"{json.dumps({k: v.get('f1') for k, v in m['tune_metrics'].items()})}"
        )
    elif args.task in api.ENCODERS:
        _console().print(
            f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s "
            f"({m['training']['steps']} steps) → {r.out}"
        )
    elif args.task == "claimdiff":
        d = m["dev_metrics"]["dev"]
        _console().print(
            f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s → {r.out}\n"
            f"  dev: -S F1 {d['S']['f1']:.1f} AUROC {d['S']['auroc']:.3f} · -W F1 "
            f"{d['W']['f1']:.1f} AUROC {d['W']['auroc']:.3f} · rationale token F1 "
            f"{d['rationale']['token_f1']:.1f}"
        )
    else:
        _console().print(f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s → {r.out}")
        _console().print(f"  thresholds: {m['thresholds']}")
        if "dev_metrics" in m:
            _console().print(f"  dev: {json.dumps(m['dev_metrics'])}")
    return 0


def _layers(value: str | None) -> int | str | None:
    if value is None or value == "all":
        return value
    try:
        return int(value)
    except ValueError:
        raise PerspectError(f"--train-layers takes a number or 'all', got {value!r}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.table import Table

    from perspect import api
    from perspect.core.render import highlight

    res = api.compare(args.a, args.b, model_dir=args.model)
    if args.json:
        print(json_text(res.to_json()))
        return 0
    con = _console()
    con.print(
        f"[bold]A[/] {literal(res.a.title)} ({len(res.a.sentences)} sentences)  →  "
        f"[bold]B[/] {literal(res.b.title)} ({len(res.b.sentences)} sentences)"
    )
    con.print(
        f"A strengthens B in {100 * res.share('strengthens'):.0f}% of its sentences, weakens it "
        f"in {100 * res.share('weakens'):.0f}% ({res.candidates} related pairs compared, "
        f"{res.took_ms / 1000:.1f} s)"
    )
    for verb, title, colour in (
        ("strengthens", "Points of agreement (A strengthens B)", "green"),
        ("weakens", "Points of dispute (A weakens B)", "red"),
    ):
        links = [x for x in res.links if x.relation == verb]
        if not links:
            con.print(f"[{colour}]{title}:[/] none")
            continue
        t = Table(title=title, title_style=f"bold {colour}", show_lines=True)
        t.add_column("p", justify="right")
        t.add_column("A (rationale highlighted)")
        t.add_column("B")
        for x in links:
            t.add_row(
                f"{x.probability:.2f}",
                highlight(res.a.sentences[x.a], x.rationale, "bold underline"),
                literal(res.b.sentences[x.b]),
            )
        con.print(t)
    return 0


def cmd_eval_claimdiff(args: argparse.Namespace) -> int:
    from perspect.cli.eval import run_eval_claimdiff

    return run_eval_claimdiff(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from perspect.cli.eval import run_eval

    return run_eval(args)


def cmd_models(args: argparse.Namespace) -> int:
    from rich.table import Table

    from perspect import api

    if args.action == "make":
        from perspect.core.progress import RichReporter

        with RichReporter(quiet=args.quiet) as rep:
            done = api.make_models(
                args.data,
                args.dir,
                only=[s for s in (args.steps or "").split(",") if s],
                stance_rounds=args.stance_rounds,
                colbert=not args.no_colbert,
                comparator=not args.no_comparator,
                claimdiff=args.claimdiff,
                dry_run=args.dry_run,
                reporter=rep,
                log=lambda msg: _console(stderr=True).print(literal(msg)),
            )
        for o in done:
            state = f"trained in {o.seconds:.0f} s" if o.ran else "skipped"
            _console().print(f"  {o.step}: {state} (inputs {o.key})")
        return 0
    if args.action == "prepare":
        with _console(stderr=True).status("exporting the models' ONNX graphs (once per weights)"):
            done = api.prepare_models(args.dir)
        for d in done:
            mark = "[green]✓[/]" if d.served else "[yellow]![/]"
            how = "served on ONNX Runtime" if d.served else "stays on PyTorch (see the log)"
            _console().print(f"{mark} {d.name}: {how} ({d.seconds:.1f} s)")
        return 0
    entries = api.models(args.dir)
    if args.action == "verify":
        problems = api.verify_models(args.dir)
        bad = {name: p for name, p in problems.items() if p}
        if args.json:
            print(json.dumps(problems, indent=2))
        for name, p in problems.items():
            if not args.json:
                mark = "[green]✓[/]" if not p else "[bold red]✗[/]"
                _console().print(f"{mark} {name}" + (f": {p[0]}" if p else ""))
        if bad:
            raise PerspectError(
                f"{len(bad)} of {len(problems)} models failed verification",
                hint="restore them (git checkout -- models/) or retrain: make models",
            )
        return 0
    if args.json:
        print(json.dumps([e.to_json() for e in entries], indent=2))
        return 0
    t = Table(title=f"model bundle in {api.models_dir(args.dir)}")
    for col in ("name", "role", "size", "base", "trained", "dev metrics"):
        t.add_column(col)
    for e in entries:
        t.add_row(
            e.name,
            e.role,
            f"{e.size / 1e6:.1f} MB",
            f"{e.base_id} ({e.base_sha256[:8]})",
            str(e.record.get("code", "?"))[:12],
            e.summary(),
        )
    _console().print(t)
    for d in api.unchecked_models(args.dir):
        _console(stderr=True).print(
            f"[bold red]✗[/] {literal(str(d))}: bundle.json missing, not loaded "
            "(perspect models verify)"
        )
    if not entries:
        _console().print("[yellow]no models: the search falls back to retrieval only[/]")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from perspect.core.config import resolve_home

    resolve_home(args.home)  # a home that is a file: one line and exit 2, before the screen opens
    try:
        from perspect.tui.app import run
    except ImportError as e:
        raise PerspectError(
            f"the terminal UI needs textual ({e})", hint="pip install 'perspect[tui]'"
        ) from None
    compare = tuple(args.compare) if args.compare else None
    if compare:
        for f in compare:
            if not Path(f).is_file():
                what = "is a directory, not an article" if Path(f).is_dir() else "no such file"
                raise PerspectError(f"{f}: {what}", hint="perspect tui --compare A.md B.md")
    run(index=args.index, home=args.home, model=args.model, compare=compare, fast=args.fast)
    return 0


# -- parser ------------------------------------------------------------------------------------
def _add_backend(p: argparse.ArgumentParser, build: bool = False) -> None:
    p.add_argument(
        "--backend",
        choices=["embedded", "elasticsearch"],
        default="embedded" if build else None,
        help="where the retrievers live: embedded (tantivy, faiss, PLAID; default) or an "
        "Elasticsearch 8.18+/9.x cluster (credentials: PERSPECT_ES_API_KEY, or PERSPECT_ES_USER "
        "and PERSPECT_ES_PASSWORD)"
        if build
        else "check that the index lives on this backend",
    )
    p.add_argument(
        "--es-url",
        metavar="URL",
        help="Elasticsearch URL (default: $PERSPECT_ES_URL, else the one the index was built with)",
    )


def _add_home(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", help="folder holding indexes (default: $PERSPECT_HOME or ./indexes)")


def _add_pool_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--perspectives", action="append", metavar="PATH", help="perspective pool file")
    p.add_argument("--evidence", action="append", metavar="PATH", help="evidence pool file")
    p.add_argument(
        "--news", action="append", metavar="PATH", help="news articles (JSONL or folder)"
    )
    p.add_argument(
        "--format",
        choices=["json", "jsonl", "csv", "tsv", "txt"],
        help="input format (default: from the file extension)",
    )
    p.add_argument("--id-field", help="column/key holding the id (default: id, pId, eId, ...)")
    p.add_argument("--text-field", help="column/key holding the text (default: text, ...)")
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="index the good records of a file and skip bad ones (default: refuse)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perspect", description=__doc__.split(":")[0])
    ap.add_argument("--version", action="version", version="perspect 0.1.0")
    sub = ap.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="fetch datasets").add_subparsers(dest="sub", required=True)
    f = data.add_parser("fetch", help="download a dataset (or copy it with --from)")
    f.add_argument("dataset", choices=["perspectrum", "claimdiff"])
    f.add_argument("--dest", help="target folder (default: data/<dataset>)")
    f.add_argument("--from", dest="source", metavar="DIR", help="copy from a local folder instead")
    f.set_defaults(func=cmd_data_fetch)

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
        "--dense-model",
        help="sentence-transformers folder or hub id (default: models/dense when "
        "`perspect train --task dense` wrote it, else the packaged all-MiniLM-L6-v2)",
    )
    b.add_argument(
        "--colbert-config",
        metavar="PLAN_JSON",
        help="take ColBERT settings from a colbert-ai/RAGatouille plan.json or metadata.json",
    )
    _add_pool_inputs(b)
    _add_home(b)
    _add_backend(b, build=True)
    b.set_defaults(func=cmd_index_build)
    a = idx.add_parser("add", help="add or replace items in an existing index")
    a.add_argument("--name", required=True)
    _add_pool_inputs(a)
    _add_home(a)
    _add_backend(a)
    a.set_defaults(func=cmd_index_add)
    r = idx.add_parser(
        "rebuild",
        help="re-encode all pools with one retriever (a new model, or a retriever the index "
        "lacks); the others are kept",
    )
    r.add_argument("--name", required=True)
    r.add_argument("--retriever", required=True, choices=["bm25", "dense", "colbert"])
    r.add_argument(
        "--model", help="model folder or hub id (default: models/dense or models/colbert)"
    )
    r.add_argument("-q", "--quiet", action="store_true")
    _add_home(r)
    r.set_defaults(func=cmd_index_rebuild)
    d = idx.add_parser("delete", help="delete items by id")
    d.add_argument("--name", required=True)
    d.add_argument("--pool", required=True, choices=POOLS)
    d.add_argument("--ids", required=True, nargs="+")
    d.add_argument("-q", "--quiet", action="store_true")
    _add_home(d)
    _add_backend(d)
    d.set_defaults(func=cmd_index_delete)
    s = idx.add_parser("status", help="what is in each index")
    s.add_argument("--name")
    s.add_argument("--json", action="store_true")
    _add_home(s)
    _add_backend(s)
    s.set_defaults(func=cmd_index_status)

    t = sub.add_parser("train", help="train the pairwise models on PERSPECTRUM train")
    t.add_argument(
        "--task",
        default="all",
        choices=[
            "all",
            "relevance",
            "stance",
            "equivalence",
            "evidence",
            "colbert",
            "dense",
            "equivalence-ce",
            "calibrate",
            "average",
            "claimdiff",
        ],
        help="claimdiff: the ClaimDiff comparator (--data: a ClaimDiff folder, default "
        "data/claimdiff); calibrate: re-fit calibration, stacks and thresholds of the model at --out on the "
        "held-out train claims, without training; average: write the weight average of --models "
        "to --out",
    )
    t.add_argument(
        "--models",
        nargs="+",
        metavar="DIR",
        help="average: pair models trained from one another (e.g. the last two continue rounds)",
    )
    t.add_argument(
        "--equivalence-model",
        metavar="DIR",
        default=None,
        help="calibrate: add this equivalence cross-encoder (perspect train --task "
        "equivalence-ce) to the equivalence stack; 'none' drops it; default: keep the model's",
    )
    t.add_argument(
        "--index",
        default=None,
        help="calibrate: run on this index of the PERSPECTRUM pools (default: a scratch one)",
    )
    _add_home(t)
    t.add_argument(
        "--base",
        default=None,
        help="base encoder: folder or hub id (default: packaged all-MiniLM-L6-v2)",
    )
    t.add_argument("--profile", default="full", choices=["quick", "full", "continue"])
    t.add_argument(
        "--train-layers",
        metavar="N|all",
        help="pair model: top N encoder layers trained (profile default 3), or all (full fine-tune)",
    )
    t.add_argument("--max-minutes", type=float, help="pair model: training time budget")
    t.add_argument(
        "--init",
        metavar="DIR",
        help="go on training this saved pair model (e.g. --profile continue --init models/pair: "
        "more stance passes; the model is written to --out)",
    )
    t.add_argument(
        "--data",
        default=None,
        help="folder with the PERSPECTRUM files (default: data/perspectrum; claimdiff: "
        "data/claimdiff)",
    )
    t.add_argument(
        "--out",
        default=None,
        help="model folder to write (default: models/pair; colbert, dense: models/colbert, "
        "models/dense)",
    )
    t.add_argument("-q", "--quiet", action="store_true")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("eval", help="evaluate on a benchmark").add_subparsers(
        dest="sub", required=True
    )
    ep = e.add_parser("perspectrum", help="PERSPECTRUM T1-T5 (Chen et al. 2019, section 5)")
    ep.add_argument("--data", default=str(DEFAULT_DATA))
    ep.add_argument("--split", default="dev", choices=["train", "dev", "test"])
    ep.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    ep.add_argument(
        "--index",
        default=None,
        help="evaluate the engine on this index (default: a scratch index of the pools in "
        "--data, see --retrievers)",
    )
    _add_home(ep)
    ep.add_argument("--k-persp", type=int, default=None, help="perspective candidates per claim")
    ep.add_argument(
        "--retrievers",
        default=None,
        help="retrievers of the scratch index when no --index is given (default: those the "
        "model's decisions were fitted with, else bm25,dense)",
    )
    ep.add_argument("--limit", type=int, default=None, help="only the first N claims (smoke runs)")
    ep.add_argument("--quantize", action="store_true", help="int8 dynamic quantization (CPU)")
    ep.add_argument(
        "--fp32-equivalence",
        action="store_true",
        help="with --quantize: keep the equivalence cross-encoder in float32",
    )
    ep.add_argument(
        "--equivalence-max-pairs",
        type=int,
        default=None,
        metavar="N",
        help="at most N pairs per claim through the equivalence cross-encoder "
        "(EngineConfig.equivalence_ce_max_pairs; default: every pair that could merge)",
    )
    ep.add_argument(
        "--reference",
        default=None,
        metavar="FILE",
        help='published rows to print beside the table: {"rows": [{"system": ..., "T1": '
        '{"precision": .., "recall": .., "f1": ..}, ...}]} (see perspect/reference_rows.py)',
    )
    ep.add_argument("--json", action="store_true")
    ep.add_argument("-q", "--quiet", action="store_true")
    ep.set_defaults(func=cmd_eval)

    ec = e.add_parser("claimdiff", help="ClaimDiff -S / -W and rationales (Ko et al. 2023)")
    ec.add_argument(
        "--data", default=str(DEFAULT_CLAIMDIFF), help="ClaimDiff folder (upstream names)"
    )
    ec.add_argument(
        "--split",
        default="dev",
        choices=["dev", "test"],
        help="dev: carved from train by topic (perspect.core.claimdiff); test: upstream's",
    )
    ec.add_argument("--model", default=None, help="comparator folder (default: models/comparator)")
    ec.add_argument("--reference", default=None, metavar="FILE", help="the paper's rows (JSON)")
    ec.add_argument("--json", action="store_true")
    ec.add_argument("-q", "--quiet", action="store_true")
    ec.set_defaults(func=cmd_eval_claimdiff)

    mo = sub.add_parser(
        "models",
        help="list the model bundle (models/), verify its checksums, make it, or prepare its "
        "ONNX graphs (a fast first search)",
    )
    mo.add_argument(
        "action", nargs="?", default="list", choices=["list", "verify", "make", "prepare"]
    )
    mo.add_argument("--dir", help="bundle folder (default: $PERSPECT_MODELS or models/)")
    mo.add_argument("--data", default=str(DEFAULT_DATA), help="make: PERSPECTRUM folder")
    mo.add_argument("--steps", help="make: only these steps (comma-separated; default: all)")
    mo.add_argument("--stance-rounds", type=int, default=3, help="make: stance rounds (continue)")
    mo.add_argument("--no-colbert", action="store_true", help="make: leave ColBERT out")
    mo.add_argument(
        "--no-comparator", action="store_true", help="make: leave the ClaimDiff comparator out"
    )
    mo.add_argument("--claimdiff", help="make: ClaimDiff folder (default: data/claimdiff)")
    mo.add_argument("--dry-run", action="store_true", help="make: say what would run")
    mo.add_argument("-q", "--quiet", action="store_true")
    mo.add_argument("--json", action="store_true")
    mo.set_defaults(func=cmd_models)

    c = sub.add_parser(
        "compare", help="compare two articles point by point (where A strengthens or weakens B)"
    )
    c.add_argument("a", help="article A: .txt / .md (a leading '# title'), or a JSON(L) record")
    c.add_argument("b", help="article B")
    c.add_argument("--model", default=None, help="comparator folder (default: models/comparator)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)

    u = sub.add_parser("tui", help="the interactive terminal UI")
    u.add_argument("--index", default="default")
    u.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    u.add_argument("--fast", action="store_true", help="as perspect search --fast")
    u.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="open two articles side by side (A's sentences that strengthen or weaken B)",
    )
    _add_home(u)
    u.set_defaults(func=cmd_tui)

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
        help="int8 cross-encoders and at most 24 equivalence pairs: p50 1.4x and p95 5x faster "
        "here, for clustering quality (dev T3 over clusters 65.9 vs 69.3; README: Latency)",
    )
    q.add_argument(
        "--retrieval-only",
        action="store_true",
        help="plain top-k retrieval, no models (implied by --pool/--retriever)",
    )
    q.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    _add_home(q)
    q.set_defaults(func=cmd_search)
    return ap


def main(argv: list[str] | None = None) -> int:
    # The libraries' own tqdm bars (loading weights, loading a PLAID index) would interleave with
    # the CLI's rich output and the TUI's screen; Perspect reports its own progress. They read
    # these variables when imported, which the commands do lazily, after this line.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = build_parser().parse_args(argv)
    _pipe_errors_reach_main()
    if sys.stdout is None:  # `perspect ... >&-`: say so before doing any work
        print("error: standard output is closed; nothing could be printed", file=sys.stderr)
        return 2
    try:
        rc = args.func(args)
        sys.stdout.flush()  # a full disk or a gone reader is found here, not at exit
        return rc
    except PerspectError as e:
        err = _console(stderr=True)
        err.print(f"[bold red]error:[/] {literal(e.message)}", highlight=False, soft_wrap=True)
        if e.hint:
            err.print(f"  [dim]hint:[/] {literal(e.hint)}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        print("interrupted; the index is unchanged", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `perspect ... | head`: the reader left; say nothing more
        _drop_stdout()
        return 141
    except OSError as e:
        # writes to the index turn these into one EnvironmentFailure line already; reaching
        # here, it is the output that failed (`> /dev/full`, a file on a full disk)
        if e.errno not in _OUTPUT_ERRNOS:
            raise
        _drop_stdout()  # what is still buffered cannot be written either
        print(f"error: cannot write the output: {e.strerror or e}", file=sys.stderr)
        return 2


def _pipe_errors_reach_main() -> None:
    """rich turns a closed pipe into `SystemExit(1)`; its documented hook hands it back to
    `main`, which exits 141 as a shell expects of `perspect ... | head -1`."""
    from rich.console import Console

    def gone(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")

    Console.on_broken_pipe = gone


_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EPIPE}


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail (and print) a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
