"""ColBERTv2 late-interaction backend: PyLate models and its Stanford PLAID index.

PyLate's PLAID with `use_fast=False` is the stanford ColBERT PLAID code. Its C++ kernels are
compiled by `perspect models prepare` or an index build and only loaded by a search
(retriever/plaid_kernels.py). fast-plaid is not used: it needs another torch and crashed with the
one here.

The ColBERT model is saved once and named by path in the index config together with a fingerprint of
its weights: indexing and querying must use the *same* projection, and a mismatch is refused rather
than silently returning noise.

Updates never touch a built PLAID index. PyLate's incremental PLAID update (an "experimental
feature" in its own words) left an index that aborted in `filter_pids` after a second add, and
removing two ids at once failed in `_remove_pid_from_ivf`; so a PLAID index is only ever written
whole. Added (or replaced) documents go to a small delta scored exactly (MaxSim over their stored
token vectors, the small-pool exact mode below) beside PLAID, and deleted or replaced PLAID
documents are tombstones filtered out of its answers. Once delta and tombstones together exceed
`rebuild_ratio` (default 0.5) of the PLAID index, `needs_rebuild()` asks the indexer to rebuild
this pool's ColBERT index from the item store (a compaction), so centroids never drift either.

Nothing read from an index can run code: PLAID's id map is PyLate's pickle, so it is replaced by
`plaid_ids.json` right after the build (and the pickles deleted); token vectors are loaded with
`torch.load(weights_only=True)`. An index from an older Perspect that still holds the pickle is
refused with the rebuild command.

Small pools (under `min_plaid_docs`, default 1,000) are scored exactly instead: MaxSim over every
stored token vector. PLAID's k-means cannot train with fewer token vectors than centroids (a dozen
documents fail outright), and exact scoring of a small pool is as fast. When a pool grows past the
threshold the indexer rebuilds it as PLAID.

Why one module: the PLAID index, the exact delta beside it, the tombstones and the JSON id
map are one on-disk format; writes, reads and compaction must change together.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspect.core.errors import IndexDamaged, ModelError
from perspect.core.types import Item
from perspect.retriever import onnx_query, plaid_kernels
from perspect.retriever.base import Backend, ProgressFn
from perspect.retriever.pylate_glue import (
    compile_kernels_in_background,
    default_model,
    load_colbert,
    model_fingerprint,
    quiet,
    setup_torch_extensions,
    silence_build,
    stanford,
    wait_for_kernels,
)

DEFAULT_CONFIG: dict[str, Any] = {
    "nbits": 2,
    # `python -m bench build colbert`, evidence pool (531k token vectors): 4 iterations 119 s,
    # 2 iterations 72 s, recall@10/20/60 .705/.812/.914 vs .701/.815/.912 from the same vectors
    "kmeans_niters": 2,
    "doc_maxlen": 256,
    "query_maxlen": 16,
    "query_maxlen_cap": 64,
    "encode_batch_size": 32,
    "ncells": 8,
    "centroid_score_threshold": 0.35,
    "ndocs": 1024,
    "rebuild_ratio": 0.5,
    # Below this many documents a pool is scored exactly (MaxSim over all stored token vectors):
    # PLAID's k-means needs many more token vectors than centroids, and small pools are fast anyway.
    "min_plaid_docs": 1000,
    # "onnx": queries on ONNX Runtime (exported once into the model folder); "torch": PyTorch
    "query_runtime": "onnx",
}
STATE = "perspect_colbert.json"
EXACT = "exact.pt"  # exact mode: every document; PLAID mode: the delta
PLAID_IDS = "plaid_ids.json"  # PLAID id (list position) -> document id
LEGACY_PICKLES = ("documents_ids_to_plaid_ids.pkl", "plaid_ids_to_documents_ids.pkl")
_QUERY_LOCK = threading.Lock()  # the query length is model state, shared by every backend


@dataclass(frozen=True)
class Within:
    """One shard's documents (`ColBERTBackend.within`): their ids, and their PLAID ids."""

    ids: frozenset
    pids: Any  # torch int32 tensor, sorted


class ColBERTBackend(Backend):
    kind = "colbert"

    def __init__(self, folder: Path, config: dict[str, Any], state: dict[str, Any]):
        super().__init__(folder, {**DEFAULT_CONFIG, **config})
        self.state = state
        self._plaid = None
        self._ids: dict[str, int] | None = None
        self._rev: dict[int, str] | None = None
        self._model = None
        self._exact_store: dict[str, Any] | None = None
        self._flat = None
        self._light: Any = None  # onnx_query.ColBERTQuery, False (PyLate), None (not looked at yet)
        self._reader = None  # the Stanford searcher for reads (see _read_searcher)
        self._dead: set[str] | None = None  # tombstoned PLAID documents
        self._reader_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> ColBERTBackend:
        cfg = {**DEFAULT_CONFIG, "model": str(default_model()), **config}
        if not Path(cfg["model"]).exists():
            raise ModelError(
                f"no ColBERT model at {cfg['model']}",
                hint="train one: perspect train --task colbert (or build with --retrievers bm25)",
            )
        folder.mkdir(parents=True, exist_ok=False)
        compile_kernels_in_background()  # ready by the time the build's first search comes
        state = {
            "model": str(Path(cfg["model"]).resolve()),
            "model_fingerprint": model_fingerprint(cfg["model"]),
            "built_count": 0,
            "added_since_build": 0,
            "mode": "exact",
        }
        b = cls(folder, cfg, state)
        b._save_state()
        return b

    @classmethod
    def open(cls, folder: Path, config: dict[str, Any], writable: bool = False) -> ColBERTBackend:
        state = json.loads((folder / STATE).read_text())
        b = cls(folder, config, state)
        if b.mode == "plaid" and not (folder / PLAID_IDS).is_file():
            index = folder.parents[3].name if len(folder.parents) > 3 else str(folder)
            raise IndexDamaged(
                f"index {index!r}: {folder} was written by an older Perspect (its ColBERT id map "
                "is a pickle, which Perspect does not load: a pickle can run code)",
                hint=f"re-encode it: perspect index rebuild --name {index} --retriever colbert",
            )
        if (
            Path(state["model"]).exists()
            and model_fingerprint(state["model"]) != state["model_fingerprint"]
        ):
            raise ModelError(
                f"the ColBERT model at {state['model']} changed since this index was built",
                hint="re-encode it: perspect index rebuild --name NAME --retriever colbert",
            )
        return b

    def _save_state(self) -> None:
        (self.folder / STATE).write_text(json.dumps(self.state, indent=2))

    @property
    def model(self):
        if self._model is None:
            self._model = load_colbert(
                self.state["model"], self.config["query_maxlen"], self.config["doc_maxlen"]
            )
        return self._model

    def _build_plaid(self, ids: list[str], embs: Sequence[Any]) -> None:
        """Write the PLAID index of `ids` in one go (the only way a PLAID index is written), then
        swap PyLate's pickled id map for JSON: PLAID ids of a fresh index are 0..n-1 in order."""
        setup_torch_extensions()
        plaid_kernels.ensure()  # the write path: compiled here if missing, never by a search
        plaid_kernels.install()
        from pylate import indexes

        silence_build()

        with quiet():
            plaid = indexes.PLAID(
                index_folder=str(self.folder),
                index_name="plaid",
                override=True,
                use_fast=False,
                nbits=self.config["nbits"],
                kmeans_niters=self.config["kmeans_niters"],
                embedding_size=self._dim(),
                ndocs=self.config["ndocs"],
                ncells=self.config["ncells"],
                centroid_score_threshold=self.config["centroid_score_threshold"],
                show_progress=False,
            )
            plaid.add_documents(documents_ids=ids, documents_embeddings=embs)
        for name in LEGACY_PICKLES:
            (self.folder / "plaid" / name).unlink(missing_ok=True)
        (self.folder / PLAID_IDS).write_text(json.dumps(ids))
        self._plaid = plaid
        self._ids = self._rev = None

    def _read_searcher(self):
        """The Stanford searcher over this index: the PLAID object's when this process built
        it, else one opened for reading alone, without importing PyLate's package (which
        imports transformers and datasets: ~3 s of a cold start here; see pylate_glue.stanford)."""
        if self._plaid is not None:
            return self._plaid._index.searcher
        with self._reader_lock:  # a warm-up thread may be opening it (warm)
            return self._open_reader()

    def _open_reader(self):
        if self._reader is None:
            if not (self.folder / PLAID_IDS).exists():
                return None
            setup_torch_extensions()
            # PLAID's .pt files are read with torch.load's default, weights_only=True (no code
            # from data); an environment forcing it off would let a crafted file run code
            os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
            searcher_cls, config_cls = stanford()
            plaid_kernels.install()  # loads the compiled kernels; says how to build missing ones
            config = config_cls(
                nbits=self.config["nbits"],
                root=str(self.folder),
                index_root=str(self.folder),
                dim=self._dim(),
                ndocs=self.config["ndocs"],
                ncells=self.config["ncells"],
                centroid_score_threshold=self.config["centroid_score_threshold"],
                search_batch_size=2**18,
            )
            # no quiet() here: a warm-up thread may run this (see pylate_glue._silence)
            try:
                self._reader = searcher_cls(
                    index="plaid", config=config, index_root=f"{self.folder}/"
                )
            except Exception as e:  # torch.load(weights_only=True) refusing a crafted file
                raise self._damaged("plaid", e) from None
        return self._reader

    def _dim(self) -> int:
        """Vector size, recorded at the first add so opening an index needs no model forward."""
        if "dim" not in self.state:
            self.state["dim"] = int(self.model.encode(["x"], is_query=False)[0].shape[-1])
        return int(self.state["dim"])

    def _mapping(self) -> dict[str, int]:
        """PLAID's documents (tombstoned ones included): id -> PLAID id."""
        if self._ids is None:
            p = self.folder / PLAID_IDS
            ids = json.loads(p.read_text()) if p.is_file() else []
            self._ids = {i: n for n, i in enumerate(ids)}
            self._rev = dict(enumerate(ids))
        return self._ids

    def _damaged(self, what: str, e: Exception) -> IndexDamaged:
        index = self.folder.parents[3].name if len(self.folder.parents) > 3 else str(self.folder)
        return IndexDamaged(
            f"index {index!r}: cannot read {self.folder / what} ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200] if str(e) else ''})",
            hint=f"re-encode it: perspect index rebuild --name {index} --retriever colbert",
        )

    def _tombstones(self) -> set[str]:
        if self._dead is None:
            self._dead = set(self.state.get("tombstones", []))
        return self._dead

    # -- encoding --------------------------------------------------------------------------------
    def _query_tokens(self):
        """What a query needs without PyLate (and so without transformers: ~3 s of a cold start):
        the tokenizer, the query settings of the model's config, and its exported query graph.
        None when the graph is not exported yet or the model does something else with queries
        (a prompt, no expansion, attention to the expansion tokens): PyLate's path then."""
        with self._reader_lock:  # a warm-up thread may be looking too (warm)
            if self._light is None:
                light = None
                if self.config.get("query_runtime", "onnx") == "onnx" and self._model is None:
                    light = onnx_query.colbert_query(
                        self.state["model"], self.state["model_fingerprint"]
                    )
                self._light = light or False
        return self._light or None

    def query_length(self, text: str) -> int:
        """Pad a query with [MASK]s to `query_maxlen`, but never cut a longer one (up to
        `query_maxlen_cap`): short claims gain from a short expansion (dev R@15 .565 at 32 tokens,
        .595 at 16), while claim + perspective queries for evidence need all their tokens. Counting
        tokenizes the query once more than PyLate does: 0.1 ms, measured, against ~50 ms a search."""
        lo = int(self.config["query_maxlen"])
        cap = max(lo, int(self.config.get("query_maxlen_cap", lo)))
        light = self._query_tokens()
        if light is not None:
            n = light.tokenizer.count(text) + 1  # + [Q]
        else:
            n = len(self.model.tokenizer(text, add_special_tokens=True)["input_ids"]) + 1
        return min(cap, max(lo, -(-n // 8) * 8))

    def _encode_query(self, text: str):
        """One query, as PyLate's `encode(is_query=True)` computes it: on ONNX Runtime where it
        can (see retriever/onnx_query.py), else in PyTorch without PyLate's per-call
        `model.to(device)` and `eval()` walks over every module (~4 ms a query, measured).
        Models with a prompt or without query expansion take PyLate's own path."""
        light = self._query_tokens()
        if light is not None:
            return light.encode(text, self.query_length(text))
        import torch

        m = self.model
        m.query_length = self.query_length(text)
        if m.prompts.get(m.default_prompt_name or "") or not m.do_query_expansion:
            return m.encode([text], is_query=True, show_progress_bar=False)[0]
        features = m.tokenize([text], is_query=True)
        sess = self._onnx_session()
        if sess is not None:
            return onnx_query.encode(sess, features)
        if m.training:
            m.eval()
        with torch.inference_mode():
            emb = m.forward(dict(features))["token_embeddings"][0]
            return torch.nn.functional.normalize(emb, p=2, dim=1).numpy()

    def _onnx_session(self):
        if self.config.get("query_runtime", "onnx") != "onnx":
            return None
        return onnx_query.session(self.model, self.state["model"], self.state["model_fingerprint"])

    def encode(self, texts: Sequence[str], is_query: bool, progress: ProgressFn | None = None):
        if is_query:
            with _QUERY_LOCK:
                return [self._encode_query(t) for t in texts]
        light = self._query_tokens()
        if light is not None and light.doc_prefix_id is not None:
            # the exported graph, one document a call (its batch axis is fixed): an add of a
            # few articles loads neither PyLate nor transformers (issue 42)
            n = int(self.config["doc_maxlen"])
            out = []
            for t in texts:
                out.append(light.encode_doc(t, n))
                if progress:
                    progress(1)
            return out
        bs = int(self.config["encode_batch_size"])
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        embs: list[Any] = [None] * len(texts)
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            res = self.model.encode(
                [texts[i] for i in idx], is_query=is_query, batch_size=bs, show_progress_bar=False
            )
            for i, e in zip(idx, res, strict=True):
                embs[i] = e
            if progress:
                progress(len(idx))
        return embs

    encodes = True

    def add(self, items: Sequence[Item], progress: ProgressFn | None = None) -> None:
        if not items:
            return
        embs = self.encode_documents([it.text for it in items], progress)
        self.add_documents([it.id for it in items], embs)

    def encode_documents(self, texts: Sequence[str], progress: ProgressFn | None = None):
        return self.encode(texts, is_query=False, progress=progress)

    def add_documents(self, ids: Sequence[str], encoded) -> None:
        if self._query_tokens() is None:  # the graph is not made: now, not at a first search
            self._onnx_session()
        self.add_encoded(ids, encoded)

    def add_encoded(self, ids: Sequence[str], embs: Sequence[Any]) -> None:
        """Store documents already encoded by this backend's model (an id present is replaced)."""
        ids = list(ids)
        if not ids:
            return
        self.state.setdefault("dim", int(embs[0].shape[-1]))
        if self.mode == "exact" and self.count() == 0 and len(ids) >= self.config["min_plaid_docs"]:
            self.state["mode"] = "plaid"  # a first build large enough for PLAID's k-means
            self._build_plaid(ids, embs)
            self.state.update(built_count=len(ids), added_since_build=0, tombstones=[])
            self._dead = None
            self._save_state()
            return
        if self.mode == "plaid":
            self._bury(ids)
        self._exact_add(ids, embs)  # the whole pool (exact mode) or the delta beside PLAID
        self.state["added_since_build"] = self.state.get("added_since_build", 0) + len(ids)
        self._save_state()

    def delete(self, ids: Sequence[str]) -> None:
        store = self._exact()
        for i in ids:
            store.pop(i, None)
        self._exact_save()
        if self.mode == "plaid":
            self._bury(ids)
            self._save_state()

    def _bury(self, ids: Sequence[str]) -> None:
        """Tombstone the PLAID documents among `ids` (deleted, or replaced by a delta copy)."""
        mapping, dead = self._mapping(), self._tombstones()
        new = [i for i in ids if i in mapping and i not in dead]
        if new:
            dead.update(new)
            self.state["tombstones"] = sorted(dead)

    def needs_rebuild(self) -> bool:
        """Exact mode outgrew itself, or the delta and tombstones beside PLAID grew past
        `rebuild_ratio` of it (a compaction re-clusters everything)."""
        if self.mode == "exact":
            return self.count() >= self.config["min_plaid_docs"]
        built = max(1, len(self._mapping()))
        drift = len(self._exact()) + len(self._tombstones())
        return drift > self.config["rebuild_ratio"] * built

    # -- exact mode: small pools, where PLAID's k-means has too few points to train --------------
    @property
    def mode(self) -> str:
        return self.state.get("mode", "exact")

    def _exact(self) -> dict[str, Any]:
        if self._exact_store is None:
            import torch

            p = self.folder / EXACT
            try:
                store = torch.load(p, weights_only=True) if p.exists() else {}
                if not isinstance(store, dict):
                    raise TypeError(f"holds a {type(store).__name__}, not token vectors")
            except Exception as e:  # a crafted pickle is refused here, never run
                raise self._damaged(EXACT, e) from None
            self._exact_store = store
            self._flat = None
        return self._exact_store

    def _exact_add(self, ids: list[str], embs: Sequence[Any]) -> None:
        import torch

        store = self._exact()
        for i, e in zip(ids, embs, strict=True):
            store[i] = torch.as_tensor(e).to(torch.float16)
        self._exact_save()

    def _exact_save(self) -> None:
        import torch

        torch.save(self._exact(), self.folder / EXACT)
        self._flat = None

    def _exact_search(self, q, k: int, within: Within | None = None) -> list[tuple[str, float]]:
        """MaxSim over every stored token: sum over query tokens of the best document token
        (`within`: of those documents only)."""
        import torch

        store = self._exact()
        if not store:
            return []
        if self._flat is None:
            ids = list(store)
            lens = torch.tensor([store[i].shape[0] for i in ids])
            self._flat = (
                ids,
                torch.cat([store[i].float() for i in ids]),
                torch.repeat_interleave(torch.arange(len(ids)), lens),
            )
        ids, tokens, owner = self._flat
        sim = torch.as_tensor(q).float() @ tokens.T  # (query tokens, all doc tokens)
        best = torch.full((sim.shape[0], len(ids)), float("-inf"))
        best = best.scatter_reduce(1, owner.expand(sim.shape[0], -1), sim, reduce="amax")
        scores = best.sum(0)
        if within is not None:  # a shard's documents: the others never rank
            mask = torch.tensor([i not in within.ids for i in ids])
            scores = scores.masked_fill(mask, float("-inf"))
            k = min(k, len(ids) - int(mask.sum()))
        top = torch.topk(scores, min(k, len(ids)))
        return [(ids[i], float(v)) for v, i in zip(top.values, top.indices, strict=True)]

    def _has(self, ident: str) -> bool:
        if ident in self._exact():
            return True
        return self.mode == "plaid" and ident in self._mapping() and ident not in self._tombstones()

    # -- reads -----------------------------------------------------------------------------------
    def within(self, ids) -> Within:
        """A filter to `ids` for `search_encoded` (one shard's items: perspect.retriever.shards):
        PLAID's candidates are cut to them before any is decompressed and scored, so a shard pays
        for its own documents and scores them as the whole index would."""
        import torch

        ids = frozenset(ids)
        mapping = self._mapping() if self.mode == "plaid" else {}
        pids = torch.tensor(sorted(p for i, p in mapping.items() if i in ids), dtype=torch.int32)
        return Within(ids, pids)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        return self.search_encoded(self.encode([query], is_query=True)[0], k)

    def search_encoded(self, q, k: int, within: Within | None = None) -> list[tuple[str, float]]:
        """`search` for a query encoded already (`encode(..., is_query=True)`), `within`: only
        the documents of that filter (`within`)."""
        if k <= 0:
            return []
        delta = self._exact_search(q, k, within)
        if self.mode == "exact":
            return delta
        searcher = self._read_searcher()
        mapping, dead = self._mapping(), self._tombstones()
        live = len(mapping) - len(dead)
        if searcher is None or live <= 0:
            return delta
        # Straight to the Stanford searcher: PyLate's __call__ re-reads the id pickle every query.
        # Its messages are muted at import (pylate_glue): searches run on several threads at once.
        # Ask for as many more as there are tombstones, so k live ones remain.
        if within is not None:
            import torch

            keep = within.pids
            pids, _ranks, scores = searcher.search(
                q,
                k=min(k + len(dead), len(mapping)),
                filter_fn=lambda got: got[torch.isin(got, keep.to(got.dtype))],
            )
        else:
            pids, _ranks, scores = searcher.search(q, k=min(k + len(dead), len(mapping)))
        rev = self._rev or {}
        main = [
            (rev[p], float(s))
            for p, s in zip(pids, scores, strict=False)
            if p in rev and rev[p] not in dead
        ]
        # PLAID's scores are MaxSim over decompressed vectors, the delta's over the stored ones:
        # the same scale, so one ranking
        return sorted(main + delta, key=lambda h: -h[1])[:k]

    def count(self) -> int:
        n = len(self._exact())
        if self.mode == "plaid":
            n += len(self._mapping()) - len(self._tombstones())
        return n

    def commit(self) -> None:
        wait_for_kernels()  # a build never ends with the compiler still running

    def close(self) -> None:
        self._plaid = None
        self._reader = None

    def warm(self) -> None:
        """Import torch and open the PLAID index (1.5-2 s in a new process) while the caller
        loads its models; then the query encoder."""
        self._exact()
        if self.mode == "plaid":
            self._read_searcher()
        self._query_tokens()

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        from importlib.metadata import version

        return {"pylate": version("pylate")}
