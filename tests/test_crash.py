"""kill -9 during a build or an add leaves the previous index fully searchable."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from perspect import Perspect
from perspect.indexer.indexer import Indexer, Source

from .conftest import perspect_cmd

WORDS = (
    "animal law tax school energy nuclear wind health vote court police rights free market "
    "climate speech privacy gun war peace trade union church state art sport food"
).split()


def _big_pool(path: Path, n: int) -> Path:
    rnd = random.Random(7)
    with open(path, "w") as f:
        for i in range(n):
            f.write(" ".join(rnd.choice(WORDS) for _ in range(12)) + f" item{i}\n")
    return path


def _kill_when_writing(cmd: list[str], versions: Path, delay: float) -> int:
    """Start `cmd`, wait until it has created its new version folder, wait `delay`, kill -9."""
    before = set(os.listdir(versions)) if versions.exists() else set()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if versions.exists() and set(os.listdir(versions)) - before:
            break
        time.sleep(0.005)
    time.sleep(delay)
    if proc.poll() is not None:
        pytest.fail("the writer finished before it could be killed; make the pool bigger")
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("op", ["build", "add"])
def test_kill_9_leaves_previous_index_searchable(tmp_path, pools, op, delay):
    home = tmp_path / "h"
    Indexer("live", home=home).build([Source("perspectives", pools["perspectives"])])
    before = Perspect.open("live", home=home)
    big = _big_pool(tmp_path / "big.txt", 150_000)
    cmd = [
        *perspect_cmd(),
        "index",
        op,
        "--name",
        "live",
        "--home",
        str(home),
        "-q",
        "--perspectives",
        str(big),
    ]
    rc = _kill_when_writing(cmd, home / "live" / "versions", delay)
    assert rc == -signal.SIGKILL
    after = Perspect.open("live", home=home)
    assert after.manifest["version"] == before.manifest["version"]
    assert after.pools == {"perspectives": 6}
    assert after.retrieve("school uniforms bullying").hits[0].id == "3"
    before.close()
    after.close()
    # the next writer cleans the orphan up (and the old version, which no reader holds now)
    small = tmp_path / "small.txt"
    small.write_text("tidal power is reliable\n")
    Indexer("live", home=home).add([Source("perspectives", small)])
    assert Perspect.open("live", home=home).pools == {"perspectives": 7}
    assert len(os.listdir(home / "live" / "versions")) == 1


@pytest.mark.slow
def test_kill_9_during_first_build_reports_interrupted(tmp_path):
    home = tmp_path / "h"
    big = _big_pool(tmp_path / "big.txt", 150_000)
    cmd = [
        *perspect_cmd(),
        "index",
        "build",
        "--name",
        "fresh",
        "--home",
        str(home),
        "-q",
        "--perspectives",
        str(big),
    ]
    _kill_when_writing(cmd, home / "fresh" / "versions", 0.3)
    r = subprocess.run(
        [*perspect_cmd(), "search", "law", "--index", "fresh", "--home", str(home)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "no completed build" in r.stderr and "Traceback" not in r.stderr
