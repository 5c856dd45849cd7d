"""The engines of one worker process: the index opened and the models loaded once, in the
background, so that the process answers /health at once and /ready when it can search.

A search that arrives while the models load waits for them (within its time budget) instead of
failing; searches run on a small thread pool, at most `concurrent_searches` at once (two cores
here: more at once only slows each), and one that runs past its budget is cancelled at its next
stage (the engine's cancel event) and answered 504.

A search can also run as a job (`start_job`, the page's way in): it answers at once with an id,
and the job says which stage the search is at until it ends (done, failed, cancelled); a reader
who cancels it stops it at its next stage. Jobs are few and short-lived: at most MAX_JOBS kept,
finished ones dropped after JOB_KEPT_S.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from perspect.api import MODEL_LOADS, Comparer, Perspect
from perspect.core import background
from perspect.core.errors import (
    Cancelled,
    IndexBusy,
    IndexNotFound,
    ModelError,
    NotInIndex,
    PerspectError,
)
from perspect.serve.config import ServeConfig

log = logging.getLogger("perspect.serve")
WARM_CLAIM = "animals should have lawful rights"
MAX_JOBS = 64  # search jobs kept at once (running or finished)
JOB_KEPT_S = 300.0  # a finished job's answer is kept this long for its page to read


class NotReady(PerspectError):
    """The models are still loading (or failed to): 503."""


class TimedOut(PerspectError):
    """The request ran past its time budget: 504."""


class Busy(NotReady):
    """Too many search jobs at once: 503."""


def status_of(exc: PerspectError) -> int:
    """The HTTP status of an error the user can fix: the one mapping every route and every
    search job answers with (perspect.serve.errors)."""
    if isinstance(exc, IndexNotFound | NotInIndex):
        return 404
    if isinstance(exc, IndexBusy | NotReady | ModelError):
        return 503
    if isinstance(exc, TimedOut | Cancelled):
        return 504
    return 400


@dataclass(frozen=True)
class Answer:
    """A search's JSON and the index version it read."""

    body: dict[str, Any]
    version: str


class _Budget(threading.Event):
    """A cancel event that also fires once the deadline passes, checked by the search itself at
    each stage: the event loop's timer cannot be relied on alone, since a search holding the GIL
    can finish before the loop gets to run it (a 1 ms budget was answered 200 after 5 ms)."""

    def __init__(self, deadline: float):
        super().__init__()
        self.deadline = deadline

    def is_set(self) -> bool:
        return super().is_set() or time.monotonic() > self.deadline


@dataclass
class Job:
    """One search run as a job: where it is, and how it ended."""

    id: str
    claim: str
    started: float
    state: str = "queued"  # queued, running, done, failed, cancelled
    stage: str | None = None
    fraction: float = 0.0
    result: dict[str, Any] | None = None
    error: str | None = None
    status: int | None = None  # the HTTP status its error would have had
    ended: float | None = None
    cancel: threading.Event | None = None
    cancelled: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "claim": self.claim, "state": self.state, "stage": self.stage,
               "fraction": round(self.fraction, 3)}  # fmt: skip
        if self.state == "done":
            out["result"] = self.result
        if self.error is not None:
            out["error"], out["status"] = self.error, self.status
        return out


class _Slot:
    """One engine (default or --fast), loaded by the background thread."""

    def __init__(self, name: str):
        self.name = name
        self.ready = threading.Event()
        self.handle: Perspect | None = None
        self.error: str | None = None
        self.seconds: float | None = None


class Engines:
    def __init__(self, config: ServeConfig):
        self.config = config
        self.slots = {"default": _Slot("default"), "fast": _Slot("fast")}
        self.comparer = Comparer()
        self._pool = ThreadPoolExecutor(config.concurrent_searches + 1, "perspect-search")
        self._limit: asyncio.Semaphore | None = None
        self._loads: list[background.Job] = []
        self.jobs: dict[str, Job] = {}
        self._tasks: set[asyncio.Task] = set()

    def start(self) -> None:
        """Load the engines on a background job (`perspect.core.background`): closing cancels
        it before its next engine, and the process's end stops it rather than tear it down."""
        self._limit = asyncio.Semaphore(self.config.concurrent_searches)
        self._loads.append(background.start("perspect-load", self._load_all))

    def _load_all(self, cancel: threading.Event) -> None:
        order = ["default", "fast"] if self.config.warm_fast else ["default"]
        for name in order:
            if cancel.is_set():
                return
            self._load(self.slots[name])

    def _load(self, slot: _Slot) -> None:
        if slot.ready.is_set():
            return
        t0 = time.perf_counter()
        try:
            cfg = self.config
            with MODEL_LOADS:  # the warm search too: what it opens lazily (api.MODEL_LOADS)
                p = Perspect.open(
                    cfg.index, home=cfg.home, model=cfg.model, fast=slot.name == "fast"
                )
                if p.has_models:
                    p.engine()
                    p.search(WARM_CLAIM)  # the first search opens what the engine opens lazily
            slot.handle = p
            if slot.name == "default" and cfg.idle_fill:  # one fill: the engines share its store
                job = p.fill_in_background()
                if job is not None:
                    self._loads.append(job)
        except Exception as e:  # reported by /ready and by each search
            slot.error = f"{type(e).__name__}: {e}"
            log.exception("loading the %s engine failed", slot.name)
        slot.seconds = round(time.perf_counter() - t0, 2)
        slot.ready.set()
        log.info("%s engine ready in %.1f s", slot.name, slot.seconds)

    def status(self) -> dict[str, Any]:
        return {
            name: {
                "loaded": s.ready.is_set() and s.error is None,
                "error": s.error,
                "seconds": s.seconds,
            }
            for name, s in self.slots.items()
        }

    @property
    def ready(self) -> bool:
        s = self.slots["default"]
        return s.ready.is_set() and s.error is None

    async def _handle(self, fast: bool, deadline: float) -> Perspect:
        slot = self.slots["fast" if fast else "default"]
        if not slot.ready.is_set():
            if fast and not self.config.warm_fast:
                self._loads.append(background.start("perspect-load", lambda _: self._load(slot)))
            left = deadline - time.monotonic()
            if left <= 0 or not await asyncio.to_thread(slot.ready.wait, left):
                raise TimedOut("the models are still loading; the time budget ran out")
        if slot.handle is None:
            raise NotReady(f"the {slot.name} engine failed to load: {slot.error}")
        return slot.handle

    async def run(self, fast: bool, work, deadline: float):
        """`work(handle, cancel)` on the search pool, within the deadline."""
        handle = await self._handle(fast, deadline)
        assert self._limit is not None
        try:
            await asyncio.wait_for(self._limit.acquire(), deadline - time.monotonic())
        except TimeoutError:
            raise TimedOut("the server is busy; the time budget ran out in the queue") from None
        cancel = _Budget(deadline)
        fut = asyncio.get_running_loop().run_in_executor(self._pool, work, handle, cancel)
        fut.add_done_callback(lambda _: self._limit.release())
        try:
            return await asyncio.wait_for(
                asyncio.shield(fut), max(0.0, deadline - time.monotonic())
            )
        except TimeoutError:
            cancel.set()  # the search stops at its next stage; its slot frees when it does
            raise TimedOut(
                f"the search ran past the {self.config.time_budget_s:g} s budget"
            ) from None

    async def search(self, claim: str, k: int | None, fast: bool, pool: str | None, retriever):
        deadline = time.monotonic() + self.config.time_budget_s

        def work(p: Perspect, cancel: threading.Event) -> Answer:
            return Answer(*p.answer(claim, k, pool, retriever, cancel))

        try:
            return await self.run(fast, work, deadline)
        except Cancelled:
            raise TimedOut(
                f"the search ran past the {self.config.time_budget_s:g} s budget"
            ) from None

    # -- searches as jobs (the page) ----------------------------------------------------------
    def start_job(self, claim: str, k: int | None, fast: bool) -> Job:
        """A search run in the background: its job at once, its answer in the job when done."""
        now = time.monotonic()
        for jid, j in list(self.jobs.items()):  # finished ones past their keep, oldest first
            if j.ended is not None and now - j.ended > JOB_KEPT_S:
                del self.jobs[jid]
        if sum(j.ended is None for j in self.jobs.values()) >= MAX_JOBS:
            raise Busy(f"{MAX_JOBS} searches are running already; try again in a moment")
        while len(self.jobs) >= MAX_JOBS:
            del self.jobs[next(jid for jid, j in self.jobs.items() if j.ended is not None)]
        job = Job(secrets.token_hex(8), claim, now)
        self.jobs[job.id] = job
        task = asyncio.get_running_loop().create_task(self._run_job(job, k, fast))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    async def _run_job(self, job: Job, k: int | None, fast: bool) -> None:
        deadline = time.monotonic() + self.config.time_budget_s

        def progress(stage: str, frac: float) -> None:
            job.stage, job.fraction = stage, frac

        def work(p: Perspect, cancel: threading.Event) -> dict[str, Any]:
            job.cancel, job.state = cancel, "running"
            if job.cancelled:
                cancel.set()
            return p.search(job.claim, progress=progress, cancel=cancel, k=k).to_json()

        try:
            job.result = await self.run(fast, work, deadline)
            job.state = "done"
        except Cancelled:
            job.state = "cancelled" if job.cancelled else "failed"
            if not job.cancelled:
                job.error, job.status = (
                    f"the search ran past the {self.config.time_budget_s:g} s budget",
                    504,
                )
        except PerspectError as e:  # the status the same error has on POST /search
            job.state, job.status = "failed", status_of(e)
            job.error = e.message + (f" ({e.hint})" if e.hint and job.status != 404 else "")
        except Exception as e:  # one line for the page; the traceback in the log
            log.exception("search job %s failed", job.id)
            job.state, job.error, job.status = "failed", f"{type(e).__name__}: {e}", 500
        finally:
            job.ended = time.monotonic()

    def cancel_job(self, job: Job) -> None:
        """Stop the job at its next stage (a finished one stays as it ended)."""
        if job.ended is None:
            job.cancelled = True
            if job.cancel is not None:
                job.cancel.set()

    async def compare(self, a: tuple[str, str], b: tuple[str, str]) -> dict[str, Any]:
        deadline = time.monotonic() + self.config.time_budget_s
        fut = asyncio.get_running_loop().run_in_executor(
            self._pool, lambda: self.comparer.compare(a, b).to_json()
        )
        try:
            return await asyncio.wait_for(asyncio.shield(fut), deadline - time.monotonic())
        except TimeoutError:
            raise TimedOut(
                f"the comparison ran past the {self.config.time_budget_s:g} s budget"
            ) from None

    def close(self) -> None:
        for job in self._loads:
            job.cancel.set()
        for job in self._loads:
            if job.name == "perspect-fill":  # it ends at its next batch (a fraction of a second)
                job.stop(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for s in self.slots.values():
            if s.handle is not None:
                s.handle.close()
