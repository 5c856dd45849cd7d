"""What must exist before a full-screen UI takes over `sys.stdout` / `sys.stderr`.

Textual replaces both streams with stand-ins whose `fileno()` is -1. A library that starts a
helper process afterwards fails: tqdm's first bar creates its global lock, which creates a
multiprocessing lock, which starts multiprocessing's resource tracker with the "file descriptor"
of stderr, and that raises `ValueError: bad value(s) in fds_to_keep`. tqdm raises it while holding
its own class lock (`TqdmDefaultWriteLock.th_lock`), which then stays held by a finished thread:
every later bar, such as the one PyLate's PLAID index loader makes, waits on it forever. That was
the TUI's endless "retrieving perspectives …" (issue 31). Creating both here, in the main thread
with the real streams, makes those later calls find them ready.
"""

from __future__ import annotations

import contextlib
import os
from multiprocessing import resource_tracker


def before_full_screen() -> None:
    """Disable the libraries' progress bars, create tqdm's lock and start multiprocessing's
    resource tracker, while the process still has real standard streams."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with contextlib.suppress(Exception):  # no fork / no /dev/shm: nothing to prepare then
        resource_tracker.ensure_running()
    with contextlib.suppress(ImportError):
        import tqdm

        tqdm.tqdm.get_lock()
