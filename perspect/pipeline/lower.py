"""The one way a search gets the trunk's lower-layer states of a text (a perspective, a cited
sentence, a mined document or news sentence): paid once, at first touch.

In order: the states the version stores for the item's id (an index built with
`--stance-states`, the documents' sentences), those this process made lately, those kept with the
index by text (perspect.core.index.kept_states), else the trunk's frozen lower layers now, then
kept. Every state a search reads goes through int8 storage first, so a text reads the same on the
search that made its states as on every later one.

Why first touch (issue 62): a `make demo` build spent a third of its CPU on the lower states of
all 11,112 perspectives, of which a reader's searches touch a few hundred; a first search computes
those of its kept candidates instead (a median of about 20, 0.4 s on two cores), and `fill`
computes the rest while a long-lived process (`perspect serve`, the TUI) is idle.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from perspect.core.index.kept_states import KeptStates
from perspect.core.index.stance_states import dequantize, quantize

log = logging.getLogger(__name__)

_FLIGHT = threading.Lock()
_IN_FLIGHT = [0]  # searches running in this process (every engine's): the idle fill waits

KEPT_IN_MEMORY = 5_000  # texts whose states this process keeps
FILL_BATCH = 8  # texts per idle pass: ~0.2 s on two cores, so a search waits at most that


class LowerStates:
    """`trunk`'s lower states of texts, for searches on `searcher`'s index (None: no index: kept
    in memory only)."""

    def __init__(self, trunk, searcher=None):
        self.trunk, self.searcher = trunk, searcher
        root = getattr(getattr(searcher, "dir", None), "root", None)
        self.kept = KeptStates(root)
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # texts this process ran the lower layers on (tests, benches)

    @property
    def key(self) -> str:
        return self.trunk.states_key

    def __call__(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        pool: str = "perspectives",
        keep: bool = True,
    ) -> list[np.ndarray]:
        """Each text's states; `ids`: the texts' item ids in `pool`, where the version may store
        theirs. `keep=False`: those computed here are neither kept with the index nor in memory
        (the idle fill's cited sentences: only their judgments are worth keeping)."""
        got: dict[str, np.ndarray] = {}
        if ids is not None:
            stored = self._stored(pool, [i for i in ids if i is not None])
            got = {t: stored[i] for t, i in zip(texts, ids, strict=True) if i in stored}
        with self._lock:
            for t in texts:
                if t not in got and t in self._memory:
                    got[t] = self._memory[t]
                    self._memory.move_to_end(t)
        todo = [t for t in dict.fromkeys(texts) if t not in got]
        if todo:
            kept = {t: dequantize(*v) for t, v in self.kept.get_many(self.key, todo).items()}
            got.update(kept)
            self._remember(kept)
            todo = [t for t in todo if t not in kept]
        if todo:
            got.update(self._compute(todo, remember=keep, keep=keep))
        return [got[t] for t in texts]

    def _compute(
        self, texts: list[str], remember: bool = True, keep: bool = True
    ) -> dict[str, np.ndarray]:
        rows = [(t, *quantize(h)) for t, h in zip(texts, self.trunk.lower(texts), strict=True)]
        self.computed += len(rows)
        kept = self.kept.put(self.key, rows) if keep else True
        made = {t: dequantize(q, sc) for t, q, sc in rows}
        if remember or not kept:
            self._remember(made)
        return made

    def _remember(self, made: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._memory.update(made)
            while len(self._memory) > KEPT_IN_MEMORY:
                self._memory.popitem(last=False)

    def _stored(self, pool: str, ids: list[str]) -> dict[str, np.ndarray]:
        if self.searcher is None or not ids or pool not in self.searcher.pools:
            return {}
        st = self.searcher.stance_states(pool)
        if st is None or st.key != self.key:
            return {}
        return {i: dequantize(*v) for i, v in st.get_many(ids).items()}

    def fill(
        self,
        texts: Sequence[str],
        busy: Callable[[], bool],
        cancel: threading.Event,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Compute and keep the states of those `texts` not kept yet, FILL_BATCH at a time, only
        while `busy()` is false (a search in flight waits for at most one batch) and until
        `cancel` is set. Returns how many it computed."""
        todo = self.kept.missing(self.key, list(dict.fromkeys(texts)))
        total = len(todo)

        def step(batch: list[str], done: int) -> None:
            self._compute(batch, remember=False)  # kept with the index, not in memory
            if progress is not None:
                progress(done, total)

        return while_idle(todo, FILL_BATCH, step, busy, cancel)


def while_idle(todo: list, batch: int, work: Callable[[list, int], None], busy, cancel) -> int:
    """`work(next batch, how many done with it)` over `todo`, `batch` items at a time, only while
    `busy()` is false (a search in flight waits for at most one batch) and until `cancel` is
    set: the idle fill's one loop. Returns how many items it worked on."""
    done = 0
    while todo and not cancel.is_set():
        if busy():
            cancel.wait(0.2)
            continue
        part, todo = todo[:batch], todo[batch:]
        done += len(part)
        work(part, done)
        time.sleep(0)  # let a search that just started take the GIL
    return done


class InFlight:
    """`with InFlight():` around a search: while any runs in this process, `fill` waits."""

    def __enter__(self) -> InFlight:
        with _FLIGHT:
            _IN_FLIGHT[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with _FLIGHT:
            _IN_FLIGHT[0] -= 1


def searching() -> bool:
    """Whether a search is running in this process."""
    return _IN_FLIGHT[0] > 0


def fill_perspectives(
    lower: LowerStates,
    cancel: threading.Event,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Keep the lower states of every perspective of `lower`'s index that has none yet (not
    stored by its version, not kept), while no search runs in this process: what a long-lived
    process does while idle, so that a claim's first search computes none. Returns how many."""
    searcher = lower.searcher
    if searcher is None or "perspectives" not in searcher.pools:
        return 0
    with searcher.pinned():
        store = searcher.store("perspectives")
        items = [(it.id, it.text) for it in store]
        st = searcher.stance_states("perspectives")
        if st is not None and st.key == lower.key:
            have = set(st.get_many([i for i, _ in items]))
            items = [(i, t) for i, t in items if i not in have]
    done = lower.fill([t for _, t in items], searching, cancel, progress)
    if done:
        log.info("kept the lower states of %d perspectives of %s", done, searcher.name)
    return done
