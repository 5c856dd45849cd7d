"""`perspect train`: one model or step of the bundle (perspect.api.train)."""

from __future__ import annotations

import argparse
import json

from perspect.cli.common import (
    DEFAULT_CLAIMDIFF,
    DEFAULT_DATA,
    add_home,
    console,
)
from perspect.core.errors import PerspectError
from perspect.core.presentation.render import literal


def cmd_train(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

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
            stance_model=args.stance_model,
            train_layers=_layers(args.train_layers),
            max_minutes=args.max_minutes,
            reporter=rep,
            log=lambda msg: console(stderr=True).print(literal(msg)),
        )
    m = r.manifest
    if args.task == "average":
        console().print(
            f"[green]✓[/] averaged {len(args.models or [])} models → {r.out} "
            f"(re-fit its decisions: perspect train --task calibrate --out {r.out})"
        )
    elif args.task == "calibrate":
        console().print(
            f"[green]✓[/] recalibrated {r.out}: tune-claim metrics "
            f"{json.dumps({k: v.get('f1') for k, v in m['tune_metrics'].items()})}"
        )
    elif args.task in api.ENCODERS:
        console().print(
            f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s "
            f"({m['training']['steps']} steps) → {r.out}"
        )
    elif args.task == "claimdiff":
        d = m["dev_metrics"]["dev"]
        console().print(
            f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s → {r.out}\n"
            f"  dev: -S F1 {d['S']['f1']:.1f} AUROC {d['S']['auroc']:.3f} · -W F1 "
            f"{d['W']['f1']:.1f} AUROC {d['W']['auroc']:.3f} · rationale token F1 "
            f"{d['rationale']['token_f1']:.1f}"
        )
    else:
        console().print(f"[green]✓[/] trained {r.what} in {m['total_seconds']:.0f} s → {r.out}")
        console().print(f"  thresholds: {m['thresholds']}")
        if "dev_metrics" in m:
            console().print(f"  dev: {json.dumps(m['dev_metrics'])}")
    return 0


def _layers(value: str | None) -> int | str | None:
    if value is None or value == "all":
        return value
    try:
        return int(value)
    except ValueError:
        raise PerspectError(f"--train-layers takes a number or 'all', got {value!r}") from None


def register(sub) -> None:
    """`perspect train`."""
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
        "--stance-model",
        metavar="DIR",
        default=None,
        help="calibrate: read P(support) from this stance trunk (models/stance) instead of the "
        "pair model's stance head; 'none' drops it; default: keep the model's",
    )
    t.add_argument(
        "--index",
        default=None,
        help="calibrate: run on this index of the PERSPECTRUM pools (default: a scratch one)",
    )
    add_home(t)
    t.add_argument(
        "--base",
        default=None,
        help="base encoder: folder or hub id (default: packaged all-MiniLM-L6-v2)",
    )
    t.add_argument("--profile", default="full", choices=["quick", "full", "continue", "claimdiff"])
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
