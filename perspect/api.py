"""The public Python API: everything the CLI and the TUI do, typed.

    from perspect import Perspect
    p = Perspect.open("default")
    p.search("animals should have lawful rights")   # SearchResult: clusters per side, evidence

`search` runs the whole pipeline when trained models are present; without them it degrades to
retrieval (clusters empty, a coverage warning that says how to train). `retrieve` is the plain
top-k of any pool. Below the class: index management (`build_index`, `add_to_index`,
`delete_from_index`, `rebuild_index`, `index_status`), `train` and `evaluate_perspectrum`. The
CLI and the TUI are thin layers over these and import nothing below this floor but the ground
floor (perspect.core).

Why one module: it is the typed front door a user imports as `perspect.api` and reads
from top to bottom; each function is a few lines handing over to the floors below, so splitting
it would scatter the surface without shortening any logic.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perspect.core import bundle, paths
from perspect.core import manifest as mf
from perspect.core.config import IndexConfig, check_name, default_retrievers, resolve_home
from perspect.core.corrections import Correction, Corrections
from perspect.core.errors import Cancelled, IndexDamaged, IndexNotFound, PerspectError
from perspect.core.layout import IndexDir, list_indexes
from perspect.core.progress import NullReporter, Reporter
from perspect.core.result import Coverage, SearchResult
from perspect.core.service import ServiceStatus
from perspect.core.types import POOLS, HitList, validate_claim
from perspect.indexer.indexer import Indexer, Source, WriteReport
from perspect.indexer.web_news import NewsReport
from perspect.lab.evaluate import evaluate_perspectrum
from perspect.pipeline.engine import Engine, EngineConfig, ProgressCallback, fast_config
from perspect.reranker.model import TASKS, PairModel
from perspect.retriever import colbert, dense
from perspect.retriever.searcher import Searcher

if TYPE_CHECKING:
    from perspect.lab import recipe

# Every model load of the process, one at a time. Why: two threads importing transformers for the
# first time at once fail ("ImportError: cannot import name 'AutoModel' from 'transformers'"): the
# first POST /compare on a fresh `perspect serve`, beside the loader of its engines, was a 500, or
# left the default engine unloaded. Reentrant: a load may start another (the engine, its models).
MODEL_LOADS = threading.RLock()


class Perspect:
    """A handle on one built index (and the models); cheap to query repeatedly."""

    def __init__(
        self,
        searcher: Searcher,
        model_dir: str | Path | None = None,
        config: EngineConfig | None = None,
    ):
        self._searcher = searcher
        self._model_dir = Path(model_dir) if model_dir else paths.pair_model()
        self._config = config
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        name: str = "default",
        home: str | Path | None = None,
        model: str | Path | None = None,
        config: EngineConfig | None = None,
        fast: bool = False,
    ) -> Perspect:
        """`fast`: int8 cross-encoders and a bounded equivalence budget (`fast_config`), unless
        `config` is given."""
        return cls(Searcher(name, home), model, config or (fast_config() if fast else None))

    @property
    def name(self) -> str:
        return self._searcher.name

    @property
    def pools(self) -> dict[str, int]:
        """Item count per pool (of the newest version: a write since the last search shows)."""
        self._searcher.refresh()
        return self._searcher.pools

    @property
    def manifest(self) -> dict:
        return self._searcher.manifest

    @property
    def models_loaded(self) -> bool:
        """Whether the first search has loaded the models already (later ones answer faster)."""
        return self._engine is not None

    @property
    def has_models(self) -> bool:
        return (self._model_dir / "manifest.json").is_file()

    def engine(self) -> Engine:
        """The full pipeline; loads the models on first use (raises ModelError if missing)."""
        if self._engine is not None:  # loaded: no lock to wait on while another model loads
            return self._engine
        with MODEL_LOADS, self._lock:
            if self._engine is None:
                config = self._config or EngineConfig()
                # ONNX Runtime serves the exported graphs without torch or transformers in the
                # process (most of a cold start); the Engine exports what is missing
                serve = config.runtime == "onnx"
                self._searcher.warm_in_background(("perspectives", "news"))
                model = PairModel.serving(self._model_dir, int8=config.quantize) if serve else None
                self._engine = Engine(
                    self._searcher,
                    model or PairModel.load(self._model_dir),
                    config,
                    comparator=self._comparator(serve),
                )
            return self._engine

    def _comparator(self, serve: bool = False):
        """The ClaimDiff comparator where the index has news to tie to the claim (else None: the
        model is not loaded for nothing); a damaged one is an error, a missing one means no news."""
        if not self._searcher.pools.get("news"):
            return None
        folder = paths.comparator_model()
        if not (folder / bundle.MANIFEST).is_file() and not (folder / "manifest.json").is_file():
            return None
        from perspect.reranker.comparator import Comparator

        return (Comparator.serving(folder) if serve else None) or Comparator.load(folder)

    def search(
        self,
        claim: str,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        k: int | None = None,
    ) -> SearchResult:
        """Perspectives on `claim`, clustered, with stance and evidence: at most `k` clusters
        (default 16), or without models the top `k` retrieved perspectives (default 20)."""
        if self.has_models:
            engine = self.engine()
            if cancel is not None and cancel.is_set():  # cancelled while the models loaded
                raise Cancelled("search cancelled")
            return engine.search(claim, progress, cancel, k=k)
        claim = validate_claim(claim)
        hits = self._searcher.search(claim, "perspectives", 20 if k is None else k)
        warning = (
            f"no trained models at {self._model_dir}: retrieval only "
            "(restore the shipped bundle: git checkout -- models/, or retrain it: make models)"
        )
        return SearchResult(claim, (), Coverage(0, 0, warning), hits.hits, hits.took_ms)

    @contextmanager
    def pinned(self) -> Iterator[str]:
        """Hold one version of the index for the searches inside (in this thread) and yield its
        name: what a server reports as the version an answer came from."""
        with self._searcher.pinned() as view:
            yield view.version.name

    def retrieve(
        self, query: str, k: int = 20, pool: str = "perspectives", retriever: str | None = None
    ) -> HitList:
        """Top-k items of `pool` (bm25, colbert or hybrid), without the models."""
        return self._searcher.search(query, pool=pool, k=k, retriever=retriever)

    # -- readers' corrections (perspect.core.corrections) ---------------------------------------
    def correct(
        self,
        claim: str,
        perspective: str | None = None,
        side: str | None = None,
        same: tuple[str, str] | None = None,
        undo: bool = False,
    ) -> bool:
        """Say that `perspective` is on `side` (support, oppose, off-topic) of `claim`, or that
        the perspectives `same` make one point; `undo` takes that back. Later searches for the
        claim (case, spacing and punctuation aside) apply it; no other claim's answer changes
        (perspect.core.corrections says why not paraphrases). True when something was stored
        (or removed)."""
        if (perspective is None) == (same is None) or (perspective is not None) != (
            side is not None
        ):
            raise PerspectError("say either a perspective and its side, or two perspectives")
        claim = validate_claim(claim)
        ids = [perspective] if perspective is not None else list(same)
        with self._searcher.pinned():
            store = self._searcher.store("perspectives")
            unknown = [i for i in ids if i not in store.get_many(ids)]
            if unknown:
                raise PerspectError(
                    f"index {self.name!r} has no perspective {unknown[0]!r}",
                    hint=f'the ids are in: perspect search "{claim}" --index {self.name} --json',
                )
            kind, a, b = ("side", perspective, side) if same is None else ("same", *same)
            fix = Correction(claim, kind, a, b)
            store = Corrections(self._searcher.dir.root)
            return store.remove(fix) if undo else store.add(fix)

    def corrections(self) -> list[Correction]:
        """Every correction stored for this index, oldest first."""
        return Corrections(self._searcher.dir.root).all()

    def close(self) -> None:
        self._searcher.close()

    def __enter__(self) -> Perspect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PerspectService:
    """The real engine behind the terminal UI (`perspect.core.service.SearchService`): the index
    is opened at the first `status()`, so that a missing one is shown on the screen with its
    fix, and `compare` works without any index."""

    def __init__(
        self,
        index: str = "default",
        home: str | Path | None = None,
        model: str | Path | None = None,
        fast: bool = False,
    ):
        self.index, self.home, self.model, self.fast = index, home, model, fast
        self._perspect: Perspect | None = None
        self._lock = threading.Lock()

    def _open(self) -> Perspect:
        with self._lock:
            if self._perspect is None:
                self._perspect = Perspect.open(
                    self.index, home=self.home, model=self.model, fast=self.fast
                )
            return self._perspect

    def status(self) -> ServiceStatus:
        p = self._open()
        return ServiceStatus(
            index=p.name,
            pools=p.pools,
            has_models=p.has_models,
            models_loaded=p.models_loaded,
            models_dir=str(p._model_dir),
        )

    def search(
        self,
        claim: str,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> SearchResult:
        return self._open().search(claim, progress=progress, cancel=cancel)

    def compare(self, a: str | Path, b: str | Path):
        return compare(a, b)

    def correct(self, claim, perspective=None, side=None, same=None, undo=False) -> bool:
        return self._open().correct(claim, perspective, side, same, undo)

    def close(self) -> None:
        if self._perspect is not None:
            self._perspect.close()


__all__ = [
    "IndexConfig",
    "NewsReport",
    "Perspect",
    "PerspectService",
    "Source",
    "TrainResult",
    "WriteReport",
    "add_news",
    "add_to_index",
    "build_index",
    "delete_from_index",
    "evaluate_perspectrum",
    "index_config",
    "index_status",
    "make_models",
    "models",
    "prepare_models",
    "rebuild_index",
    "train",
    "verify_models",
]


# -- indexes -----------------------------------------------------------------------------------
# The pools ColBERT indexes by default: those the search pipeline retrieves from. Evidence is
# reached through links precomputed from BM25 + dense (indexer.links), never through ColBERT, and
# its PLAID index was a third of `make demo`'s build (encoding 124 s + k-means 72 s, here).
COLBERT_POOLS = ("perspectives", "news")


def index_config(
    retrievers: Sequence[str] | None = None,
    dense_model: str | None = None,
    colbert_model: str | None = None,
    colbert_config: str | Path | None = None,
    engine: str = "embedded",
    es_url: str | None = None,
    note: Callable[[str], None] = lambda msg: None,
    colbert_pools: Sequence[str] | None = None,
) -> IndexConfig:
    """Retrievers and their settings for a build: as given, from a colbert-ai plan.json, or the
    defaults (BM25 + dense, + ColBERT where its model exists). Model paths are resolved, since
    the index records them and keeps using them. `note` hears what was chosen for the user.
    `colbert_pools`: the pools ColBERT indexes (default COLBERT_POOLS; every pool: POOLS)."""
    if retrievers:
        chosen = tuple(retrievers)
    else:
        chosen = default_retrievers()
        if paths.env_retrievers():
            note(f"retrievers from $PERSPECT_RETRIEVERS: {' + '.join(chosen)}")
        elif "colbert" not in chosen:
            note(
                f"no ColBERT model at {paths.colbert_model()}: building BM25 + dense "
                "(train one with `perspect train --task colbert`, or pass --colbert-model)"
            )
    backends: dict[str, dict] = {}
    if "colbert" in chosen:
        options: dict = {}
        if colbert_config:
            from perspect.indexer.colbert_config import from_colbert_json

            imported = from_colbert_json(colbert_config)
            cfg = imported.config.to_json()
            checkpoint = cfg.pop("checkpoint")
            options.update({k: v for k, v in cfg.items() if v is not None})
            note(
                f"read {imported.source}: {', '.join(f'{k}={v}' for k, v in options.items())}"
                f" (ignored {len(imported.ignored)} run/training settings)"
            )
            if checkpoint and not colbert_model:
                options["model"] = _plan_model(checkpoint, note)
        if colbert_model:
            options["model"] = _local_colbert(colbert_model) or colbert_model
        pools = tuple(colbert_pools) if colbert_pools else COLBERT_POOLS
        unknown = sorted(set(pools) - set(POOLS))
        if unknown:
            raise PerspectError(f"unknown pool {unknown[0]!r}", hint=f"of: {', '.join(POOLS)}")
        if "perspectives" not in pools:
            raise PerspectError("ColBERT must index the perspectives (the search reads them)")
        if set(pools) != set(POOLS):
            options["pools"] = [p for p in POOLS if p in pools]
        backends["colbert"] = options
    if "dense" in chosen:
        backends["dense"] = {"model": _resolved(dense_model or dense.default_model())}
    if engine == "elasticsearch":
        import os

        from perspect.retriever.elastic import redact

        url = es_url or os.environ.get("PERSPECT_ES_URL")
        if not url:
            raise PerspectError(
                "the Elasticsearch backend needs a cluster URL",
                hint="pass --es-url URL (or set PERSPECT_ES_URL)",
            )
        if redact(url) != url:
            note(
                "credentials in the URL are used for this run only: the index stores the URL "
                "without them (set PERSPECT_ES_API_KEY or PERSPECT_ES_USER/PASSWORD for later)"
            )
        for kind in chosen:
            backends[kind] = {**backends.get(kind, {}), "engine": engine, "url": redact(url)}
    elif engine != "embedded":
        raise PerspectError(f"unknown backend {engine!r}", hint="embedded or elasticsearch")
    return IndexConfig(retrievers=chosen, backends=backends)


def _plan_model(checkpoint: str, note: Callable[[str], None]) -> str:
    """The ColBERT model a plan.json names, as a local folder: itself, its copy in the Hugging
    Face cache, or (offline, e.g. RAGatouille's `colbert-ir/colbertv2.0`) the bundle's model with
    the plan's index settings, said in a note. Index builds read a model from a folder only."""
    found = _local_colbert(checkpoint)
    if found:
        return found
    fallback = paths.colbert_model()
    if not fallback.is_dir():
        raise PerspectError(
            f"the plan's ColBERT model {checkpoint} is neither a local folder nor in the "
            "Hugging Face cache, and there is no bundle ColBERT model to use instead",
            hint="pass --colbert-model FOLDER (or train one: perspect train --task colbert)",
        )
    note(
        f"the plan's model {checkpoint} cannot be loaded offline: using the bundle's ColBERT "
        f"model ({fallback}) with the plan's index settings (--colbert-model picks another)"
    )
    return str(fallback.resolve())


def _local_colbert(name: str) -> str | None:
    """A model folder, or a hub id's copy in the Hugging Face cache; None when neither exists
    (a build never downloads)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return str(local.resolve())
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception:  # not cached, or not a valid hub id
        return None


def index_engine(manifest: dict[str, Any]) -> str:
    """ "elasticsearch" when the index's retrievers live there, else "embedded"."""
    backends = manifest["config"].get("backends", {})
    return (
        "elasticsearch"
        if any(b.get("engine") == "elasticsearch" for b in backends.values())
        else "embedded"
    )


def check_engine(name: str, engine: str | None, home: str | Path | None = None) -> None:
    """Refuse a write that names a backend other than the one the index was built on."""
    if engine is None:
        return
    got = index_engine(mf.load(IndexDir(resolve_home(home), check_name(name)).current()))
    if got != engine:
        raise PerspectError(
            f"index {name!r} lives on the {got} backend, not {engine}",
            hint=f"drop --backend, or rebuild it: perspect index build --backend {engine}",
        )


def build_index(
    name: str,
    sources: Sequence[Source],
    *,
    home: str | Path | None = None,
    config: IndexConfig | None = None,
    reporter: Reporter | None = None,
    skip_bad: bool = False,
) -> WriteReport:
    """A new version of index `name` from `sources` (the previous version stays searchable
    until this one is complete)."""
    config = config or index_config()
    return Indexer(name, home=home, config=config, reporter=reporter, skip_bad=skip_bad).build(
        sources
    )


def add_to_index(
    name: str,
    sources: Sequence[Source],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    skip_bad: bool = False,
) -> WriteReport:
    if not sources:
        raise PerspectError("nothing to add", hint="pass --perspectives, --evidence or --news")
    return Indexer(name, home=home, reporter=reporter, skip_bad=skip_bad).add(sources)


def add_news(
    name: str,
    inputs: Sequence[str | dict[str, Any]],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    timeout: float = 10.0,
    budget: float | None = None,
    wait: float = 60.0,
) -> NewsReport:
    """Fetch pages and RSS/Atom feeds (URLs) or take article objects, de-duplicate them by URL
    and text, and add the new ones to the news pool of `name` (perspect.indexer.web_news). A
    dead URL, a page that is not HTML or an empty article is one outcome of the report; the
    rest still goes in; a URL already indexed is not fetched. `timeout`: seconds per URL (the
    whole fetch); `budget`: seconds for all the fetching (None: no limit), what it leaves is
    one "skipped" outcome each; `wait`: seconds to wait for another writer of the index."""
    from perspect.indexer.web_news import add_news as run

    return run(
        name, inputs, home=home, reporter=reporter, timeout=timeout, budget=budget, wait=wait
    )


def delete_from_index(
    name: str,
    pool: str,
    ids: Sequence[str],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
) -> WriteReport:
    return Indexer(name, home=home, reporter=reporter).delete(pool, ids)


def rebuild_index(
    name: str,
    retriever: str,
    model: str | None = None,
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Re-encode every pool of `name` with `retriever` (e.g. a newly trained dense model),
    keeping the others; returns the new manifest. "stance": store the stance trunk's
    lower-layer states of every perspective (an index built before the bundle had one)."""
    if retriever == "stance":
        return Indexer(name, home=home, reporter=reporter).store_stance_states()
    options: dict = {}
    if model:
        options["model"] = _resolved(model)
    elif retriever in ("dense", "colbert"):
        default = dense.default_model() if retriever == "dense" else colbert.default_model()
        options["model"] = _resolved(str(default))
    return Indexer(name, home=home, reporter=reporter).rebuild(retriever, options)


def index_status(
    name: str | None = None, home: str | Path | None = None
) -> tuple[Path, list[dict[str, Any]]]:
    """The home folder and the manifest of each index in it (or of `name`). A damaged index (an
    unreadable or altered manifest, a live version gone) is one row `{"name", "damaged", "hint"}`
    instead of failing the whole list; an unknown `name` is IndexNotFound."""
    root = resolve_home(home)
    if name:
        IndexDir(root, check_name(name)).current()  # an unknown index is refused
    names = [name] if name else list_indexes(root)
    rows: list[dict[str, Any]] = []
    for n in names:
        try:
            rows.append(mf.load(IndexDir(root, n).current()))
        except (IndexDamaged, IndexNotFound) as e:
            rows.append({"name": n, "damaged": e.message, "hint": e.hint})
    return root, rows


def _resolved(model: str) -> str:
    return str(Path(model).resolve()) if Path(model).exists() else model


# -- models ------------------------------------------------------------------------------------
# The training stack (perspect.lab.training, lab.train.pair) imports torch at its top: 1.5 s
# that a search never needs, so the functions below import it when they run.
ENCODERS = {  # --task -> (trainer in perspect.lab.training, default output folder, what it trains)
    "colbert": ("train_colbert", paths.colbert_model, "ColBERT"),
    "dense": ("train_dense", lambda: paths.models_dir() / "dense", "the dense encoder"),
    "equivalence-ce": (
        "train_equivalence",
        paths.equivalence_model,
        "the equivalence cross-encoder",
    ),
}
TRAIN_TASKS = (*TASKS, "all", *ENCODERS, "calibrate", "average", "claimdiff")


@dataclass(frozen=True)
class TrainResult:
    """What `train` wrote and its manifest (the model's record: data, timing, metrics)."""

    task: str
    out: Path
    what: str
    manifest: dict[str, Any]


def train(
    task: str = "all",
    data: str | Path = Path("data") / "perspectrum",
    out: str | Path | None = None,
    *,
    base: str | None = None,
    profile: str = "full",
    init: str | Path | None = None,
    models: Sequence[str | Path] = (),
    index: str | None = None,
    home: str | Path | None = None,
    equivalence_model: str | None = None,
    stance_model: str | None = None,
    train_layers: int | str | None = None,
    max_minutes: float | None = None,
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
) -> TrainResult:
    """Train one model (or re-fit the pair model's decisions: "calibrate"; average models:
    "average"); see `perspect train --help` for the tasks. For the pair model, `train_layers`
    overrides the profile's (top N encoder layers, or "all": a full fine-tune, at half the
    rate, the rate full fine-tunes were tuned at) and `max_minutes` its training budget."""
    from perspect.lab import training
    from perspect.lab.train.pair import PROFILES

    reporter = reporter or NullReporter()
    if task == "claimdiff":
        return _train_comparator(data, out, base, profile, max_minutes, reporter, log)
    if task in ENCODERS:
        trainer, default_out, what = ENCODERS[task]
        out = Path(out) if out else default_out()
        m = getattr(training, trainer)(
            data, out, base=base, profile=profile, reporter=reporter, log=log
        )
        return TrainResult(task, out, what, m)
    out = Path(out or paths.pair_model())
    if task == "average":
        from perspect.lab.train.average import average

        average(list(models), out)
        return TrainResult(task, out, f"the average of {len(models)} models", {})
    if task == "calibrate":
        model = training.recalibrate(
            out,
            data,
            index,
            home,
            reporter,
            equivalence_model=equivalence_model,
            stance_model=stance_model,
        )
        return TrainResult(task, out, "the pair model's decisions", model.manifest)
    if task not in TRAIN_TASKS:
        raise PerspectError(f"unknown task {task!r}", hint=f"known: {', '.join(TRAIN_TASKS)}")
    if profile == "continue" and not init:
        raise PerspectError(
            "--profile continue goes on training a saved model", hint="pass --init models/pair"
        )
    tasks = TASKS if task == "all" else (task,)
    if init and task == "all":
        tasks = tuple(t for t in TASKS if t in PROFILES[profile].caps)
    prof = _profile(profile, train_layers, max_minutes)
    model = training.train(data, out, tasks, base, prof, reporter, log, init)
    return TrainResult(task, out, ", ".join(tasks), model.manifest)


def compare(
    a: str | Path,
    b: str | Path,
    *,
    config=None,
    model_dir: str | Path | None = None,
):
    """Article A against article B, sentence by sentence (perspect.pipeline.compare): where A
    strengthens B (agreement), where it weakens B (dispute), with the words that say so."""
    return Comparer(model_dir, config).compare(a, b)


class Comparer:
    """`compare` with its models loaded once (a server compares many pairs): articles given as
    (title, text) pairs or as files."""

    def __init__(self, model_dir: str | Path | None = None, config=None):
        self._model_dir, self._config = model_dir, config
        self._models = None
        self._lock = threading.Lock()

    def _loaded(self):
        from perspect.pipeline.compare import SentenceEncoder
        from perspect.reranker.comparator import Comparator

        if self._models is not None:
            return self._models
        with MODEL_LOADS, self._lock:
            if self._models is None:
                comparator = Comparator.load(self._model_dir or paths.comparator_model())
                dense_dir = paths.dense_model_dir()
                if (dense_dir / bundle.MANIFEST).is_file():
                    enc_dir = bundle.resolve(dense_dir)
                else:
                    enc_dir = Path(paths.resolve_base(None))
                self._models = (comparator, SentenceEncoder(enc_dir), _bundled_trunk())
            return self._models

    def compare(self, a: tuple[str, str] | str | Path, b: tuple[str, str] | str | Path):
        from perspect.pipeline.compare import Article, compare_articles

        def article(x, label: str) -> Article:
            if isinstance(x, tuple):
                return Article.from_text(x[0], x[1], label)
            return Article.read(x)

        art_a, art_b = article(a, "article a"), article(b, "article b")
        comparator, encoder, stance = self._loaded()
        return compare_articles(art_a, art_b, comparator, encoder, self._config, stance)


def _bundled_trunk():
    """The stance trunk the bundle's pair model names (on ONNX Runtime), or None."""
    from perspect.reranker import stance_trunk

    folder = stance_trunk.bundled()
    return stance_trunk.StanceTrunk.load(folder, serving=True) if folder is not None else None


def evaluate_claimdiff(
    data: str | Path = Path("data") / "claimdiff",
    split: str = "dev",
    model_dir: str | Path | None = None,
):
    """ClaimDiff scores of the comparator on `split` and on its document-like counterpart."""
    from perspect.lab.claimdiff import evaluate_claimdiff as run

    return run(model_dir or paths.comparator_model(), data, split)


def _train_comparator(data, out, base, profile, max_minutes, reporter, log):
    from perspect.lab import claimdiff

    if profile not in claimdiff.PROFILES:
        raise PerspectError(
            f"the comparator has no {profile!r} profile", hint="--profile quick or full"
        )
    prof = claimdiff.resolve_profile(profile, max_minutes=max_minutes)
    out = Path(out or paths.comparator_model())
    m = claimdiff.train_comparator(data, out, base=base, profile=prof, reporter=reporter, log=log)
    return TrainResult("claimdiff", out, "the ClaimDiff comparator", m)


def _profile(name: str, train_layers: int | str | None, max_minutes: float | None):
    from perspect.lab.train.pair import PROFILES

    prof = PROFILES[name]
    if train_layers == "all":
        prof = dataclasses.replace(prof, train_layers=None, lr=prof.lr / 2)
    elif train_layers is not None:
        if not isinstance(train_layers, int) or train_layers < 1:
            raise PerspectError(f"--train-layers takes a number >= 1 or 'all', got {train_layers}")
        prof = dataclasses.replace(prof, train_layers=train_layers)
    if max_minutes is not None:
        if max_minutes <= 0:
            raise PerspectError(f"--max-minutes must be positive, got {max_minutes}")
        prof = dataclasses.replace(prof, max_minutes=float(max_minutes))
    return prof


# -- the model bundle ----------------------------------------------------------------------------
def _corrected(index: str, home: str | Path | None):
    """An index's corrections as training rows: the claim as typed, the perspectives' texts."""
    from perspect.lab.train.pair_data import Corrected

    with Perspect.open(index, home=home) as p, p._searcher.pinned():
        got = p.corrections()
        store = p._searcher.store("perspectives")
        texts = store.get_many(sorted({x for c in got for x in (c.a, c.b)}))
    out = []
    for c in got:
        if c.a not in texts or (c.kind == "same" and c.b not in texts):
            continue  # deleted from the index since
        b = texts[c.b].text if c.kind == "same" else c.b
        out.append(Corrected(c.text or c.claim, c.kind, texts[c.a].text, b))
    return out


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


@dataclass(frozen=True)
class Prepared:
    """One model's serving graph after `prepare_models`: served on ONNX Runtime or not; or
    (`note` set) another artefact a search needs, such as PLAID's compiled kernels."""

    name: str
    served: bool
    seconds: float
    note: str | None = None


def prepare_models(folder: str | Path | None = None) -> list[Prepared]:
    """Export the ONNX graphs a search serves its models from (the pair model, the equivalence
    cross-encoder, the comparator, the dense and ColBERT query encoders), so that the first
    search of a process loads neither torch nor transformers for them; each graph is made once
    per weights (5-20 s), and a search would make a missing one itself, slowly. With a ColBERT
    model, also compile PLAID's C++ kernels (once per torch and compiler: ~2 min), which a
    search only loads."""
    import time

    from perspect.reranker.factory import served_class

    root = models_dir(folder)
    done: list[Prepared] = []

    def step(name: str, entry: Path, make: Callable[[Path], bool]) -> None:
        if bundle.is_bundle(entry) or (entry / "manifest.json").is_file():
            t0 = time.perf_counter()
            done.append(Prepared(name, make(entry), time.perf_counter() - t0))

    def served(p: Path) -> bool:
        cls = served_class(p)
        if cls.serving(p) is None:
            cls.load(p).for_inference()
        return cls.serving(p) is not None

    def dense_query(p: Path) -> bool:
        return dense.DenseBackend(p / "unused", {"model": str(p)})._query_session() is not None

    def colbert_query(p: Path) -> bool:
        from perspect.retriever import onnx_query

        path = str(p.resolve())
        model = colbert.load_colbert(path)
        return onnx_query.session(model, path, colbert.model_fingerprint(path)) is not None

    step("pair", root / "pair", served)
    step("equivalence", root / "equivalence", served)
    step("comparator", root / "comparator", served)
    step("dense", root / "dense", dense_query)
    step("colbert", root / "colbert", colbert_query)
    if bundle.is_bundle(root / "stance"):  # base unpacked from its registry parts, graphs made
        from perspect.reranker.stance_trunk import StanceTrunk

        t0 = time.perf_counter()
        served = StanceTrunk.load(root / "stance", serving=True).served
        done.append(Prepared("stance", served, time.perf_counter() - t0))
    if (root / "colbert").is_dir():
        t0 = time.perf_counter()
        where = colbert.build_kernels()
        done.append(Prepared("plaid-kernels", True, time.perf_counter() - t0, f"ready in {where}"))
    return done


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
) -> list[recipe.Outcome]:
    """`make models`: every bundle step whose inputs changed (or that never ran), in order.
    `corrections`: an index whose readers' corrections the pair model trains on too."""
    from perspect.lab import recipe

    steps = recipe.steps(stance_rounds, colbert, comparator)
    other = recipe.OtherData(Path(claimdiff)) if claimdiff else recipe.OtherData()
    if vitaminc:
        other = replace(other, vitaminc=Path(vitaminc))
    if corrections:
        other = replace(other, corrections=tuple(_corrected(corrections, home)))
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
