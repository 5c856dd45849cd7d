"""The model bundle in the API: list, verify, prepare and make the models in `models/`
(perspect.core.model.bundle is the format, perspect.lab.recipe the steps; re-exported by perspect.api)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from perspect.core import paths
from perspect.core.model import bundle
from perspect.core.progress import Reporter
from perspect.reranker import factory
from perspect.reranker.factory import Prepared

if TYPE_CHECKING:
    from perspect.lab import recipe


def models_dir(folder: str | Path | None = None) -> Path:
    return Path(folder) if folder else paths.models_dir()


def models(folder: str | Path | None = None) -> list[bundle.BundleEntry]:
    """The bundle's models (every sub-folder with a `bundle.json`), by name."""
    root = models_dir(folder)
    found = sorted(p.parent for p in root.glob(f"*/{bundle.MANIFEST}")) if root.is_dir() else []
    return [bundle.BundleEntry.read(p) for p in found]


def verify_models(folder: str | Path | None = None) -> dict[str, list[str]]:
    """Every model's problems (empty list: each file, each made ONNX graph and its base match
    their checksums). A model folder without its `bundle.json` is a problem, not a skip."""
    out = {e.name: bundle.verify(e) for e in models(folder)}
    for d in unchecked_models(folder):
        out.setdefault(d.name, [f"{d / bundle.MANIFEST} is missing: nothing of {d} can be checked"])
    return out


def unchecked_models(folder: str | Path | None = None) -> list[Path]:
    """Folders of the bundle without their `bundle.json`: never loaded, and said so."""
    root = models_dir(folder)
    found = sorted(root.iterdir()) if root.is_dir() else []
    return [d for d in found if bundle.unchecked_entry(d)]


def prepare_models(folder: str | Path | None = None, kernels: bool = True) -> list[Prepared]:
    """Export the ONNX graphs a search serves its models from, so that the first search of a
    process loads neither torch nor transformers for them, and compile PLAID's kernels where
    the bundle has ColBERT (unless `kernels` is False: an index build compiles them beside its
    encoders; perspect.reranker.factory.prepare says what and how long)."""
    return factory.prepare(models_dir(folder), kernels=kernels)


def make_models(
    data: str | Path = Path("data") / "perspectrum",
    folder: str | Path | None = None,
    *,
    only: Sequence[str] = (),
    stance_rounds: int = 3,
    colbert: bool = True,
    comparator: bool = True,
    claimdiff: str | Path | None = None,
    vitaminc: str | Path | None = None,
    dry_run: bool = False,
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
    corrections: str | None = None,
    home: str | Path | None = None,
    direction: bool = True,
) -> list[recipe.Outcome]:
    """`make models`: every bundle step whose inputs changed (or that never ran), in order.
    `corrections`: an index whose readers' corrections the pair model trains on too."""
    from perspect.lab import recipe

    steps = recipe.steps(stance_rounds, colbert, comparator, direction)
    other = recipe.OtherData(Path(claimdiff)) if claimdiff else recipe.OtherData()
    if vitaminc:
        other = replace(other, vitaminc=Path(vitaminc))
    if corrections:
        from perspect.lab.train.pair_data import index_corrections

        other = replace(other, corrections=index_corrections(corrections, home))
        log(f"training on {len(other.corrections)} corrections of index {corrections!r}")
    return recipe.make(
        data,
        models_dir(folder),
        steps,
        only,
        reporter=reporter,
        log=log,
        dry_run=dry_run,
        other=other,
    )
