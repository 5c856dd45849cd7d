"""Dense bi-encoder backend: one sentence embedding per item in a faiss inner-product index.

Why a third retriever beside BM25 and ColBERT: the packaged all-MiniLM-L6-v2 was trained on a
billion sentence pairs, so its embeddings carry paraphrase knowledge the in-domain ColBERT (trained
for minutes here) lacks. Measured on PERSPECTRUM dev (bench/retrieval.py) it adds recall to the
fusion, and the stored vectors are reused at query time: the engine compares perspectives by cosine
for equivalence and links each perspective to its evidence without encoding anything.

Storage: `vectors.faiss` (normalised float32 vectors, so inner product is cosine) and `ids.json`
(faiss int64 id -> item id, and the config the index was built with, `index_kind` included).
Exact search (IndexIDMap2 over IndexFlatIP) while the pool is under `ann_min` vectors: at
PERSPECTRUM scale (11k x 384) a flat scan takes about a millisecond. Past `ann_min` (200,000 by
default) a commit rebuilds it as IVF-Flat (`retriever/ann.py`: why IVF and not HNSW, measured),
searched with `nprobe` lists: at 1M news sentences p95 14 ms instead of 171 ms through the
backend, recall@10 .999 against exact on the bench's pool (docs/scale-out.md).
A commit writes both files beside themselves and renames them into place, so a crash mid-build
(the IVF training takes minutes at 1M) leaves the committed files, and the live version above
them, as they were.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import paths
from perspect.core.errors import ModelError
from perspect.core.model import bundle
from perspect.core.types import Item
from perspect.retriever import ann
from perspect.retriever.base import Backend, ProgressFn

VECTORS = "vectors.faiss"
IDS = "ids.json"
PACKAGED = paths.PACKAGED_MINILM
# query_runtime "onnx": short query batches on ONNX Runtime (retriever/onnx_query.py); "torch"
# ann_min: vectors from which a commit makes the index IVF-Flat; nprobe: IVF lists a query scans
DEFAULT_CONFIG: dict[str, Any] = {
    "max_length": 256,
    "batch_size": 64,
    "query_runtime": "onnx",
    "ann_min": 200_000,
    "nprobe": 64,
}
SAVED = ("model", "max_length", "ann_min", "nprobe", "index_kind", "ann_trained_on")
ONNX_BATCH = 8  # texts per ONNX Runtime call (length-sorted): short batches pad little
WEIGHTS = ("*.safetensors", "*.bin", "*.json", "*/*.json")  # what an exported graph depends on
_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()


def default_model() -> str:
    """`$PERSPECT_DENSE_MODEL`, else the in-domain model `perspect train --task dense` writes
    (models/dense), else the packaged all-MiniLM-L6-v2. A build records the resolved choice in the
    index manifest, so an index keeps the encoder it was built with."""
    if paths.dense_model_overridden():
        return str(paths.dense_model_dir())
    trained = paths.dense_model_dir()
    shipped = bundle.is_bundle(trained) or (trained / "perspect_manifest.json").is_file()
    return str(trained) if shipped else PACKAGED


def onnx_cache() -> Path:
    """Where graphs of models Perspect does not own are exported: `$PERSPECT_ONNX_CACHE`, else
    the project's `.cache/onnx/` (git-ignored)."""
    return paths.onnx_cache()


def resolve_model(name: str) -> str:
    """The packaged all-MiniLM-L6-v2 folder for its short name, else a path or a hub id."""
    if name in (PACKAGED, paths.HUB_MINILM):
        return paths.packaged_minilm()
    return str(bundle.resolve(name)) if Path(name).is_dir() else name


def load_encoder(name: str, max_length: int = 256):
    """A sentence-transformers model, loaded once per process."""
    path = resolve_model(name)
    key = f"{path}|{max_length}"
    with _LOCK:
        if key not in _MODELS:
            if Path(path).exists():
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()  # "Loading weights" bars would garble our output
            try:
                m = SentenceTransformer(path, device="cpu")
            except OSError as e:
                raise ModelError(
                    f"cannot load the dense encoder {name}: {str(e).splitlines()[0]}",
                    hint="pass a local sentence-transformers folder, or go online for a hub id",
                ) from None
            m.max_seq_length = max_length
            _MODELS[key] = m
        return _MODELS[key]


def encode(model, texts: Sequence[str], batch_size: int = 64, progress=None) -> np.ndarray:
    """Normalised float32 embeddings, longest-first batches so padding stays small."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    dim = model.get_sentence_embedding_dimension()
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        out[idx] = model.encode(
            [texts[i] for i in idx],
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        if progress:
            progress(len(idx))
    return out


def query_graph(model: str | Path) -> bool:
    """Make the ONNX graph a search encodes queries of `model` with, where it can be (`perspect
    models prepare`); True when the queries are served on ONNX Runtime, False on PyTorch."""
    backend = DenseBackend(Path(model) / "unused", {"model": str(model)})
    return backend._query_session() is not None


class DenseBackend(Backend):
    kind = "dense"

    def __init__(self, folder: Path, config: dict[str, Any]):
        super().__init__(folder, {**DEFAULT_CONFIG, "model": default_model(), **config})
        self._index = None
        self._ids: list[str | None] | None = None
        self._pos: dict[str, int] | None = None
        self._session: Any = False  # not looked up yet
        self._tokens: tuple[Any, bool] | None = None  # (TextTokenizer, lowercase) when serving

    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> DenseBackend:
        folder.mkdir(parents=True, exist_ok=False)
        b = cls(folder, config)
        b._ids, b._pos = [], {}
        return b

    @classmethod
    def open(cls, folder: Path, config: dict[str, Any], writable: bool = False) -> DenseBackend:
        if not (folder / IDS).is_file():
            raise ModelError(f"dense index at {folder} is incomplete (no {IDS})")
        state = json.loads((folder / IDS).read_text())
        b = cls(folder, {**config, **state["config"]})
        b._ids = state["ids"]
        b._pos = {i: n for n, i in enumerate(b._ids) if i is not None}
        return b

    @property
    def model(self):
        return load_encoder(self.config["model"], int(self.config["max_length"]))

    @property
    def index(self):
        if self._index is None:
            import faiss

            p = self.folder / VECTORS
            if p.exists():
                self._index = faiss.read_index(str(p))
                ann.set_nprobe(self._index, int(self.config["nprobe"]))
            else:
                self._index = ann.empty_flat(self.model.get_sentence_embedding_dimension())
        return self._index

    @property
    def index_kind(self) -> str:
        """What the index is now, ann.FLAT or ann.IVF (before loading it: what was committed)."""
        return (
            ann.kind_of(self._index)
            if self._index is not None
            else self.config.get("index_kind", ann.FLAT)
        )

    encodes = True

    def add(self, items: Sequence[Item], progress: ProgressFn | None = None) -> None:
        if not items:
            return
        vecs = self.encode_documents([it.text for it in items], progress)
        self.add_documents([it.id for it in items], vecs)

    def encode_documents(self, texts: Sequence[str], progress: ProgressFn | None = None):
        # the encoder's ONNX graph where it is made (the query graph: the whole forward, batch
        # free; the same vectors within 1e-5, tests/test_dense.py), else PyTorch, which then
        # exports it for the next write and the first search: an add of a few articles imports
        # neither torch nor sentence-transformers (issue 42)
        if self._query_session() is not None:
            return self.embed_queries(texts, progress)
        return encode(self.model, texts, int(self.config["batch_size"]), progress)

    def add_documents(self, ids: Sequence[str], encoded) -> None:
        present = [i for i in ids if i in self._pos]
        if present:
            self.delete(present)
        self.add_encoded(ids, encoded)

    def add_encoded(self, ids: Sequence[str], vecs: np.ndarray) -> None:
        """Store vectors already encoded by this backend's model (new ids only): what bench/scale.py
        builds its large pools from."""
        start = len(self._ids)
        self._ids.extend(ids)
        for n, i in enumerate(ids):
            self._pos[i] = start + n
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        if self._index is None and not (self.folder / VECTORS).exists():
            self._index = ann.empty_flat(vecs.shape[1])  # no encoder load for ready vectors
        self.index.add_with_ids(vecs, np.arange(start, start + len(ids), dtype=np.int64))

    def delete(self, ids: Sequence[str]) -> None:
        gone = [self._pos.pop(i) for i in ids if i in self._pos]
        if gone:
            self.index.remove_ids(np.asarray(gone, dtype=np.int64))
            for n in gone:
                self._ids[n] = None

    def commit(self) -> None:
        """Write the index, rebuilt first when `ann.plan` says so (flat -> IVF past `ann_min`).
        Both files are written to temporary names and renamed into place, vectors first: until
        the renames, the folder holds the previous commit, whole."""
        import faiss

        index = self.index
        kind = ann.kind_of(index)
        trained = int(self.config.get("ann_trained_on", 0))
        step = ann.plan(kind, index.ntotal, trained, int(self.config["ann_min"]))
        if step.rebuild:
            ids, vecs = ann.contents(index)
            index = ann.build(step.kind, ids, vecs, int(self.config["nprobe"]))
            del ids, vecs
            trained = index.ntotal if step.kind == ann.IVF else 0
        cfg = {k: self.config[k] for k in SAVED if k in self.config}
        cfg.update(index_kind=ann.kind_of(index), ann_trained_on=trained)
        tmp_vec = self.folder / f".{VECTORS}.tmp-{os.getpid()}"
        tmp_ids = self.folder / f".{IDS}.tmp-{os.getpid()}"
        try:
            faiss.write_index(index, str(tmp_vec))
            tmp_ids.write_text(json.dumps({"config": cfg, "ids": self._ids}))
            os.replace(tmp_vec, self.folder / VECTORS)
            os.replace(tmp_ids, self.folder / IDS)
        finally:
            tmp_vec.unlink(missing_ok=True)
            tmp_ids.unlink(missing_ok=True)
        self._index = index
        self.config.update(cfg)

    # -- reads -----------------------------------------------------------------------------------
    def embed_queries(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        """Query-time vectors (a claim, a search's evidence sentences) on ONNX Runtime where it
        can (dense p50 37 -> see bench/retrieval.py), in length-sorted calls of ONNX_BATCH
        texts: a search never loads PyTorch for them; else sentence-transformers in PyTorch."""
        sess = self._query_session() if texts else None
        if sess is None:
            return encode(self.model, texts, int(self.config["batch_size"]), progress)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for s in range(0, len(order), ONNX_BATCH):
            idx = order[s : s + ONNX_BATCH]
            got = self._onnx_vectors(sess, [texts[i] for i in idx])
            if out is None:
                out = np.zeros((len(texts), got.shape[1]), dtype=got.dtype)
            out[idx] = got
            if progress:
                progress(len(idx))
        return out

    def _onnx_vectors(self, sess, texts: list[str]) -> np.ndarray:
        from perspect.retriever import onnx_query

        if self._tokens is not None:  # served without sentence-transformers (cold start)
            lower = self._tokens[1]
            clean = [t.strip().lower() if lower else t.strip() for t in texts]
            features = self._tokens[0].encode(clean, max_length=int(self.config["max_length"]))[0]
        else:
            features = self.model.tokenize(texts)
        return onnx_query.encode_sentences(sess, features)

    def _query_session(self):
        """The ONNX Runtime session of this backend's encoder, or None (PyTorch). A Perspect-
        trained model keeps its graph in its own folder, like the ColBERT model; other local
        models (the packaged MiniLM in site-packages) in the project's `.cache/onnx/`; hub ids
        stay on PyTorch."""
        if self._session is not False:
            return self._session
        self._session = None
        path = Path(resolve_model(self.config["model"]))
        if self.config.get("query_runtime", "onnx") == "onnx" and path.is_dir():
            from perspect.core.model import onnxrt
            from perspect.retriever import onnx_query

            fp = onnxrt.files_fingerprint(path, WEIGHTS)
            folder = path
            if not (path / "perspect_manifest.json").is_file():
                folder = onnx_cache() / f"{path.name}-{fp}"
                folder.mkdir(parents=True, exist_ok=True)
            self._session = onnxrt.existing(folder, "dense-query", fp)
            if self._session is not None:
                from perspect.core.model.tokens import TextTokenizer

                st = path / "sentence_bert_config.json"
                lower = (
                    bool(json.loads(st.read_text()).get("do_lower_case")) if st.is_file() else False
                )
                self._tokens = (TextTokenizer(path), lower)
            if self._session is None:
                self._session = onnx_query.sentence_session(self.model, folder, fp)
        return self._session

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings of `ids` (zeros for unknown ids): no encoding at query time."""
        out = np.zeros((len(ids), self.index.d), dtype=np.float32)
        for n, i in enumerate(ids):
            if i in self._pos:
                out[n] = self.index.reconstruct(int(self._pos[i]))
        return out

    def search_vectors(self, q: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        if k <= 0 or self.index.ntotal == 0:
            return [[] for _ in range(len(q))]
        scores, idx = self.index.search(np.ascontiguousarray(q, dtype=np.float32), k)
        return [
            [(self._ids[j], float(s)) for s, j in zip(srow, irow, strict=True) if j >= 0]
            for srow, irow in zip(scores, idx, strict=True)
        ]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return self.search_vectors(self.embed_queries([query]), k)[0]

    def count(self) -> int:
        return len(self._pos)

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        from importlib.metadata import version

        return {
            "faiss-cpu": version("faiss-cpu"),
            "sentence-transformers": version("sentence-transformers"),
        }
