"""The pre-publish check search, run in a child process so that a crash cannot take the writer.

Before a new version is published, the writer makes it answer a search over each retriever of
the pools the write changed, opened from disk as a reader opens it (`Indexer._publish`). Those
searches run native code (tantivy, faiss, PLAID's kernels) over files just written; one that
segfaults or aborts in the writer's process killed the writer without a line, and its work was
lost. Here the searches run in a child (`python -m perspect.indexer.check_search`), which says
on its stdout which retriever it is about to search: a child that dies of a signal leaves the
writer one line naming that retriever, the new version is removed and the live one stays.

The child imports only the store and the retrievers (no model of the search pipeline); its
start costs about 0.3 s plus what the retrievers load (the dense or ColBERT encoder).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perspect.core.errors import IndexDamaged, PerspectError
from perspect.core.index import integrity
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig
from perspect.core.index.store import ItemStore
from perspect.retriever.registry import backend_class


def _embedded(cfg: IndexConfig, pool: str) -> list[str]:
    kinds = cfg.for_pool(pool)
    return [k for k in kinds if cfg.backends.get(k, {}).get("engine", "embedded") == "embedded"]


def _rebuild_hint(name: str, kind: str) -> str:
    return f"rebuild it: perspect index rebuild --name {name} --retriever {kind}"


def search_each(
    name: str,
    version: Path,
    manifest: dict[str, Any],
    pools: Sequence[str],
    before: Callable[[str], None] = lambda _: None,
) -> None:
    """Open each embedded retriever of `pools` from disk and search it with the text of a stored
    item: every hit must be a stored item and each retriever must hold as many items as the
    store (IndexDamaged otherwise). `before("pool/kind")` runs before each one is opened."""
    cfg = IndexConfig.from_json(manifest["config"])
    for pool in pools:
        if pool not in manifest["pools"]:
            continue
        store = ItemStore(version / pool, readonly=True)
        try:
            n = store.count()
            probe = next(iter(store), None)
            for kind in _embedded(cfg, pool):
                before(f"{pool}/{kind}")
                opts = cfg.backends.get(kind, {})
                b = backend_class(kind, opts).open(version / pool / kind, opts)
                try:
                    held = b.count()
                    hits = b.search(probe.text, min(10, n)) if probe is not None else []
                except PerspectError:
                    raise
                except Exception as e:
                    raise IndexDamaged(
                        f"index {name!r}: the new version's {pool}/{kind} failed its "
                        f"check search ({type(e).__name__}: {e}); the live version is unchanged",
                        hint=_rebuild_hint(name, kind),
                    ) from None
                finally:
                    b.close()
                stray = {i for i, _ in hits} - store.existing([i for i, _ in hits])
                if held != n or stray:
                    raise IndexDamaged(
                        f"index {name!r}: the new version's {pool}/{kind} holds {held} "
                        f"items where the store holds {n}"
                        + (f" and answers unknown ids {sorted(stray)[:3]}" if stray else "")
                        + "; the live version is unchanged",
                        hint=_rebuild_hint(name, kind),
                    )
        finally:
            store.close()


def check_in_child(
    name: str, version: Path, manifest: dict[str, Any], pools: Sequence[str]
) -> None:
    """The writer's side: check the files of `pools` against their checksums here (the seal
    just hashed them), then run `search_each` in a child process. Its error comes back as the
    same IndexDamaged; a child killed by a signal (or ending without an answer) is one
    IndexDamaged naming the retriever it was searching."""
    pools = [p for p in pools if p in manifest["pools"]]
    for pool in pools:
        integrity.check(version, manifest, pool)
    cfg = IndexConfig.from_json(manifest["config"])
    if not any(_embedded(cfg, p) for p in pools):
        return  # nothing runs native code here (an Elasticsearch index checks its own)
    r = subprocess.run(
        [sys.executable, "-m", "perspect.indexer.check_search", name, str(version), *pools],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    said = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    last = next((m["checking"] for m in reversed(said) if "checking" in m), None)
    done = next((m for m in said if "ok" in m or "error" in m), None)
    if done is not None and r.returncode == 0:
        if "error" in done:
            raise IndexDamaged(done["error"], hint=done.get("hint"))
        return
    where = f"the new version's {last}" if last else "the new version's store"
    if r.returncode < 0:
        how = f"crashed ({_signal_name(-r.returncode)})"
    else:
        tail = [ln for ln in r.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        how = f"ended with exit code {r.returncode} ({tail[0].strip()[:200]})"
    raise IndexDamaged(
        f"index {name!r}: {where} {how} in its check search; the live version is unchanged",
        hint=_rebuild_hint(name, last.split("/")[1])
        if last
        else f"build it again from its sources: perspect index build --name {name} ...",
    )


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def main(argv: Sequence[str]) -> int:
    """The child: `NAME VERSION_DIR POOL...`; answers JSON lines on stdout, which nothing else
    writes to (anything a library prints goes to stderr)."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def say(msg: dict[str, Any]) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    name, version, pools = argv[0], Path(argv[1]), list(argv[2:])
    try:
        search_each(name, version, mf.load(version), pools, lambda k: say({"checking": k}))
    except PerspectError as e:
        say({"error": e.message, "hint": e.hint})
        return 0
    say({"ok": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
