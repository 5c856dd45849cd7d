"""The process's one lock on model loads (why: below), shared by the search and compare handles."""

from __future__ import annotations

import threading

# Every model load of the process, one at a time. Why: two threads importing transformers for the
# first time at once fail ("ImportError: cannot import name 'AutoModel' from 'transformers'"): the
# first POST /compare on a fresh `perspect serve`, beside the loader of its engines, was a 500, or
# left the default engine unloaded. Reentrant: a load may start another (the engine, its models).
MODEL_LOADS = threading.RLock()
