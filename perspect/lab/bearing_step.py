"""The `make models` step "bearing" (issue 71): the argument trunk taught what bears on a claim
as written, from the judged set, and the decisions a search acts on, in four stages that each
skip themselves when their output is there (so an interrupted run resumes):

1. a scratch index of PERSPECTRUM's pool (the candidates the judged set was drawn from),
2. a linear bearing head over the shipped trunk's pooled states (perspect.lab.bearing_fit):
   the trunk training's starting head,
3. the trunk's adapters and that head trained with the other heads distilled
   (perspect.lab.train.bearing), the last epoch packed into the entry,
4. the bearing decision's stacks and the verdict cuts fitted on the engine's own signals over
   the judged claims' candidates (bearing_fit.run_trained), written into the entry.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from perspect.core import paths
from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source

INDEX = "judged"
EPOCHS = 2  # the learning curve stopped paying after the second (bench/RESULTS.md)


def scratch_index(home: Path, data: Path, log) -> None:
    if (home / INDEX).is_dir():
        log(f"bearing: the candidates' index is in {home}")
        return
    log(f"bearing: building the candidates' index in {home} (PERSPECTRUM's pool)")
    Indexer(INDEX, home=home, config=IndexConfig(("bm25", "dense", "colbert"), links=False)).build(
        [Source("perspectives", data / "perspective_pool_v1.0.json")]
    )


def fit_entry(folder: Path, data: Path, work: Path, log=print) -> dict:
    from perspect.lab import bearing_fit
    from perspect.lab.train import argument as trainer
    from perspect.lab.train import bearing as train

    home = paths.cache_dir() / "bearing-index"
    scratch_index(home, data, log)
    ns = dict(index=INDEX, home=home, data=data, write=False, previous=None)
    head = work / "head" / "bearing_head.npz"
    if not head.is_file():  # stage 2: over the shipped trunk (no bearing head yet)
        bearing_fit.run(argparse.Namespace(work=work / "head", argument=folder, **ns), log)
    out = work / "trained-entry"
    if not (out / "manifest.json").is_file():  # stage 3
        targs = argparse.Namespace(work=work / "trunk", argument=folder, data=data,
                                   head_init=head, epochs=EPOCHS, lr=1e-4, batch=32, out=out)  # fmt: skip
        train.run(targs, log)
        train.export(targs, EPOCHS, log)
        trainer.pack(out, folder)
    # stage 4: the decisions over the trained trunk, the previous bundle's signals as baseline
    previous = work / "head" / "engine.jsonl"
    got = bearing_fit.run_trained(argparse.Namespace(
        work=work / "decisions", argument=folder,
        **{**ns, "write": True, "previous": previous if previous.is_file() else None}), log)  # fmt: skip
    return json.loads(json.dumps(got["decision"]["report"]))
