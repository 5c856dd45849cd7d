"""The one factory from the bundle to its loaded models: `load` gives a typed `Models` value.

Every caller asks here: the search front door (perspect.api's `Perspect`, the comparer), the
engine's callers in the lab (evaluation, fitting the decisions), the indexer (the stance trunk's
lower-layer states) and model preparation. A model is served as `Serving` says: from its exported
ONNX graph (no torch in the process; made at the first load for these weights) or on PyTorch, in
float32 or int8. Models the pair model's manifest names (the equivalence cross-encoder, the
stance trunk) come with it, checked to be the ones its decisions were fitted with.

Adding a model to the bundle is one field of `Models` and one loader in `LOADERS`: a function of
(the pair model or None, the entry asked for or None, `Serving`) that returns the model or None.
`served_class` / `open_served` map one bundle entry to its served model (reranker.served's life
cycle), for the callers that hold an entry rather than a pair model; `prepare` makes every graph
a search serves (and PLAID's kernels) before the first search does (`perspect models prepare`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspect.core import background, paths
from perspect.core.errors import ModelError
from perspect.core.model import bundle
from perspect.reranker import equivalence_ce, stance_trunk
from perspect.reranker.argument import ArgumentModel
from perspect.reranker.comparator import Comparator
from perspect.reranker.equivalence_ce import EquivalenceModel
from perspect.reranker.model import PairModel
from perspect.reranker.served import ServedModel
from perspect.reranker.stance_trunk import StanceTrunk


@dataclass(frozen=True)
class Serving:
    """How models are served: `onnx` their exported graphs on ONNX Runtime (else PyTorch), `int8`
    the int8 copies (ONNX Runtime's per channel; PyTorch's dynamic int8 on PyTorch), and the
    equivalence cross-encoder's own int8 choice (None: as `int8`)."""

    onnx: bool = True
    int8: bool = False
    int8_equivalence: bool | None = None
    # make a model's graphs where they are missing (a search); False: serve the graphs made
    # before (`perspect models prepare`, an earlier search), else PyTorch, so that an index
    # write never writes into the model folders (an installed package's: tests/test_install.py)
    export: bool = True

    @property
    def equivalence_int8(self) -> bool:
        return self.int8 if self.int8_equivalence is None else self.int8_equivalence


TORCH = Serving(onnx=False)
WRITER = Serving(export=False)  # index writes: the graphs made before, else PyTorch


@dataclass(frozen=True)
class Models:
    """The models of one use of the bundle, loaded once. None: not asked for, or not in the
    bundle (no comparator: no news), or not named by the pair model (no trunk: stance from the
    pair model's head)."""

    pair: PairModel | None = None  # relevance, stance, equivalence and evidence heads
    equivalence: EquivalenceModel | None = None  # the cross-encoder the pair model names
    trunk: StanceTrunk | None = None  # the stance trunk the pair model (or the bundle's) names
    comparator: Comparator | None = None  # ClaimDiff: news sentences and article comparison
    # the joint reader (the comparator's inference head) that reads cited reasons back, where the
    # pair model names it (`reason_reader`, perspect.pipeline.why.read_back)
    reader: Comparator | None = None
    # the argument model (for / against / neither at three levels), where the bundle has one
    argument: ArgumentModel | None = None
    # the relation model for what only it answers yet (news relations: its ClaimDiff head; compare:
    # its equivalence head), where the pair model's trunk is another (the argument model, issue 62)
    relation: StanceTrunk | None = None


Loader = Callable[[PairModel | None, Path | None, Serving], Any]


def load(
    want: Iterable[str] = ("pair", "equivalence", "trunk"),
    serving: Serving = Serving(),
    pair: PairModel | str | Path | None = None,
    entries: Mapping[str, str | Path] | None = None,
) -> Models:
    """The models named in `want` (fields of `Models`), served as `serving` says. `pair`: the
    pair model's folder (default the bundle's), or a pair model in memory (its decisions being
    fitted); the models it names are resolved from it. `entries`: the folder of another model
    (e.g. {"comparator": dir}; one given is required to load, one not given is the bundle's,
    None where the bundle has none)."""
    want = tuple(want)
    unknown = [w for w in want if w != "pair" and w not in LOADERS]
    if unknown:
        raise ValueError(f"no model {unknown[0]!r} in Models")
    entries = {k: Path(v) for k, v in (entries or {}).items()}
    got: dict[str, Any] = {}
    named_by = None
    if "pair" in want or pair is not None:
        named_by, got["pair"] = _pair(pair, serving)
    # the others at once where they are served from graphs: part of opening a session runs
    # without the GIL (a cold `perspect search` 4.54 s against 4.70 one after another: on two
    # cores it is mostly CPU; `python -m bench first cold`). A missing graph is exported under
    # onnxrt's one export lock. On PyTorch one after another, as trained.
    others = [w for w in want if w not in ("pair", "reader")]
    if serving.onnx and len(others) > 1:
        with ThreadPoolExecutor(len(others), thread_name_prefix="perspect-load") as pool:
            jobs = {w: pool.submit(LOADERS[w], named_by, entries.get(w), serving) for w in others}
            got.update({w: job.result() for w, job in jobs.items()})
    else:
        got.update({w: LOADERS[w](named_by, entries.get(w), serving) for w in others})
    # the reader after the comparator: where both are asked for (a search with news), the reader
    # is the comparator already loaded, not a second copy of it
    if "reader" in want:
        if got.get("comparator") is not None:
            got["reader"] = _named_reader(named_by, got["comparator"])
        else:
            got["reader"] = LOADERS["reader"](named_by, entries.get("reader"), serving)
    return Models(**got)


def _pair(pair: PairModel | str | Path | None, serving: Serving) -> tuple[PairModel, PairModel]:
    """(the pair model that names the others, the one that scores: its int8 copy on PyTorch)."""
    if not isinstance(pair, PairModel):
        folder = Path(pair) if pair else paths.pair_model()
        served = PairModel.serving(folder, int8=serving.int8) if serving.onnx else None
        pair = served or PairModel.load(folder)
    if serving.onnx:  # exported at the first call for these weights; a model in training stays
        pair = pair.for_inference(int8=serving.int8)
    elif pair.net is None:  # served by ONNX Runtime, asked for PyTorch
        pair = PairModel.load(pair.origin)
    scoring = pair.quantized() if serving.int8 and not pair.manifest.get("quantized") else pair
    return pair, scoring


def _equivalence(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The equivalence cross-encoder the pair model names (its orders and date checked)."""
    if pair is None:
        return None
    q = serving.equivalence_int8
    ce = equivalence_ce.load_for(pair.manifest, pair.origin, serving=serving.onnx, int8=q)
    if ce is not None and serving.onnx:
        ce = ce.for_inference(int8=q)
    if ce is not None and q and not ce.manifest.get("quantized"):
        ce = ce.quantized()
    return ce


def _trunk(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The stance trunk the pair model names (checked to be the one its decisions read); without
    a pair model, `entry` or the one the bundle's pair model names (an index's stored states)."""
    int8 = serving.int8 and serving.onnx  # PyTorch's int8 is not applied to the trunk
    if pair is not None:
        return stance_trunk.load_for(
            pair.manifest, pair.origin, serving=serving.onnx, int8=int8, export=serving.export
        )
    folder = entry or stance_trunk.bundled()
    if folder is None:
        return None
    return StanceTrunk.load(folder, serving=serving.onnx, int8=int8, export=serving.export)


def _comparator(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The ClaimDiff comparator of `entry` (a damaged or missing one is an error), else the
    bundle's where it has one (a missing one means no news). Not int8: measured only fp32."""
    folder = entry or paths.comparator_model()
    if entry is None and not (bundle.is_bundle(folder) or (folder / Comparator.MANIFEST).is_file()):
        return None
    if not serving.onnx:
        return Comparator.load(folder)
    return (Comparator.serving(folder) or Comparator.load(folder)).for_inference()


def _reader(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The bundle's comparator where the pair model names it as its reasons' reader and it has
    the inference head; None otherwise (reasons are then cited as the cosine picks them)."""
    if pair is None or not pair.manifest.get("reason_reader"):
        return None
    return _named_reader(pair, _comparator(pair, entry, serving))


def _named_reader(pair: PairModel | None, comparator: Comparator | None) -> Comparator | None:
    named = pair is not None and pair.manifest.get("reason_reader")
    return comparator if named and comparator is not None and comparator.reads_inference else None


def _argument(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The argument model of the pair model's bundle (the entry beside it), or `entry`'s; None
    where there is none (a pair model trained elsewhere answers as before). Its top graph in
    int8 where `serving` asks for int8."""
    folder = _beside(pair, entry, "argument")
    if folder is None:
        return None
    return ArgumentModel.load(folder, serving=serving.onnx, int8=serving.int8 and serving.onnx)


def _beside(pair: PairModel | None, entry: Path | None, name: str) -> Path | None:
    """`entry`, else the bundle entry `name` beside the pair model (the bundle's, without one);
    None where there is none, or for a pair model in training (it answers as the model it is)."""
    if entry is not None:
        return entry
    if pair is not None and getattr(pair, "origin", None) is None:
        return None
    home = Path(pair.origin).parent if pair is not None else paths.models_dir()
    folder = home / name
    return folder if bundle.is_bundle(folder) or (folder / "manifest.json").is_file() else None


def _relation(pair: PairModel | None, entry: Path | None, serving: Serving):
    """The relation entry beside the pair model (or `entry`) where the trunk the pair model names
    is not it (that trunk then serves as the relation model itself: None here)."""
    folder = _beside(pair, entry, "relation")
    if folder is None:
        return None
    if pair is not None and "stance_trunk" in pair.manifest:
        named = stance_trunk.path_for(pair.manifest, pair.origin)
        if named is not None and Path(named).resolve() == folder.resolve():
            return None
    int8 = serving.int8 and serving.onnx
    return StanceTrunk.load(folder, serving=serving.onnx, int8=int8, export=serving.export)


LOADERS: dict[str, Loader] = {
    "equivalence": _equivalence,
    "trunk": _trunk,
    "comparator": _comparator,
    "reader": _reader,
    "argument": _argument,
    "relation": _relation,
}


# -- one bundle entry ------------------------------------------------------------------------------
SERVED: tuple[type[ServedModel], ...] = (PairModel, EquivalenceModel, Comparator)


def served_class(entry: str | Path) -> type[ServedModel]:
    """The class that serves `entry`: by the role its bundle.json names, or (a full model folder
    written by training) by its manifest's format."""
    entry = Path(entry)
    if bundle.is_bundle(entry):
        role = bundle.BundleEntry.read(entry).role
        for cls in SERVED:
            if role == cls.ROLE:
                return cls
        raise ModelError(
            f"{entry} is a {role!r} model, not one served by a cross-encoder",
            hint=f"one of: {', '.join(c.ROLE for c in SERVED)}",
        )
    for cls in SERVED:
        try:
            fmt = json.loads((entry / cls.MANIFEST).read_text()).get("format")
        except (OSError, ValueError, AttributeError):
            continue
        if fmt == cls.FORMAT:
            return cls
    raise ModelError(f"{entry} holds no served model", hint="perspect models list")


def open_served(entry: str | Path, int8: bool = False) -> ServedModel:
    """The served model of a bundle entry (pair, equivalence or comparator): from its graph where
    made, else loaded and its graph made now."""
    return served_class(entry).open(entry, int8=int8)


# -- preparation: every graph a search serves, made before the first one ------------------------
@dataclass(frozen=True)
class Prepared:
    """One model's serving graph after `prepare`: served on ONNX Runtime or not; or
    (`note` set) another artefact a search needs, such as PLAID's compiled kernels."""

    name: str
    served: bool
    seconds: float
    note: str | None = None


def prepare(root: Path, kernels: bool = True) -> list[Prepared]:
    """Export the ONNX graphs a search serves its models from (the pair model, the equivalence
    cross-encoder, the comparator, the dense and ColBERT query encoders), so that the first
    search of a process loads neither torch nor transformers for them; each graph is made once
    per weights (5-20 s), and a search would make a missing one itself, slowly. With a ColBERT
    model, also compile PLAID's C++ kernels (once per torch and compiler: ~2 min), which a
    search only loads. The compiler runs in a child process from the start, beside the exports
    (each mostly one core): a newcomer's `make demo` spent 107 s compiling after 181 s of
    exports, one after the other (issue 56). `kernels=False` leaves them to the index build,
    which compiles them beside its encoders (`make demo`: nothing before the build waits on
    them, issue 62)."""
    from perspect.retriever import dense, pylate_glue

    done: list[Prepared] = []
    compiling = None
    if kernels and (root / "colbert").is_dir():

        def compile_kernels() -> Prepared:
            t0 = time.perf_counter()
            where = pylate_glue.build_kernels()
            return Prepared("plaid-kernels", True, time.perf_counter() - t0, f"ready in {where}")

        compiling = background.Pending("perspect-plaid-kernels", compile_kernels)

    def step(name: str, entry: Path, make: Callable[[Path], bool]) -> None:
        if bundle.is_bundle(entry) or (entry / "manifest.json").is_file():
            t0 = time.perf_counter()
            done.append(Prepared(name, make(entry), time.perf_counter() - t0))

    def served(p: Path) -> bool:
        open_served(p)  # its graph made where it was not
        return served_class(p).graph(p) is not None

    def served_both(p: Path) -> bool:
        """The fp32 graph and its int8 copy: the default engine scores a search's pairs past
        its first ones with the copy (EngineConfig.equivalence_fp32_pairs)."""
        return served(p) and open_served(p, int8=True).serves(True)

    step("pair", root / "pair", served)
    step("equivalence", root / "equivalence", served_both)
    step("comparator", root / "comparator", served)
    step("dense", root / "dense", dense.query_graph)
    step("colbert", root / "colbert", pylate_glue.query_graph)
    # the mpnet trunks a search reads (the base unpacked from its registry parts, graphs made)
    for name in ("stance", "relation", "argument"):
        if bundle.is_bundle(root / name):
            t0 = time.perf_counter()
            trunk = StanceTrunk.load(root / name, serving=True)
            done.append(Prepared(name, trunk.served, time.perf_counter() - t0))
    if compiling is not None:
        done.append(compiling.result())
    return done
