"""The public Python API: everything the CLI and the TUI do, typed.

    from perspect import Perspect
    p = Perspect.open("default")
    p.search("animals should have lawful rights")   # SearchResult: clusters per side, evidence

`search` runs the whole pipeline when trained models are present; without them it degrades to
retrieval (clusters empty, a coverage warning that says how to train). `retrieve` is the plain
top-k of any pool. Below the class: index management (`build_index`, `add_to_index`,
`delete_from_index`, `rebuild_index`, `index_status`; what a build is configured with is
perspect.indexer.index_config's), `train` and the evaluations (which trainer a task runs is
perspect.lab.train_tasks's). Article comparison (perspect.api.articles) and the model bundle
(`models`, `verify_models`, `prepare_models`, `make_models`: perspect.api.bundle_ops) live
beside it and are re-exported here, so `perspect.api` stays the one door. The CLI, the TUI and the server are thin layers over these and
import nothing below this floor but the ground floor (perspect.core).

Why one module: the search handle, the service handle and index management are the typed front
door a user reads from top to bottom; each function is a few lines handing over to the floors
below, so splitting them further would scatter the surface without shortening any logic.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from perspect.api.articles import Comparer, compare, evaluate_claimdiff
from perspect.api.bundle_ops import (
    make_models,
    models,
    models_dir,
    prepare_models,
    unchecked_models,
    verify_models,
)
from perspect.api.loads import MODEL_LOADS
from perspect.core import background, paths
from perspect.core.errors import (
    Cancelled,
    IndexBusy,
    IndexDamaged,
    IndexNotFound,
    NotInIndex,
    PerspectError,
)
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig, check_name, resolve_home
from perspect.core.index.corrections import Correction, Corrections
from perspect.core.index.layout import IndexDir, list_indexes
from perspect.core.progress import Reporter
from perspect.core.result import Coverage, SearchResult, SourceContext
from perspect.core.service import ServiceStatus
from perspect.core.types import HitList, validate_claim
from perspect.indexer import pending
from perspect.indexer.index_config import (
    COLBERT_POOLS,
    check_engine,
    index_config,
    index_engine,
    rebuild_options,
)
from perspect.indexer.indexer import Indexer, Source, WriteReport
from perspect.indexer.web_news import NewsReport
from perspect.lab import train_tasks
from perspect.lab.evaluate import evaluate_perspectrum
from perspect.lab.train_tasks import ENCODERS, TRAIN_TASKS, TrainResult
from perspect.pipeline.engine import Engine, EngineConfig, ProgressCallback, fast_config
from perspect.reranker.factory import Prepared
from perspect.retriever.searcher import Searcher

log = logging.getLogger(__name__)


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
        """The full pipeline; loads the models on first use (raises ModelError if missing): on
        ONNX Runtime by default, which serves the exported graphs without torch or transformers
        in the process (most of a cold start). The comparator only where the index has news (a
        damaged one is an error, a missing one means no news)."""
        if self._engine is not None:  # loaded: no lock to wait on while another model loads
            return self._engine
        with MODEL_LOADS, self._lock:
            if self._engine is None:
                config = self._config or EngineConfig()
                self._searcher.warm_in_background(("perspectives", "news", "documents"))
                news = bool(self._searcher.pools.get("news"))
                self._engine = Engine.load(self._searcher, self._model_dir, config, news=news)
            return self._engine

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

    def fill_in_background(self) -> background.Job | None:
        """Keep what a claim's first search would compute (the lower states of the perspectives
        no search has touched yet, then the judgments of their shown links), on a background
        job at low priority that computes nothing while a search runs in this process
        (`Engine.fill_idle`): what a long-lived process (`perspect serve`, the TUI) starts once
        its models are loaded. None without models."""
        if not self.has_models:
            return None
        engine = self.engine()

        def work(cancel: threading.Event) -> None:
            with contextlib.suppress(OSError, AttributeError):  # Linux: this thread alone
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            try:
                engine.fill_idle(cancel)
            except Exception:  # a cache of the index: a failed fill costs only speed
                log.exception("filling in the lower states of %s failed", self.name)

        return background.start("perspect-fill", work)

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

    def answer(
        self,
        claim: str,
        k: int | None = None,
        pool: str | None = None,
        retriever: str | None = None,
        cancel: threading.Event | None = None,
    ) -> tuple[dict, str]:
        """(the JSON of POST /search, the index version it read): the whole search, or with
        `pool` or `retriever` the retrieval alone (top `k`, default 20). What a server answers,
        locally (perspect.serve.engines) or on a cluster's replica (perspect.api.cluster)."""
        with self.pinned() as version:
            if pool is None and retriever is None:
                res = self.search(claim, cancel=cancel, k=k)
            else:
                res = self.retrieve(
                    claim, 20 if k is None else k, pool or "perspectives", retriever
                )
            return res.to_json(), version

    # -- readers' corrections (perspect.core.index.corrections) ------------------------------------
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
        (perspect.core.index.corrections says why not paraphrases). True when something was stored
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
                raise NotInIndex(
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

    def context(self, sentence_id: str, pool: str = "documents") -> SourceContext:
        """A mined sentence (documents or news) in its article: every sentence, and which."""
        return self._searcher.context(pool, sentence_id)

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
        self._fill: background.Job | bool | None = None  # the idle fill, once started

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
        p = self._open()
        result = p.search(claim, progress=progress, cancel=cancel)
        with self._lock:  # the models are loaded now: fill in the rest while the reader reads
            if self._fill is None and p.models_loaded:
                self._fill = p.fill_in_background() or False
        return result

    def compare(self, a: str | Path, b: str | Path):
        return compare(a, b)

    def correct(self, claim, perspective=None, side=None, same=None, undo=False) -> bool:
        return self._open().correct(claim, perspective, side, same, undo)

    def context(self, sentence_id: str, pool: str = "documents") -> SourceContext:
        return self._open().context(sentence_id, pool)

    def close(self) -> None:
        if isinstance(self._fill, background.Job):
            self._fill.stop(timeout=5)
        if self._perspect is not None:
            self._perspect.close()


__all__ = [
    "COLBERT_POOLS",
    "ENCODERS",
    "TRAIN_TASKS",
    "Comparer",
    "IndexConfig",
    "NewsReport",
    "Perspect",
    "PerspectService",
    "Prepared",
    "Source",
    "TrainResult",
    "WriteReport",
    "add_news",
    "add_to_index",
    "build_index",
    "check_engine",
    "compare",
    "complete_index",
    "delete_from_index",
    "evaluate_claimdiff",
    "evaluate_perspectrum",
    "index_config",
    "index_engine",
    "index_status",
    "make_models",
    "models",
    "models_dir",
    "prepare_models",
    "rebuild_index",
    "train",
    "unchecked_models",
    "verify_models",
]


# -- indexes -----------------------------------------------------------------------------------
def build_index(
    name: str,
    sources: Sequence[Source],
    *,
    home: str | Path | None = None,
    config: IndexConfig | None = None,
    reporter: Reporter | None = None,
    skip_bad: bool = False,
    ray: str | None = None,
    leave_pending: bool = False,
    on_searchable: Callable[[str], None] | None = None,
) -> WriteReport:
    """A new version of index `name` from `sources` (the previous version stays searchable
    until this one is ready); `ray`: a Ray cluster's address ("auto") where the models' passes
    run (indexer.ray_build), the same index written. The build publishes a searchable version
    first (indexer.pending), named to `on_searchable`, then completes it, unless
    `leave_pending` (`complete_index` does the rest)."""
    config = config or index_config()
    with _remote(ray) as remote:
        indexer = Indexer(
            name, home=home, config=config, reporter=reporter, skip_bad=skip_bad, remote=remote
        )
        return indexer.build(sources, leave_pending=leave_pending, on_searchable=on_searchable)


def complete_index(
    name: str,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    ray: str | None = None,
) -> dict[str, Any] | None:
    """What a build left pending (`build_index(leave_pending=True)`), done and published: the
    complete version's manifest, or None where nothing was pending."""
    with _remote(ray) as remote:
        return Indexer(name, home=home, reporter=reporter, remote=remote).complete()


@contextlib.contextmanager
def _remote(address: str | None):
    if address is None:
        yield None
        return
    from perspect.indexer.ray_build import RayEncoding

    with RayEncoding(address) as remote:
        yield remote


def add_to_index(
    name: str,
    sources: Sequence[Source],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    skip_bad: bool = False,
    wait: float = 0.0,
    ray: str | None = None,
) -> WriteReport:
    """Add `sources` to `name`; `wait`: seconds to wait for another writer of the index (the
    service's adds, another process) before IndexBusy. The CLI waits: two adds at once both land."""
    if not sources:
        raise PerspectError("nothing to add", hint="pass --perspectives, --news, --documents...")
    with _remote(ray) as remote:
        indexer = Indexer(name, home=home, reporter=reporter, skip_bad=skip_bad, remote=remote)
        deadline = time.monotonic() + wait
        while True:
            try:
                return indexer.add(sources)
            except IndexBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)


def add_news(
    name: str,
    inputs: Sequence[str | dict[str, Any]],
    *,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    timeout: float = 10.0,
    budget: float | None = None,
    wait: float = 60.0,
    pool: str = "news",
    leaning: str | None = None,
) -> NewsReport:
    """Fetch pages and RSS/Atom feeds (URLs) or take article objects, de-duplicate them by URL
    and text, and add the new ones to the news pool of `name` (perspect.indexer.web_news; `pool`
    "documents": to the reader's documents, mined for perspectives). A
    dead URL, a page that is not HTML or an empty article is one outcome of the report; the
    rest still goes in; a URL already indexed is not fetched. `timeout`: seconds per URL (the
    whole fetch); `budget`: seconds for all the fetching (None: no limit), what it leaves is
    one "skipped" outcome each; `wait`: seconds to wait for another writer of the index;
    `leaning`: the outlets' leaning for articles that give none ("unrated" where not given)."""
    from perspect.indexer.web_news import add_news as run

    return run(
        name, inputs, home=home, reporter=reporter, timeout=timeout, budget=budget, wait=wait,
        pool=pool, leaning=leaning,
    )  # fmt: skip


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
    indexer = Indexer(name, home=home, reporter=reporter)
    if retriever == "stance":
        return indexer.store_stance_states()
    return indexer.rebuild(retriever, rebuild_options(retriever, model))


def index_status(
    name: str | None = None, home: str | Path | None = None
) -> tuple[Path, list[dict[str, Any]]]:
    """The home folder and the manifest of each index in it (or of `name`). A damaged index (an
    unreadable or altered manifest, a live version gone) is one row `{"name", "damaged", "hint"}`
    instead of failing the whole list; an unknown `name` is IndexNotFound. A row's name is its
    folder's, the one every command opens it by: an index copied or moved to another folder keeps
    the name it was built under in its manifest, which would list it under the wrong name."""
    root = resolve_home(home)
    if name:
        IndexDir(root, check_name(name)).current()  # an unknown index is refused
    names = [name] if name else list_indexes(root)
    rows: list[dict[str, Any]] = []
    for n in names:
        try:
            row = {**mf.load(IndexDir(root, n).current()), "name": n}
            running = pending.progress(IndexDir(root, n).root) if row.get("pending") else None
            rows.append({**row, "completing": running} if running else row)
        except (IndexDamaged, IndexNotFound) as e:
            rows.append({"name": n, "damaged": e.message, "hint": e.hint})
    return root, rows


# -- models ------------------------------------------------------------------------------------
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
    "average"); see `perspect train --help` for the tasks and perspect.lab.train_tasks for what
    each runs. For the pair model, `train_layers` overrides the profile's (top N encoder layers,
    or "all": a full fine-tune at half the rate) and `max_minutes` its training budget."""
    return train_tasks.run(
        task,
        data,
        out,
        base=base,
        profile=profile,
        init=init,
        models=models,
        index=index,
        home=home,
        equivalence_model=equivalence_model,
        stance_model=stance_model,
        train_layers=train_layers,
        max_minutes=max_minutes,
        reporter=reporter,
        log=log,
    )
