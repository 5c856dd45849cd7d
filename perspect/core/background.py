"""Work a process does on the side (warming an index's backends, loading models): each job is a
thread with a cancel event it checks between its steps, and every job of the process is listed
here, so that whoever ends the process can stop them all.

Why: a thread still inside torch, faiss or ONNX Runtime when the interpreter tore itself down let
those libraries' native destructors run under it: a damaged index printed its one error line and
then died with SIGABRT (`terminate called without an active exception`, exit 134, not 2), in 5 of
9 garbled searches. So a job's thread is not a daemon (a plain interpreter exit joins it, never
tears it down), a cancelled job ends at its next step, and the console script
(`perspect.cli.main.run`) stops them all within a bounded wait and then leaves with `os._exit`,
which runs no destructor at all, whatever one native call may still be doing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_LOCK = threading.Lock()
_JOBS: list[Job] = []


@dataclass(frozen=True, eq=False)
class Job:
    """One background job: its thread, and the event that asks it to stop at its next step."""

    name: str
    thread: threading.Thread
    cancel: threading.Event

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the job to stop and wait for it (at most `timeout` seconds); True once it ended."""
        self.cancel.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        return not self.thread.is_alive()


def start(name: str, work: Callable[[threading.Event], None]) -> Job:
    """Run `work(cancel)` on a thread of its own; `work` returns soon after `cancel` is set.
    Its exceptions are its own to handle: one that escapes is reported by `threading`."""

    def run() -> None:
        try:
            work(job.cancel)
        finally:
            with _LOCK:
                if job in _JOBS:
                    _JOBS.remove(job)

    job = Job(name, threading.Thread(target=run, name=name), threading.Event())
    with _LOCK:
        _JOBS.append(job)
    job.thread.start()
    return job


def running() -> list[Job]:
    with _LOCK:
        return [j for j in _JOBS if j.running]


def stop_all(timeout: float) -> list[Job]:
    """Cancel every job, wait for them within one deadline of `timeout` seconds, and return the
    ones still running then (each inside one step it cannot leave early)."""
    with _LOCK:
        jobs = list(_JOBS)
    for job in jobs:
        job.cancel.set()
    deadline = time.monotonic() + timeout
    for job in jobs:
        job.stop(max(0.0, deadline - time.monotonic()))
    return [j for j in jobs if j.running]


class Pending:
    """A value computed by a background job while the caller does something else: `result()`
    waits for it and returns it, or raises what the work raised (issue 42: a search looks up
    its news and evidence while its clusters form)."""

    def __init__(self, name: str, work: Callable[[], object]):
        self._value: object = None
        self._error: BaseException | None = None

        def run(cancel: threading.Event) -> None:
            try:
                self._value = work()
            except BaseException as e:  # handed to the caller of result()
                self._error = e

        self.job = start(name, run)

    def result(self):
        self.job.thread.join()
        if self._error is not None:
            raise self._error
        return self._value
