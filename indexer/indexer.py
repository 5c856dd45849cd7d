"""The front door for writing indexes: `Indexer(name).build(...)`, `.add(...)`, `.delete(...)`.

Every source is read and checked *before* the index is touched, and every write goes to a new
copy-on-write version (see `perspect.core.index.layout`), so bad input or a crash never costs what
was indexed.

Why one module: build, add, delete and rebuild share one write protocol (read everything first,
write a new version, check-search it, publish); apart, the halves of that protocol would drift.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perspect.core import background
from perspect.core.errors import PerspectError, environment_error
from perspect.core.index import integrity
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig, check_name, default_retrievers, resolve_home
from perspect.core.index.layout import IndexDir
from perspect.core.index.links import LINKS
from perspect.core.index.stance_states import STATES, States
from perspect.core.index.store import ItemStore
from perspect.core.progress import NullReporter, Reporter, Timed
from perspect.core.types import ARTICLE_POOLS, POOLS, Item
from perspect.indexer import derived, pending, states
from perspect.indexer.check_search import check_in_child
from perspect.indexer.judged_links import judge_links
from perspect.indexer.links import Links
from perspect.indexer.news import read_documents, read_news
from perspect.indexer.readers import ReadReport, read_pool
from perspect.reranker import stance_trunk
from perspect.retriever.base import Backend
from perspect.retriever.registry import backend_class


@dataclass(frozen=True)
class Source:
    """One input file (or news folder) for one pool."""

    pool: str
    path: Path
    fmt: str | None = None
    id_field: str | None = None
    text_field: str | None = None


@dataclass(frozen=True)
class WriteReport:
    """What one build / add / delete did."""

    index: str
    version: str
    counts: dict[str, int]
    added: dict[str, int] = field(default_factory=dict)
    replaced: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    not_found: dict[str, int] = field(default_factory=dict)
    skipped_bad: int = 0
    duplicate_ids: int = 0
    duplicate_texts: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # "pool/retriever" -> indexing time


def read_source(src: Source) -> ReadReport:
    if src.pool not in POOLS:
        raise PerspectError(f"unknown pool {src.pool!r}", hint=f"one of {', '.join(POOLS)}")
    if src.pool == "news":
        return read_news(src.path)
    if src.pool == "documents":
        return read_documents(src.path)
    prefix = {"perspectives": "p", "evidence": "e"}[src.pool]
    return read_pool(
        src.path, fmt=src.fmt, id_field=src.id_field, text_field=src.text_field, id_prefix=prefix
    )


def _plain_environment_errors(method):
    """A full disk or read-only home, raised by whichever library was writing, becomes one
    `EnvironmentFailure` line (the version being written is already removed by then)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except PerspectError:
            raise
        except Exception as e:
            failure = environment_error(e, self.dir.home)
            if failure is None:
                raise
            raise failure from None

    return run


class Indexer:
    def __init__(
        self,
        name: str,
        home: str | Path | None = None,
        config: IndexConfig | None = None,
        reporter: Reporter | None = None,
        skip_bad: bool = False,
        remote=None,
    ):
        """`remote`: where the models' passes run instead of here (indexer.ray_build's
        RayEncoding: a Ray cluster); the index written is the same."""
        self.name = check_name(name)
        self.dir = IndexDir(resolve_home(home), name)
        self.config = config
        self.reporter = Timed(reporter or NullReporter())  # stage lengths: the manifest's
        self.skip_bad = skip_bad
        self.remote = remote

    # -- public operations ---------------------------------------------------------------------
    @_plain_environment_errors
    def build(
        self,
        sources: Sequence[Source],
        early: bool = True,
        leave_pending: bool = False,
        on_searchable: Callable[[str], None] | None = None,
    ) -> WriteReport:
        """Build (or rebuild) the whole index from `sources`; the old one serves until the swap.
        `early`: publish a searchable version first (indexer.pending: the perspectives through
        every retriever, the other pools through BM25), telling `on_searchable` its name, then
        the complete one; `leave_pending`: stop after the first (`complete` finishes it)."""
        if not any(s.pool == "perspectives" for s in sources):
            raise PerspectError("a build needs a perspective pool", hint="pass --perspectives FILE")
        config = self.config or IndexConfig(retrievers=default_retrievers())
        batches = self._read_all(sources)
        pools = sorted({s.pool for s in sources})
        counts: dict[str, int] = {}
        for src, rep in batches:
            counts[src.pool] = counts.get(src.pool, 0) + len(rep.items)
        config = pending.lean(config, counts)
        first = pending.first_config(config, pools) if early else None
        with self.dir.writer_lock():
            version = self.dir.new_version()
            try:
                manifest = mf.new_manifest(self.name, (first or config).to_json())
                if first is not None:
                    manifest["pending"] = pending.entry(config, first, pools)
                report = self._write(version, manifest, batches, op="build")
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version)
        if first is None:
            return report
        if on_searchable is not None:
            on_searchable(version.name)
        if leave_pending:
            return report
        done = self.complete()
        return replace(report, version=done["version"]) if done else report

    @_plain_environment_errors
    def complete(self) -> dict[str, Any] | None:
        """The version a build left pending (indexer.pending), completed: the backends its first
        version left out, the links fused with the dense retriever and their cited sentences,
        the states where the index stores them. Searches keep the first version until the swap;
        None where nothing is pending."""
        outer = self.reporter  # its stages are not recorded twice: the inner reporter is wrapped
        self.reporter = Timed(pending.ProgressFile(outer.inner, self.dir.root))
        try:
            return self._complete()
        finally:
            self.reporter.inner.done()
            self.reporter = outer

    def _complete(self) -> dict[str, Any] | None:
        with self.dir.writer_lock():
            live = self.dir.current()
            manifest = mf.load(live)
            if not manifest.get("pending"):
                return None
            integrity.check(live, manifest)
            full = IndexConfig.from_json(manifest["pending"]["config"])
            pools = list(manifest["pools"])
            todo = pending.late(full, IndexConfig.from_json(manifest["config"]), pools)
            version = self._clone(live, manifest, [*todo, LINKS, *(f"{p}/{STATES}" for p in pools)])
            try:
                manifest["config"] = full.to_json()
                for entry in todo:
                    pool, kind = entry.split("/")
                    store = ItemStore(version / pool, readonly=True)
                    cls = backend_class(kind, full.backends.get(kind, {}))
                    self._rebuild_backend(cls, version / pool / kind, store, manifest, "indexing")
                    manifest["pools"][pool] = self._pool_entry(store, manifest)
                    store.close()
                (version / LINKS).unlink(missing_ok=True)  # made anew, never read
                self._link(version, manifest)
                for pool in states.STATE_POOLS:
                    if pool in pools:
                        states.store(version, manifest, pool, None, self.reporter, self.remote)
                judge_links(version, manifest, self.reporter)
                del manifest["pending"]
                manifest["operations"].append({"op": "complete", "added": todo, "at": mf.now()})
                manifest["stages"] = [*manifest.get("stages", []), *self.reporter.take()]
                mf.save(version, manifest)
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version)
            texts = states.texts_of(version) if not full.stance_states else []
        states.keep_perspectives(texts, self.dir.root, self.reporter)  # after the swap
        return {**manifest, "version": version.name}

    @_plain_environment_errors
    def add(self, sources: Sequence[Source]) -> WriteReport:
        """Add (or replace, by id) items in place, without rebuilding."""
        self.dir.current()  # an unknown index is refused before anything is read or created
        batches = self._read_all(sources)
        with self.dir.writer_lock():
            live = self.dir.current()
            manifest = mf.load(live)
            integrity.check(live, manifest)  # never carry a damaged file into the next version
            version = self._clone(live, manifest, self._touched([s.pool for s in sources]))
            try:
                report = self._write(version, manifest, batches, op="add")
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version, pools=sorted({s.pool for s in sources}))
        return report

    @_plain_environment_errors
    def delete(self, pool: str, ids: Sequence[str]) -> WriteReport:
        ids = [str(i) for i in dict.fromkeys(ids)]
        if not ids:
            raise PerspectError("no ids to delete", hint="pass --ids ID [ID ...]")
        self.dir.current()  # an unknown index is refused before its folder is created
        with self.dir.writer_lock():
            live = self.dir.current()
            manifest = mf.load(live)
            if pool not in manifest["pools"]:
                raise PerspectError(f"index {self.name!r} has no {pool} pool")
            integrity.check(live, manifest)
            version = self._clone(live, manifest, self._touched([pool]))
            try:
                store = ItemStore(version / pool)
                present = sorted(store.existing(ids))
                with self.reporter.stage(f"deleting from {pool}", total=len(present)) as adv:
                    store.delete(present)
                    for b in self._open_backends(version / pool, manifest, writable=True):
                        b.delete(present)
                        b.commit()
                        b.close()
                        if b.needs_rebuild():  # tombstones past the ratio: compact
                            self._rebuild_backend(type(b), b.folder, store, manifest)
                    adv(len(present))
                store.close()
                if pool == "evidence":
                    self._link(version, manifest)
                elif pool == "perspectives" and Links.exists(version):
                    links = Links(version, readonly=False)
                    links.drop(present)
                    links.close()
                states.drop(version, manifest, pool, present)
                store = ItemStore(version / pool, readonly=True)
                manifest["pools"][pool] = self._pool_entry(store, manifest)
                store.close()
                manifest["operations"].append(
                    {
                        "op": "delete",
                        "pool": pool,
                        "requested": len(ids),
                        "deleted": len(present),
                        "at": mf.now(),
                    }
                )
                mf.save(version, manifest)
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version, pools=[pool])
        return WriteReport(
            index=self.name,
            version=version.name,
            counts=self._counts(manifest),
            deleted={pool: len(present)},
            not_found={pool: len(ids) - len(present)},
        )

    @_plain_environment_errors
    def rebuild(self, retriever: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Re-encode every pool with one retriever from the stored items, e.g. after training a
        new dense or ColBERT model, or to add a retriever to an existing index. The other
        retrievers' files are shared with the live version, so this costs only the one encoder;
        the old version serves until the swap, as for any write."""
        backend_class(retriever)  # unknown kinds fail before any copy
        with self.dir.writer_lock():
            live = self.dir.current()
            manifest = mf.load(live)
            integrity.check(live, manifest, skip=retriever)  # what is rebuilt may be damaged
            # the retriever's folders are made anew (removed first), as the links are
            version = self._clone(
                live, manifest, [*(f"{p}/{retriever}" for p in manifest["pools"]), LINKS]
            )
            try:
                cfg = manifest["config"]
                if retriever not in cfg["retrievers"]:
                    cfg["retrievers"] = [*cfg["retrievers"], retriever]
                backends = cfg.setdefault("backends", {})
                backends[retriever] = {**backends.get(retriever, {}), **(options or {})}
                cls = backend_class(retriever, backends[retriever])
                pools = IndexConfig.from_json(cfg).for_pool
                for pool in manifest["pools"]:
                    if retriever not in pools(pool):
                        continue
                    store = ItemStore(version / pool, readonly=True)
                    self._rebuild_backend(cls, version / pool / retriever, store, manifest)
                    manifest["pools"][pool] = self._pool_entry(store, manifest)
                    store.close()
                if retriever in ("bm25", "dense"):
                    (version / LINKS).unlink(missing_ok=True)  # made anew, never read
                    self._link(version, manifest)
                mf.save(version, manifest)
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version)
        return manifest

    @_plain_environment_errors
    def store_stance_states(self) -> dict[str, Any]:
        """(Re)store the stance trunk's lower-layer states of every perspective (an index built
        before the bundle had a trunk, or with another base) and of every document sentence,
        and judge its links' cited sentences with the relation model (one built before the
        bundle had it). The old version serves meanwhile."""
        if stance_trunk.bundled() is None:
            raise PerspectError(
                "the pair model names no stance trunk: there are no states to store",
                hint="perspect models verify (the bundle's models/stance)",
            )
        with self.dir.writer_lock():
            live = self.dir.current()
            manifest = mf.load(live)
            if "perspectives" not in manifest["pools"]:
                raise PerspectError(f"index {self.name!r} has no perspective pool")
            integrity.check(live, manifest)
            version = self._clone(live, manifest, [f"perspectives/{STATES}", LINKS])
            try:
                kept = manifest["config"].get("stance_states")
                manifest["config"]["stance_states"] = True
                for pool in states.STATE_POOLS:
                    if pool in manifest["pools"] and not (kept and states.current(version, pool)):
                        states.store(version, manifest, pool, None, self.reporter, self.remote)
                judge_links(
                    version, manifest, self.reporter
                )  # the relation model's, where it has one
                manifest["operations"].append({"op": "stance-states", "at": mf.now()})
                mf.save(version, manifest)
            except BaseException:
                shutil.rmtree(version, ignore_errors=True)
                raise
            self._publish(version, pools=["perspectives"])
        return manifest

    # -- internals -----------------------------------------------------------------------------
    def _publish(self, version: Path, pools: Sequence[str] | None = None) -> None:
        """Seal `version` (every file's checksum), make it answer a search over each retriever
        of the pools the write changed (all with `pools` None), and only then swap it in and
        tell each backend (an Elasticsearch alias moves here). A version that fails its check is
        removed: the live one stays as it was. Why the check: an update that broke PLAID was
        only found by the next user's search, after the previous version was gone."""
        try:
            manifest = mf.seal(version)
            # in a child process: a check that crashes (a native library over a bad file) must
            # not take the writer with it (indexer.check_search)
            check_in_child(
                self.name, version, manifest, list(manifest["pools"]) if pools is None else pools
            )
        except BaseException:
            shutil.rmtree(version, ignore_errors=True)
            raise
        self.dir.publish(version)
        cfg = IndexConfig.from_json(manifest["config"])
        for pool in manifest["pools"]:
            for kind in cfg.for_pool(pool):
                opts = cfg.backends.get(kind, {})
                if (version / pool / kind).is_dir():
                    try:
                        backend_class(kind, opts).on_published(version / pool / kind, opts)
                    except PerspectError as e:
                        raise PerspectError(
                            f"{version.name} is live, but {pool}/{kind} was not announced: {e}",
                            hint="run the same write again once the cause is fixed",
                        ) from None

    def _read_all(self, sources: Sequence[Source]) -> list[tuple[Source, ReadReport]]:
        out = []
        for src in sources:
            with self.reporter.stage(f"reading {src.pool} from {Path(src.path).name}") as adv:
                rep = read_source(src)
                adv(len(rep.items))
            rep.check(skip_bad=self.skip_bad)
            out.append((src, rep))
        return out

    def _clone(self, live: Path, manifest: dict[str, Any], touched: Sequence[str]) -> Path:
        """The next version: the files under `touched` (paths relative to the version: what this
        write may change in place) copied, every other file hard-linked to the live one's."""
        cfg = IndexConfig.from_json(manifest["config"])
        classes = {k: backend_class(k, cfg.backends.get(k, {})) for k in cfg.retrievers}

        def immutable(p: Path) -> bool:
            return any(k in p.parts and c.immutable_file(p.name) for k, c in classes.items())

        with self.reporter.stage("copying the live version (copy-on-write)"):
            return self.dir.new_version(clone_from=live, immutable=immutable, touched=touched)

    @staticmethod
    def _touched(pools: Sequence[str]) -> list[str]:
        """What a write to `pools` may change in place: their folders, and the links when it
        writes perspectives or evidence (the links join the two)."""
        links = [LINKS] if {"perspectives", "evidence"} & set(pools) else []
        return [*pools, *links]

    def _open_backends(
        self, pool_dir: Path, manifest: dict[str, Any], writable: bool, create: bool = False
    ) -> list[Backend]:
        cfg = IndexConfig.from_json(manifest["config"])
        out = []
        for kind in cfg.for_pool(pool_dir.name):
            opts = cfg.backends.get(kind, {})
            cls = backend_class(kind, opts)
            folder = pool_dir / kind
            out.append(cls.create(folder, opts) if create else cls.open(folder, opts, writable))
        return out

    def _write(
        self,
        version: Path,
        manifest: dict[str, Any],
        batches: list[tuple[Source, ReadReport]],
        op: str,
    ) -> WriteReport:
        added: dict[str, int] = {}
        replaced: dict[str, int] = {}
        dup_ids = dup_texts = bad = 0
        by_pool: dict[str, list[Item]] = {}
        seen: dict[str, set[str]] = {}
        for src, rep in batches:
            pool_seen = seen.setdefault(src.pool, set())
            items = by_pool.setdefault(src.pool, [])
            for it in rep.items:
                if it.id in pool_seen:
                    dup_ids += 1
                    continue
                pool_seen.add(it.id)
                items.append(it)
            dup_ids += len(rep.duplicate_ids)
            dup_texts += rep.duplicate_texts
            bad += len(rep.errors)
            manifest["sources"].append(
                {
                    "pool": src.pool,
                    **mf.file_fingerprint(Path(src.path)),
                    "op": op,
                    "records": len(rep.items),
                    "skipped_bad": len(rep.errors),
                    "duplicate_ids": len(rep.duplicate_ids),
                    "duplicate_texts": rep.duplicate_texts,
                    "at": mf.now(),
                }
            )
        libs: dict[str, str] = {}
        seconds: dict[str, float] = {}
        pending = None  # the stance states, computed beside the other pools' encoders
        for pool, items in self._perspectives_first(by_pool):
            pool_dir = version / pool
            is_new = not pool_dir.exists()
            store = ItemStore(pool_dir)
            replaced[pool] = store.upsert(items)
            added[pool] = len(items) - replaced[pool]
            for b in self._open_backends(pool_dir, manifest, writable=True, create=is_new):
                libs.update(b.library_versions())
                t0 = time.perf_counter()
                with self.reporter.stage(f"indexing {pool} ({b.kind})", total=len(items)) as adv:
                    self._add(b, items, adv)
                with self.reporter.stage(f"committing {pool} ({b.kind})"):
                    b.commit()
                b.close()
                seconds[f"{pool}/{b.kind}"] = round(time.perf_counter() - t0, 3)
                if b.needs_rebuild():
                    self._rebuild_backend(type(b), b.folder, store, manifest)
            manifest["pools"][pool] = self._pool_entry(store, manifest)
            store.close()
            if pool == "perspectives":
                # the trunk's lower layers (PyTorch) need only the stored perspectives: they run
                # on a second thread while the other pools are encoded and the links computed,
                # much of which (tantivy's searches, tokenizing, SQLite) holds one core (issue 42)
                fresh = op == "build" or not States.exists(version / "perspectives")
                part = None if fresh else items
                pending = background.Pending(
                    "perspect-states",
                    lambda part=part: states.store(
                        version, manifest, "perspectives", part, self.reporter, self.remote
                    ),
                )
        try:
            if "evidence" in by_pool or op == "build":
                self._link(version, manifest)  # new evidence can outrank any existing link
            elif "perspectives" in by_pool:
                self._link(version, manifest, [it.id for it in by_pool["perspectives"]])
        finally:
            if pending is not None:
                pending.result()
        for pool in states.STATE_POOLS:  # the others' (documents) after the perspectives'
            if pool != "perspectives" and pool in by_pool:
                fresh = op == "build" or not States.exists(version / pool)
                got = None if fresh else by_pool[pool]
                states.store(version, manifest, pool, got, self.reporter, self.remote)
        if "evidence" in by_pool or op == "build":
            judge_links(version, manifest, self.reporter)
        elif "perspectives" in by_pool:
            judge_links(version, manifest, self.reporter, [it.id for it in by_pool["perspectives"]])
        manifest["libraries"] = mf.library_versions(libs)
        manifest["stages"] = self.reporter.take()  # where this write's time went
        mf.save(version, manifest)
        return WriteReport(
            index=self.name,
            version=version.name,
            counts=self._counts(manifest),
            added=added,
            replaced=replaced,
            skipped_bad=bad,
            duplicate_ids=dup_ids,
            duplicate_texts=dup_texts,
            seconds=seconds,
        )

    @staticmethod
    def _perspectives_first(by_pool: dict[str, list[Item]]) -> list[tuple[str, list[Item]]]:
        """The pools to write, perspectives first: their stance states start soonest."""
        return sorted(by_pool.items(), key=lambda kv: kv[0] != "perspectives")

    def _link(self, version: Path, manifest: dict[str, Any], pids: list[str] | None = None) -> None:
        derived.link(version, manifest, self.reporter, pids)

    def _rebuild_backend(
        self,
        cls: type[Backend],
        folder: Path,
        store: ItemStore,
        manifest: dict[str, Any],
        verb: str = "rebuilding",
    ) -> None:
        """Re-create one backend of a pool from the item store (e.g. ColBERT centroids gone stale,
        or a new encoder)."""
        cfg = IndexConfig.from_json(manifest["config"])
        items = list(store)
        if folder.exists():
            shutil.rmtree(folder)
        fresh = cls.create(folder, cfg.backends.get(cls.kind, {}))
        pool = folder.parent.name
        with self.reporter.stage(f"{verb} {pool} ({cls.kind})", total=len(items)) as adv:
            self._add(fresh, items, adv)
            fresh.commit()
        fresh.close()
        manifest["operations"].append(
            {
                "op": "rebuild",
                "pool": pool,
                "retriever": cls.kind,
                "items": len(items),
                "at": mf.now(),
            }
        )

    def _add(self, backend: Backend, items: Sequence[Item], adv) -> None:
        """`items` into `backend`, its encoder's pass on the remote cluster where one is given."""
        if self.remote is not None and backend.encodes and items:
            vectors = self.remote.encode(backend, [it.text for it in items], adv)
            backend.add_documents([it.id for it in items], vectors)
        else:
            backend.add(items, progress=adv)

    def _pool_entry(self, store: ItemStore, manifest: dict[str, Any]) -> dict[str, Any]:
        cfg = IndexConfig.from_json(manifest["config"])
        pool = store.path.parent.name
        entry = {"count": store.count(), "retrievers": list(cfg.for_pool(pool))}
        if pool in ARTICLE_POOLS:  # sentences of how many articles
            entry["articles"] = store.article_count()
        return entry

    @staticmethod
    def _counts(manifest: dict[str, Any]) -> dict[str, int]:
        return {p: e["count"] for p, e in manifest["pools"].items()}
