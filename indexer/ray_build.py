"""Index builds whose encoders run on a Ray cluster (`perspect index build|add --ray ADDRESS`).

Why: on one machine the build's time is the models' passes over every text (the dense and ColBERT
encoders, the trunk's lower layers for the stance states), and they are embarrassingly parallel.
Here each pass is a Ray Data `map_batches` over a pool's texts, sorted by length so a batch pads
little, as tasks of one CPU each: the worker process a task runs in loads its model once (a
backend of the same kind and config, or the bundle's trunk: a class per model) and keeps it, and
Ray runs a build's tasks in the same pooled processes, so later batches and later passes with the
same model (the dense encoder of every pool) reuse it. An actor pool a pass was measured first:
each pass started its actors and loaded its model again (600 perspectives and 300 paragraphs,
one node: +65 % on the embedded build against +34 % for the tasks, the same run). What comes back is stored by the
same code an embedded build stores with (`Backend.add_documents`, `States.put`), in the same
order, so the index is the one an embedded build writes: same files, same manifest and checks,
vectors equal to float rounding (tests/test_ray_build.py). The rest of the build (BM25, links,
checks, the swap) runs where the command runs.

A node lost mid-build costs only its batches in flight: Ray runs those tasks again elsewhere
(`RESTARTS` retries); each row comes back once, keyed by its position.

Ray is optional (`pip install 'perspect[ray]'`): imported only here, only when asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.errors import PerspectError

BATCH = 64  # texts per batch a task encodes
RESTARTS = 4  # times a task is run again after its node is lost
ENV = ("PERSPECT_MODELS", "PERSPECT_CACHE", "PERSPECT_COLBERT_MODEL", "PERSPECT_DENSE_MODEL")
INSTALL = "pip install 'perspect[ray]'"


def _ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise PerspectError(
            "--ray needs Ray, which is not installed", hint=f"install it: {INSTALL}"
        ) from None
    return ray


class RayEncoding:
    """Connected to a Ray cluster (`address`: "auto", "ray://host:10001" or "host:6379"); the
    encoders' tasks get one CPU each, `workers` of them at once (default: the cluster's CPUs)."""

    def __init__(self, address: str, workers: int | None = None):
        ray, self._started = connect(address)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(workers or cpus, cpus))
        self.ray = ray

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()

    def __enter__(self) -> RayEncoding:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the passes ------------------------------------------------------------------------------
    def encode(self, backend, texts: Sequence[str], progress=None) -> Any:
        """`backend.encode_documents(texts)`, computed on the cluster by backends of the same
        kind and config: an array for a dense backend, a list of arrays for ColBERT."""
        rows = self._map(
            _BackendEncoder, {"kind": backend.kind, "config": dict(backend.config)}, texts, progress
        )
        if backend.kind == "dense":
            return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        return rows

    def lower_quantized(self, texts: Sequence[str], progress=None) -> list[tuple]:
        """The bundled trunk's lower-layer states of `texts`, quantized as stored
        (perspect.core.index.stance_states.quantize): (int8 states, scale) per text."""
        rows = self._map(_TrunkLower, {}, texts, progress)
        return [(r[0], r[1]) for r in rows]

    def _map(self, cls, kwargs: dict, texts: Sequence[str], progress) -> list:
        """`cls(**kwargs)(batch)` over `texts` by length, as tasks; each text's output in
        the input's order (every row comes back once, by its position)."""
        if not len(texts):
            return []
        ray = self.ray
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ds = ray.data.from_items(
            [{"i": i, "t": texts[i]} for i in order],
            override_num_blocks=max(1, min(len(order) // BATCH, 4 * self.workers)),
        )
        out = ds.map_batches(
            _encode_batch,
            fn_kwargs={"what": cls.__name__, "kwargs": kwargs},
            batch_size=BATCH,
            batch_format="numpy",
            num_cpus=1,
            concurrency=self.workers,
            max_retries=RESTARTS,
        )
        got: list = [None] * len(texts)
        seen = 0
        for batch in out.iter_batches(batch_size=BATCH, batch_format="numpy"):
            for i, enc in zip(batch["i"], batch["out"], strict=True):
                if got[int(i)] is None:
                    seen += 1
                got[int(i)] = enc
            if progress:
                progress(len(batch["i"]))
        if seen != len(texts):
            raise PerspectError(f"the cluster returned {seen} of {len(texts)} encodings")
        return got


def connect(address: str) -> tuple[Any, bool]:
    """Ray, connected to the cluster at `address` as a driver (this process's models' settings
    passed on to its workers), and whether this call connected it (a caller already connected,
    as a test is, keeps its connection). No cluster there: one line, no traceback."""
    ray = _ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        return ray, False
    _reachable(address)
    env = {k: os.environ[k] for k in ENV if k in os.environ}
    try:
        ray.init(
            address=address,
            logging_level="ERROR",
            log_to_driver=False,
            runtime_env={"env_vars": env} if env else None,
        )
    except Exception as e:  # ConnectionError, a timeout, a bad address: one line
        first = (str(e).strip().splitlines() or [e.__class__.__name__])[0]
        raise PerspectError(
            f"no Ray cluster at {address!r}: {first}",
            hint="start one (ray start --head) or pass its address: --ray HOST:6379",
        ) from None
    return ray, True


def _reachable(address: str, timeout: float = 3.0) -> None:
    """A HOST:PORT address that nothing answers on is refused at once (Ray itself retries for
    minutes); "auto" and ray:// addresses are left to Ray."""
    import socket

    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as e:
        raise PerspectError(
            f"no Ray cluster at {address!r}: {e.__class__.__name__}: {e}",
            hint="start one (ray start --head) or pass its address: --ray HOST:6379",
        ) from None


_LOADED: dict[tuple[str, str], Any] = {}  # a worker process's encoders, kept between its tasks


def _encode_batch(batch: dict, what: str, kwargs: dict) -> dict:
    """One batch through the encoder `what` (a class below, built with `kwargs`), loaded once in
    this worker process and kept: Ray runs a build's tasks in the same pooled processes, so the
    next batch, and the next pass with the same model (the dense encoder of every pool), reuse it
    instead of loading the model again each pass."""
    key = (what, json.dumps(kwargs, sort_keys=True, default=str))
    if key not in _LOADED:
        _LOADED[key] = {"_BackendEncoder": _BackendEncoder, "_TrunkLower": _TrunkLower}[what](
            **kwargs
        )
    return _LOADED[key](batch)


class _Actor:
    """One CPU's worth of torch threads, the model loaded once."""

    def __init__(self):
        import torch

        torch.set_num_threads(1)

    def __call__(self, batch: dict) -> dict:
        texts = [str(t) for t in batch["t"]]
        out = np.empty(len(texts), dtype=object)  # one array (or tuple of them) a text, as is
        for k, v in enumerate(self.run(texts)):
            out[k] = v if isinstance(v, tuple) else np.asarray(v)
        return {"i": batch["i"], "out": out}


class _BackendEncoder(_Actor):
    def __init__(self, kind: str, config: dict):
        super().__init__()
        import tempfile

        from perspect.retriever.registry import backend_class

        self.backend = backend_class(kind).create(Path(tempfile.mkdtemp()) / kind, config)

    def run(self, texts: list[str]) -> list:
        return list(self.backend.encode_documents(texts))


class _TrunkLower(_Actor):
    def __init__(self):
        super().__init__()
        from perspect.reranker import factory

        self.trunk = factory.load(["trunk"], factory.WRITER).trunk

    def run(self, texts: list[str]) -> list:
        from perspect.core.index.stance_states import quantize

        return [quantize(h) for h in self.trunk.lower(texts)]
