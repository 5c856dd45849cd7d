"""Readers during writes: a writer process loops add/delete while readers search.

Every search must succeed (a reader pins the version it reads; a writer removes a replaced version
only once no reader holds it), and a long-lived handle must see each published write at its next
search. Bounded in time: PERSPECT_RACE_SECONDS (default 30).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

from perspect import Perspect
from perspect.core.index.layout import IndexDir

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from perspect.indexer.indexer import Indexer, Source
    home, extra, seconds = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    idx = Indexer("tiny", home=home)
    end, n = time.time() + seconds, 0
    while time.time() < end:
        idx.add([Source("perspectives", extra)])
        idx.delete("perspectives", ["w1", "w2"])
        n += 2
    print(n)
    """
)


def _number(version: str) -> int:
    return int(version.split("-")[0][1:])


def test_readers_never_fail_during_writes(built, tmp_path):
    seconds = float(os.environ.get("PERSPECT_RACE_SECONDS", "30"))
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        '{"id": "w1", "text": "Wind turbines kill migrating birds."}\n'
        '{"id": "w2", "text": "Tidal power is predictable."}\n'
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(built), str(extra), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    failures: list[str] = []
    searches = [0]
    lagged: list[str] = []
    stop = threading.Event()
    live = IndexDir(built, "tiny")

    def fresh_reader() -> None:
        while not stop.is_set():
            try:
                with Perspect.open("tiny", home=built) as p:
                    assert p.retrieve("school uniforms bullying").hits[0].id == "3"
                    p.retrieve("wind turbines birds", pool="evidence")
                searches[0] += 1
            except Exception as e:
                failures.append(f"fresh: {type(e).__name__}: {e}")

    def long_lived() -> None:
        p = Perspect.open("tiny", home=built)
        while not stop.is_set():
            try:
                published = live.current_name()
                hits = p.retrieve("wind turbines birds").hits
                used = p.manifest["version"]  # the version that search read (no refresh here)
                count = p.manifest["pools"]["perspectives"]["count"]
                if published and _number(used) < _number(published):
                    lagged.append(f"searched {used} after {published} was published")
                has_w1 = any(h.id == "w1" for h in hits)
                if has_w1 != (count == 8):
                    failures.append(f"long-lived: hits and counts disagree in {used}")
                searches[0] += 1
            except Exception as e:
                failures.append(f"long-lived: {type(e).__name__}: {e}")
        p.close()

    threads = [threading.Thread(target=fresh_reader) for _ in range(3)]
    threads.append(threading.Thread(target=long_lived))
    for t in threads:
        t.start()
    out, err = writer.communicate(timeout=seconds + 120)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert writer.returncode == 0, err
    writes = int(out.strip())
    assert writes >= 10, f"only {writes} writes in {seconds} s"
    assert searches[0] >= 50
    assert not failures, failures[:5]
    assert not lagged, lagged[:5]
    # with every reader gone, the next write leaves only the live version on disk
    Perspect.open("tiny", home=built).close()
    from perspect.indexer.indexer import Indexer

    Indexer("tiny", home=built).delete("perspectives", ["w1"])
    assert len(list((built / "tiny" / "versions").iterdir())) == 1
