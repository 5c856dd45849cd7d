"""The engines of `perspect serve --ray ADDRESS`: the same front door, its searches run on a Ray
cluster (perspect.api.cluster: shards, a batched encoder and pipeline replicas).

Routes, bodies, errors and the OpenAPI description are the local server's (perspect.serve.app,
unchanged); only where a search runs differs. A search the cluster loses (its replica or node
killed, a replica not reachable yet) is asked again, on whichever replica the router picks,
until its time budget runs out: a reader sees an answer, or a 504 past the budget, never the
cluster's error. `/ready` says 200 once every replica is up, with the cluster's shape and how many
searches were asked again and the largest batch of query encodings a replica ran. Comparisons and writes run here, as without a cluster.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from perspect.api import cluster
from perspect.core import background
from perspect.core.errors import PerspectError
from perspect.serve.config import ServeConfig
from perspect.serve.engines import Answer, Engines, Job, NotReady, TimedOut, status_of

log = logging.getLogger("perspect.serve")
PAUSE_S = 0.25  # between a lost search and its next try
# A replica's searches at once, per search this machine's server runs at once: a search on the
# cluster waits on its shards and its batched encodings, and its replica's cores idle meanwhile
# unless others run. `python -m bench ray serve`, 1 node, 8 clients: 4.93 / 6.49 / 7.30 searches
# a second at 2 / 4 / 8 at once (the embedded server 7.97 at 2).
HOPS = 4


def connect(config: ServeConfig) -> None:
    """Connected to the cluster before the server starts (no cluster, or no Ray: one line,
    exit 2, nothing started)."""
    cluster.connect(config.ray or "auto")


class RayEngines(Engines):
    def __init__(self, config: ServeConfig):
        super().__init__(config)
        self.deployed: cluster.Deployed | None = None
        self.retries = 0  # searches asked again after the cluster lost them
        self.largest_batch = 0  # the most claims a replica encoded in one batch, as answers say

    def start(self) -> None:
        self._loads.append(background.start("perspect-deploy", self._deploy))

    def _deploy(self, cancel: threading.Event) -> None:
        slot = self.slots["default"]
        t0 = time.perf_counter()
        cfg = self.config
        try:
            self.deployed = cluster.deploy(
                cfg.ray or "auto",
                cluster.ClusterConfig(
                    cfg.index, cfg.home, cfg.model, shards=cfg.shards, replicas=cfg.replicas,
                    concurrent_searches=HOPS * cfg.concurrent_searches,
                ),
            )  # fmt: skip
        except Exception as e:  # reported by /ready and by each search
            slot.error = f"{type(e).__name__}: {e}"
            log.exception("deploying on the cluster failed")
        slot.seconds = round(time.perf_counter() - t0, 2)
        for s in self.slots.values():  # the replicas load the --fast engine on first use
            s.error, s.seconds = slot.error, slot.seconds
            s.ready.set()
        if self.deployed is not None:
            c = self.deployed.config
            log.info("on the cluster in %.1f s: %d shards, %d+ replicas", slot.seconds,
                     c.shards, c.replicas)  # fmt: skip

    def status(self) -> dict[str, Any]:
        out = super().status()
        c = self.deployed.config if self.deployed is not None else None
        out["cluster"] = {
            "address": self.config.ray,
            "shards": c.shards if c else None,
            "replicas": c.replicas if c else None,
            "retries": self.retries,
            "largest_batch": self.largest_batch,
        }
        return out

    async def _pipeline(self, deadline: float):
        slot = self.slots["default"]
        if not slot.ready.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or not await asyncio.to_thread(slot.ready.wait, left):
                raise TimedOut("the cluster's replicas are still starting; the time budget ran out")
        if self.deployed is None:
            raise NotReady(f"the search could not be deployed on the cluster: {slot.error}")
        return self.deployed.pipeline

    def _late(self) -> TimedOut:
        return TimedOut(f"the search ran past the {self.config.time_budget_s:g} s budget")

    async def _retried(self, deadline: float, attempt, lost=None):
        """`await attempt(left)`, asked again after each failure that is the cluster's (`lost()`
        first, if given), until it returns or the deadline passes (504). A cancelled wait
        cancels the request on the cluster too."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._late()
            try:
                return await asyncio.wait_for(attempt(left), left)
            except TimeoutError:
                raise self._late() from None
            except Exception as e:
                if not cluster.is_cluster_failure(e):
                    raise
                self.retries += 1
                log.warning("a search was lost on the cluster (%s); asking again", type(e).__name__)
                if lost is not None:
                    lost()
                await asyncio.sleep(PAUSE_S)

    async def search(self, claim: str, k: int | None, fast: bool, pool: str | None, retriever):
        deadline = time.monotonic() + self.config.time_budget_s
        pipeline = await self._pipeline(deadline)

        async def attempt(left: float) -> dict:
            request = pipeline.search.remote(claim, k, fast, pool, retriever, left)
            return await _cancelling(request, request)

        reply = await self._retried(deadline, attempt)
        if "error" in reply:
            if reply.get("late"):
                raise self._late()
            cluster.raise_error(reply)
        self.largest_batch = max(self.largest_batch, reply.get("batch", 0))
        return Answer(reply["body"], reply["version"])

    async def _run_job(self, job: Job, k: int | None, fast: bool) -> None:
        deadline = time.monotonic() + self.config.time_budget_s

        async def attempt(left: float) -> None:
            stream = pipeline.options(stream=True).search_stream.remote(job.claim, k, fast, left)
            await _cancelling(stream, self._follow(job, stream))

        def lost() -> None:  # the next try starts the search over
            job.stage, job.fraction = None, 0.0

        try:
            pipeline = await self._pipeline(deadline)
            job.state = "running"
            await self._retried(deadline, attempt, lost)
        except TimedOut as e:
            job.state, job.error, job.status = "failed", e.message, 504
        except Exception as e:  # a reader's error (the status POST /search gives it), or ours
            job.state = "failed"
            if isinstance(e, PerspectError):
                job.status, job.error = status_of(e), e.message
            else:
                log.exception("search job %s failed", job.id)
                job.status, job.error = 500, f"{type(e).__name__}: {e}"
        finally:
            if job.cancelled:
                job.state = "cancelled"
            job.ended = time.monotonic()

    async def _follow(self, job: Job, stream) -> None:
        """Read the stream into the job until its answer (or the reader cancels it)."""
        async for event in stream:
            if job.cancelled:
                stream.cancel()
                job.state = "cancelled"
                return
            if "stage" in event:
                job.stage, job.fraction = event["stage"], event["fraction"]
            elif "body" in event:
                job.result, job.state = event["body"], "done"
                self.largest_batch = max(self.largest_batch, event.get("batch", 0))
            elif "crash" in event:
                raise RuntimeError(event["crash"])
            elif event.get("late"):
                raise self._late()
            else:
                cluster.raise_error(event)

    def cancel_job(self, job: Job) -> None:
        if job.ended is None:
            job.cancelled = True

    def close(self) -> None:
        for job in self._loads:
            job.cancel.set()
        if self.deployed is not None:
            try:
                cluster.undeploy()
            except Exception:  # the cluster may be gone already
                log.warning("the application could not be taken down from the cluster")
        self._pool.shutdown(wait=False, cancel_futures=True)


async def _cancelling(request, waiting):
    """`await waiting`, and `request` cancelled on the cluster when this wait is (its deadline)."""
    try:
        return await waiting
    except asyncio.CancelledError:
        request.cancel()
        raise
