"""`make models` step "argument": train the argument model (resuming a stopped run from its
checkpoint outside the repository), fit the cuts a reader acts on, pack it into the bundle.

The cuts (perspect.core.model.decisions.ArgumentCuts) are fitted on tune data only
(perspect.lab.argument_eval): the PERSPECTRUM tune claims for sides and evidence, one held-out
UKP topic for mining; the other held-out UKP topic, Touché test, IBM Claim Stance test and
PERSPECTRUM dev only report (bench/argument.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from perspect.lab import argument_eval as ae
from perspect.lab.train import argument as trainer
from perspect.lab.train import argument_data as ad

MINE_FIT_TOPIC = ae.MINE_FIT_TOPIC


def fit_folder(
    folder: Path, data: Path, argument: Path, log=print, direction: Path | None = None
) -> dict:
    """Fit the cuts of the trained (unpacked) model in `folder` into its manifest (with
    `direction`, checked on its dev debates too: argument_eval.debate_cuts)."""
    from perspect.reranker import factory

    model = factory.load(["argument"], entries={"argument": folder}).argument
    cache = ae.StateCache(model.lower)
    s = ae.sets(data, argument, direction=direction)
    need = ("perspectrum_tune", f"ukp_fit:{MINE_FIT_TOPIC}")
    need += tuple(k for k in ("direction_debates", "direction_iam") if k in s)
    kept = folder / "fit_scores.npz"  # the scores, so a re-fit of the cuts alone is quick
    p = dict(np.load(kept)) if kept.is_file() else {}
    if not p:
        p = {k: ae.score_rows(model, cache, s[k]) for k in need}
        log(f"fit: scored {sum(len(s[k]) for k in need)} rows")
        p["tune_bags"] = ae.score_bags(model, cache, s["tune_bags"])
        np.savez(kept, **p)
    cuts = ae.fit_cuts(p, s, MINE_FIT_TOPIC)
    kept.unlink()  # not shipped: the bundle holds weights and manifests
    log(f"fit: cuts {json.dumps(cuts)}")
    man_path = folder / "manifest.json"
    man = json.loads(man_path.read_text())
    man.setdefault("decisions", {})["argument"] = cuts
    man_path.write_text(json.dumps(man, indent=2) + "\n")
    return cuts


def refit_mine_cuts(entry: Path, argument: Path, log=print) -> dict:
    """Refit only mining's two cuts of a packed bundle entry in place (a fix to what they are
    fitted on needs no retraining): score the fit topic's train and val rows with the model as
    shipped and write the cuts into its manifest; the weights are untouched."""
    from perspect.core.model import bundle
    from perspect.reranker import factory

    model = factory.load(["argument"], entries={"argument": entry}).argument
    rows = ad.ukp_rows(argument)[f"{MINE_FIT_TOPIC}:fit"]
    p = ae.score_rows(model, ae.StateCache(model.lower), rows)
    cuts, fitted = ae.fit_mine_cuts(p, rows, MINE_FIT_TOPIC)
    man = json.loads((entry / "manifest.json").read_text())
    arg = man["decisions"]["argument"]
    arg.update(cuts)
    arg["fitted_on"].update(fitted)
    text = json.dumps(man, indent=2) + "\n"
    bundle.replace_file(entry, "manifest.json", text.encode(), "mining cuts refit on train + val")
    log(f"refit: mining cuts {json.dumps(cuts)}, {json.dumps(fitted)} on {len(rows)} rows")
    return cuts


def train_entry(data: Path, folder: Path, log, argument: Path, warm_start: Path, **options):
    """Train (resumable: the work folder outside the repository keeps the cached states and the
    checkpoint), fit the cuts, pack into `folder`."""
    defaults = vars(trainer.parser().parse_args(["--out", "unused"]))
    args = argparse.Namespace(**{**defaults, **options})
    args.data, args.argument, args.warm_start = Path(data), Path(argument), Path(warm_start)
    args.work = Path(args.work) if args.work else trainer.default_work()
    args.out = args.work / "out"
    args.work.mkdir(parents=True, exist_ok=True)
    res = trainer.run(args, log)
    shipped = ship_folder(args.out, args.work / "shipped", log)
    res["cuts"] = fit_folder(shipped, args.data, args.argument, log, args.direction)
    trainer.pack(shipped, Path(folder))
    return res


def ship_folder(trained: Path, dest: Path, log=print) -> Path:
    """A copy of the trained folder with its adapter cut to the shipped rank, in float16
    (perspect.lab.train.argument.compress): the cuts are fitted on what ships."""
    import shutil

    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(trained, dest, ignore=shutil.ignore_patterns("onnx"))
    kept = trainer.compress(dest)
    man = json.loads((dest / "manifest.json").read_text())
    man["shipped_adapter"] = kept
    (dest / "manifest.json").write_text(json.dumps(man, indent=2) + "\n")
    log(f"shipped adapter: {kept}")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description="fit the argument model's cuts into its manifest")
    ap.add_argument("folder", type=Path, help="a trained (unpacked) argument model")
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--argument", type=Path, default=Path("../shared/data/argument"))
    ap.add_argument("--pack", type=Path, default=None, help="then pack it into this entry")
    ap.add_argument("--direction", type=Path, default=None,
                    help="../shared/data/direction: check the cuts on its dev debates too")  # fmt: skip
    ap.add_argument("--work", type=Path, default=None, help="where the shipped copy is made")
    ap.add_argument("--mine-cuts-only", action="store_true",
                    help="FOLDER is a packed entry: refit mining's cuts only, in place")  # fmt: skip
    a = ap.parse_args()
    if a.mine_cuts_only:
        refit_mine_cuts(a.folder, a.argument)
        return
    shipped = ship_folder(a.folder, (a.work or trainer.default_work()) / "shipped")
    fit_folder(shipped, a.data, a.argument, direction=a.direction)
    if a.pack is not None:
        trainer.pack(shipped, a.pack)


if __name__ == "__main__":
    main()
