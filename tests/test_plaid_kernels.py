"""PLAID's compiled kernels (retriever/plaid_kernels.py): a search never compiles and never waits
on a lock; a builder killed at any moment blocks neither searches nor the next build."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perspect.core.errors import ModelError
from perspect.retriever import plaid_kernels

from .conftest import ROOT, run_cli

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from perspect.retriever import plaid_kernels

    with plaid_kernels._exclusive(Path(sys.argv[1]), 5):
        print("locked", flush=True)
        time.sleep(600)
    """
)


def _hold(lock: Path) -> subprocess.Popen:
    """A process that holds the build lock until it is killed."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    return p


def test_configurations_never_share_a_folder(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    default = plaid_kernels.folder()
    monkeypatch.setenv("CXX", "clang++")
    assert plaid_kernels.folder() != default
    assert plaid_kernels.folder().parent == default.parent


def test_missing_kernels_are_one_clear_error_not_a_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(plaid_kernels, "_LOADED", None)
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="not compiled") as e:
        plaid_kernels.install()
    assert "perspect models prepare" in (e.value.hint or "")
    assert time.monotonic() - t0 < 5 and not any(tmp_path.iterdir())  # nothing was compiled


def test_waiting_for_a_live_builder_is_bounded_and_names_the_lock(tmp_path):
    lock = tmp_path / "plaid-x.lock"
    holder = _hold(lock)
    try:
        t0 = time.monotonic()
        with (
            pytest.raises(ModelError, match=str(lock).replace(".", r"\.")),
            plaid_kernels._exclusive(lock, timeout=0.5),
        ):
            pass
        assert time.monotonic() - t0 < 3
    finally:
        holder.kill()
        holder.wait()
    with plaid_kernels._exclusive(lock, timeout=1):  # killed: the lock ended with it
        pass


@pytest.mark.slow
@pytest.mark.plaid
def test_stale_locks_and_a_killed_lock_holder_do_not_block_a_search(
    plaid_index, tmp_path, monkeypatch
):
    """The kernels in a folder of their own, beside what killed processes leave: torch's `lock`
    files in the folders PyLate's own compile used (what hung every search before), and our
    build lock held by a live process, then by a killed one."""
    built = plaid_kernels.ensure()  # the plaid_index build compiled them already
    ext = tmp_path / "ext"
    shutil.copytree(built, ext / built.name)
    for name, _, _ in plaid_kernels.KERNELS:
        (ext / name).mkdir(parents=True)
        (ext / name / "lock").write_text("")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(ext))
    lock = ext / f"{built.name}.lock"
    search = (
        "search",
        "Zoos should be closed",
        "--index",
        "plaid",
        "--home",
        str(plaid_index),
        "--model",
        str(ROOT / "models" / "pair"),
        "--json",
    )
    holder = _hold(lock)
    try:
        r = run_cli(*search, timeout=120)  # a live builder: the search does not wait for it
        assert '"perspect.result/1"' in r.stdout
    finally:
        holder.kill()
        holder.wait()
    holder = _hold(lock)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    r = run_cli(*search, timeout=120)
    assert '"clusters": [' in r.stdout
    with plaid_kernels._exclusive(lock, timeout=1):  # and the next build takes the lock at once
        pass


@pytest.mark.slow
@pytest.mark.plaid
def test_a_builder_killed_mid_compile_blocks_nobody(tmp_path):
    """kill -9 the builder and its compiler half-way: its scratch folder (with torch's `lock`
    in it) is swept by the next builder, which compiles and publishes the kernel."""
    dest = tmp_path / "ext" / "plaid-test"
    cmd = [sys.executable, "-m", "perspect.retriever.plaid_kernels", str(dest), "300"]
    cmd.append("segmented_lookup_cpp")  # one kernel: ~30 s instead of ~2 min
    p = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(dest.parent.glob("plaid-test.tmp-*/segmented_lookup_cpp/build.ninja")):
        assert time.monotonic() < deadline and p.poll() is None, "the build never started"
        time.sleep(0.1)
    time.sleep(1.0)  # the compiler is running
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    left = list(dest.parent.glob("plaid-test.tmp-*"))
    assert left and not (dest / plaid_kernels.DONE).exists()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / plaid_kernels.DONE).is_file()
    assert (dest / f"segmented_lookup_cpp{plaid_kernels._suffix()}").is_file()
    assert not any(x.exists() for x in left)  # the dead builder's scratch folder was swept
