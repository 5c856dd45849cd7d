"""Searches on a Ray cluster (`perspect serve --ray ADDRESS`): the Ray Serve application.

Why: one process runs a search's first stage over every item of every pool and every model pass
of it on its own cores. On a cluster the first stage is split by item (perspect.retriever.shards)
and the model passes run on as many replicas as the load asks for:
- `Shard0` .. `Shard{n-1}`: one deployment a shard, each searching its items with BM25, dense and
  ColBERT (PLAID) and answering its top-k of each; merged by score and fused by the same RRF;
- `Pipeline`: the engine (relevance, sides, clusters, evidence, mining, their model passes),
  replicated with autoscaling; its searcher (`ShardedSearcher`) asks the shards. Its claims'
  query encodings (the dense and ColBERT query encoders: once a claim, sent to every shard) go
  through Ray Serve's request batching (its `batch` decorator: the claims a replica's concurrent
  searches ask for within a few milliseconds are encoded in one pass). A deployment of its own
  for them was measured first: 41 ms a claim through its handle against 10 ms encoded in place,
  twice a search (the perspectives', then the mined pools'), so it cost more than batching
  across replicas could give back on these nodes.
The HTTP front door is `perspect serve`'s own app (perspect.serve.on_ray calls `Pipeline` through
a handle), so routes, bodies, errors and the OpenAPI description are those of a local server.

Every node reads the index where the command that deploys it does (one machine here; a shared
filesystem on a cluster); writes (news and document adds, corrections) are the front door's, as
without a cluster, and a replica reads each search's newest version.

Ray is optional (`pip install 'perspect[ray]'`): imported only here and only when asked for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import Cancelled, PerspectError
from perspect.core.index.config import resolve_home
from perspect.indexer.ray_build import connect
from perspect.pipeline.engine import fast_config
from perspect.retriever.shards import Query, Shard, ShardedSearcher, encode_query

APP = "perspect"
WARM_CLAIM = "animals should have lawful rights"


@dataclass(frozen=True)
class ClusterConfig:
    """What runs where: `shards` shard deployments (default: one a node), the pipeline's
    replicas between `replicas` and `max_replicas` (default: one a node), each with
    `replica_cpus` CPUs (its torch threads), and the encoder's batches."""

    index: str
    home: str | None = None
    model: str | None = None
    shards: int | None = None
    replicas: int = 1
    max_replicas: int | None = None
    replica_cpus: float = 1.0
    shard_cpus: float = 0.25
    batch_size: int = 8
    batch_wait_s: float = 0.002
    concurrent_searches: int = 2  # a replica's searches at once (the rest wait at the router)


def _threads(cpus: float) -> None:
    """A replica's torch and BLAS threads: its CPUs, not the node's."""
    n = max(1, int(cpus))
    os.environ["OMP_NUM_THREADS"] = str(n)
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass


def _error(e: PerspectError) -> dict[str, Any]:
    """An error a reader can fix, as the front door re-raises it (`raise_error`)."""
    own = next(c for c in type(e).__mro__ if c.__module__ == PerspectError.__module__)
    return {"error": own.__name__, "message": e.message, "hint": e.hint}  # a RayTaskError(X): X


def raise_error(reply: dict[str, Any]) -> None:
    """Raise the error a replica answered with (`_error`), as its own class where it is one of
    perspect.core.errors (so the front door maps it to the same HTTP status)."""
    from perspect.core import errors

    cls = getattr(errors, reply["error"], PerspectError)
    if not (isinstance(cls, type) and issubclass(cls, PerspectError)):
        cls = PerspectError
    raise cls(reply["message"], hint=reply.get("hint"))


class ShardReplica:
    """One shard (retriever.shards.Shard) as a deployment."""

    def __init__(self, config: ClusterConfig, index: int, n: int):
        _threads(config.shard_cpus)
        self.shard = Shard(config.index, config.home, index, n)

    def search(self, pool: str, q: Query, depth: int, kinds) -> tuple[str, dict]:
        return self.shard.search(pool, q, depth, kinds)


class PipelineReplica:
    """The engine, over a searcher whose first stage is the shards'; searches answer JSON bodies
    (or an error a reader can fix, `_error`), a streamed search its stages first."""

    def __init__(self, config: ClusterConfig, *shards):
        _threads(config.replica_cpus)
        from ray import serve

        from perspect.api import Perspect

        self.config, self.shards = config, list(shards)
        self._handles: dict[bool, Perspect] = {}
        self._lock = threading.Lock()
        # one searcher for both engines (default, --fast): its query encoders loaded once
        self._searcher = ShardedSearcher(config.index, config.home, self._ask, self._encode)
        self._loop = asyncio.get_running_loop()  # Serve constructs a replica on its event loop
        self._batched = serve.batch(
            max_batch_size=config.batch_size, batch_wait_timeout_s=config.batch_wait_s
        )(self._encode_many)
        self._batching = False  # not while the constructor holds the loop (the warm search)
        self.batches: list[int] = []  # the sizes of the last batches (each answer says the largest)
        # the models loaded (and the first search's lazy opens done) before the replica says it is
        # ready; on a thread, since Serve constructs replicas on their event loop, where a handle's
        # blocking `result` (the shards', the encoder's) is refused
        warm = threading.Thread(target=lambda: self._perspect(False).search(WARM_CLAIM))
        warm.start()
        warm.join()
        self._batching = True

    def _ask(self, pool, q, depth, kinds) -> list[dict]:
        replies = [s.search.remote(pool, q, depth, kinds) for s in self.shards]
        return [r.result()[1] for r in replies]

    def _encode(self, pool: str, text: str) -> Query:
        """The claim's encodings, batched with the other searches' of this replica."""
        if not self._batching:
            return self._encode_now([(pool, text)])[0]
        return asyncio.run_coroutine_threadsafe(self._batched((pool, text)), self._loop).result()

    async def _encode_many(self, asks: list[tuple[str, str]]) -> list[Query]:
        self.batches = [*self.batches[-99:], len(asks)]
        return await asyncio.to_thread(self._encode_now, asks)

    def _encode_now(self, asks: list[tuple[str, str]]) -> list[Query]:
        out: list[Query | None] = [None] * len(asks)
        with self._searcher.pinned():
            for pool in dict.fromkeys(p for p, _ in asks):
                rows = [i for i, (p, _) in enumerate(asks) if p == pool]
                got = encode_query(self._searcher, pool, [asks[i][1] for i in rows])
                for i, q in zip(rows, got, strict=True):
                    out[i] = q
        return out  # type: ignore[return-value]

    def _perspect(self, fast: bool):
        from perspect.api import Perspect

        with self._lock:
            if fast not in self._handles:
                cfg = self.config
                self._handles[fast] = Perspect(
                    self._searcher, cfg.model, fast_config() if fast else None
                )
            return self._handles[fast]

    def search(self, claim: str, k, fast: bool, pool, retriever, budget_s: float) -> dict:
        """{"body": the answer's JSON, "version": the index version it read}, or an error."""
        cancel = _Deadline(budget_s)
        try:
            body, version = self._perspect(fast).answer(claim, k, pool, retriever, cancel)
            return {"body": body, "version": version, "batch": max(self.batches, default=0)}
        except Cancelled as e:
            return {"error": "Cancelled", "message": str(e.message), "hint": None, "late": True}
        except PerspectError as e:
            return _error(e)

    def search_stream(self, claim: str, k, fast: bool, budget_s: float) -> Iterator[dict]:
        """The search's stages as it reaches them ({"stage", "fraction"}), then its answer
        ({"body"}) or its error."""
        events: queue.Queue = queue.Queue()
        cancel = _Deadline(budget_s)

        def work() -> None:
            try:
                p = self._perspect(fast)
                res = p.search(claim, progress=lambda s, f: events.put({"stage": s, "fraction": f}),
                               cancel=cancel, k=k)  # fmt: skip
                events.put({"body": res.to_json(), "batch": max(self.batches, default=0)})
            except Cancelled as e:
                events.put({"error": "Cancelled", "message": e.message, "hint": None, "late": True})
            except PerspectError as e:
                events.put(_error(e))
            except BaseException as e:  # the front door retries what is the cluster's fault
                events.put({"crash": f"{type(e).__name__}: {e}"})

        threading.Thread(target=work, name="perspect-search", daemon=True).start()
        while True:
            event = events.get()
            yield event
            if "stage" not in event:
                return


class _Deadline(threading.Event):
    """A cancel event that fires once its budget has passed (checked at each stage)."""

    def __init__(self, budget_s: float):
        super().__init__()
        self.deadline = time.monotonic() + budget_s

    def is_set(self) -> bool:
        return super().is_set() or time.monotonic() > self.deadline


@dataclass(frozen=True)
class Deployed:
    """The running application: the pipeline's handle, the shards'."""

    pipeline: Any
    shards: tuple
    config: ClusterConfig
    seconds: float


def deploy(address: str, config: ClusterConfig, connected: bool = False) -> Deployed:
    """The application on the cluster at `address` (connected by `connect` first unless
    `connected`), once every replica is up: the pipeline's models loaded and warm."""
    if not connected:
        connect(address)
    import ray
    from ray import serve

    t0 = time.perf_counter()
    nodes = max(1, sum(1 for n in ray.nodes() if n.get("Alive")))
    home = str(Path(resolve_home(config.home)).resolve())
    model = str(Path(config.model).resolve()) if config.model else str(paths.pair_model().resolve())
    cfg = dataclasses.replace(config, home=home, model=model, shards=config.shards or nodes)
    serve.start(http_options={"location": "NoServer"}, logging_config={"log_level": "WARNING"})
    shards = [
        serve.deployment(ShardReplica, name=f"Shard{i}", num_replicas=1,
                         ray_actor_options={"num_cpus": cfg.shard_cpus}).bind(cfg, i, cfg.shards)
        for i in range(cfg.shards)
    ]  # fmt: skip
    most = max(cfg.replicas, cfg.max_replicas or nodes)
    pipeline = serve.deployment(
        PipelineReplica, name="Pipeline", max_ongoing_requests=cfg.concurrent_searches,
        autoscaling_config={"min_replicas": cfg.replicas, "max_replicas": most,
                            "target_ongoing_requests": cfg.concurrent_searches,
                            "upscale_delay_s": 5, "downscale_delay_s": 60},
        ray_actor_options={"num_cpus": cfg.replica_cpus},
        health_check_period_s=2, health_check_timeout_s=30, graceful_shutdown_timeout_s=5,
    ).bind(cfg, *shards)  # fmt: skip
    handle = serve.run(pipeline, name=APP, route_prefix=None)
    sh = tuple(serve.get_deployment_handle(f"Shard{i}", app_name=APP) for i in range(cfg.shards))
    return Deployed(handle, sh, cfg, round(time.perf_counter() - t0, 2))


def undeploy() -> None:
    """Take the application down (the cluster stays)."""
    from ray import serve

    serve.delete(APP)


def is_cluster_failure(e: BaseException) -> bool:
    """Whether `e` is the cluster's (a replica or node lost, a replica not reachable), which a
    search survives by being asked again, rather than the search's own."""
    try:
        from ray import exceptions as rx
        from ray.serve import exceptions as sx
    except ImportError:
        return False
    kinds = [rx.RayActorError, rx.ActorUnavailableError, rx.NodeDiedError, rx.ObjectLostError]
    kinds += [getattr(sx, n) for n in ("BackPressureError", "DeploymentUnavailableError")
              if hasattr(sx, n)]  # fmt: skip
    if isinstance(e, tuple(kinds)):
        return True
    cause = getattr(e, "cause", None)  # a RayTaskError around one
    return cause is not None and cause is not e and is_cluster_failure(cause)
