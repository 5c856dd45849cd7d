"""`perspect models [list|verify|make|prepare]`: the shipped bundle."""

from __future__ import annotations

import argparse
import json

from perspect.cli.common import (
    DEFAULT_DATA,
    add_home,
    console,
)
from perspect.core.errors import PerspectError
from perspect.core.presentation.render import literal


def cmd_models(args: argparse.Namespace) -> int:
    from rich.table import Table

    from perspect import api

    if args.action == "make":
        from perspect.core.presentation.progress_bars import RichReporter

        with RichReporter(quiet=args.quiet) as rep:
            done = api.make_models(
                args.data,
                args.dir,
                only=[s for s in (args.steps or "").split(",") if s],
                stance_rounds=args.stance_rounds,
                colbert=not args.no_colbert,
                comparator=not args.no_comparator,
                claimdiff=args.claimdiff,
                vitaminc=args.vitaminc,
                dry_run=args.dry_run,
                corrections=args.corrections,
                home=args.home,
                direction=args.direction,
                reporter=rep,
                log=lambda msg: console(stderr=True).print(literal(msg)),
            )
        for o in done:
            state = f"trained in {o.seconds:.0f} s" if o.ran else "skipped"
            console().print(f"  {o.step}: {state} (inputs {o.key})")
        return 0
    if args.action == "prepare":
        what = "" if args.no_kernels else " and compiling PLAID's kernels"
        with console(stderr=True).status(
            f"exporting the models' ONNX graphs (once per weights){what}"
        ):
            done = api.prepare_models(args.dir, kernels=not args.no_kernels)
        for d in done:
            mark = "[green]✓[/]" if d.served else "[yellow]![/]"
            how = "served on ONNX Runtime" if d.served else "stays on PyTorch (see the log)"
            how = d.note or how
            console().print(f"{mark} {d.name}: {how} ({d.seconds:.1f} s)")
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
                console().print(f"{mark} {name}" + (f": {p[0]}" if p else ""))
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
    console().print(t)
    for d in api.unchecked_models(args.dir):
        console(stderr=True).print(
            f"[bold red]✗[/] {literal(str(d))}: bundle.json missing, not loaded "
            "(perspect models verify)"
        )
    if not entries:
        console().print("[yellow]no models: the search falls back to retrieval only[/]")
    return 0


def register(sub) -> None:
    """`perspect models`."""
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
    mo.add_argument("--no-direction", dest="direction", action="store_false",
                    help="make: without the direction and sides steps (the argument model "
                    "trained for direction as the sides' trunk), as bundles before issue 61")  # fmt: skip
    mo.add_argument("--no-kernels", action="store_true",
                    help="prepare: leave PLAID's kernels to the index build (which compiles "
                    "them beside its encoders)")  # fmt: skip
    mo.add_argument(
        "--no-comparator", action="store_true", help="make: leave the ClaimDiff comparator out"
    )
    mo.add_argument("--claimdiff", help="make: ClaimDiff folder (default: data/claimdiff)")
    mo.add_argument(
        "--vitaminc",
        help="make: the VitaminC file of the stance trunk's first phase "
        "(default: ../shared/data/vitaminc/vitaminc_real_shared.jsonl)",
    )
    mo.add_argument("--dry-run", action="store_true", help="make: say what would run")
    mo.add_argument(
        "--corrections",
        metavar="INDEX",
        help="make: the pair model also trains on this index's readers' corrections",
    )
    add_home(mo)
    mo.add_argument("-q", "--quiet", action="store_true")
    mo.add_argument("--json", action="store_true")
    mo.set_defaults(func=cmd_models)
