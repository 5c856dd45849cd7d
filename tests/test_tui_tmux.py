"""The real `perspect tui` in tmux: type a claim, read the screen back with capture-pane."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _wait_for(session: str, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.3)
    raise AssertionError(f"{text!r} never appeared; last screen:\n{screen}")


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session)


@pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"
)
def test_real_tui_in_tmux(tiny_index, tiny_pair_model, tmp_path):
    exe = Path(sys.executable).parent / "perspect"
    # COLUMNS/LINES from the test runner would pin Textual to 80x24 whatever the pane size.
    cmd = (
        "env -u COLUMNS -u LINES "
        f"{exe if exe.exists() else sys.executable + ' -m perspect.cli'} tui --index tiny "
        f"--home {tiny_index} --model {tiny_pair_model}"
    )
    session = f"perspect-{uuid.uuid4().hex[:8]}"
    _tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "36", "-c", str(tmp_path), cmd)
    try:
        _tmux("resize-window", "-t", session, "-x", "120", "-y", "36")
        _wait_for(session, "index tiny")
        _tmux("send-keys", "-t", session, "-l", "Animals feel pain and need legal protection")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "Tab to a column")
        time.sleep(0.5)  # the columns repaint right after the status line
        screen = _screen(session)
        assert "Support (" in screen and "Oppose (" in screen
        assert "Animals feel pain and deserve legal" in screen  # the strongest cluster
        assert "1/1 evidence" in screen
        (tmp_path / "screen.txt").write_text(screen)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _gone(session: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.plaid
@pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"
)
def test_real_tui_on_a_plaid_index_answers_explains_and_quits(plaid_index, tmp_path):
    """`perspect tui` on BM25 + dense + ColBERT (PLAID) with the shipped models: the first search
    answers, F1 explains the screen, Ctrl+Q ends the process."""
    from perspect.api import prepare_models

    prepare_models()  # graphs and kernels, as `make demo` does (fast when already there)
    exe = Path(sys.executable).parent / "perspect"
    model = Path(__file__).resolve().parent.parent / "models" / "pair"
    cmd = (
        "env -u COLUMNS -u LINES "
        f"{exe if exe.exists() else sys.executable + ' -m perspect.cli'} tui --index plaid "
        f"--home {plaid_index} --model {model}"
    )
    session = f"perspect-{uuid.uuid4().hex[:8]}"
    _tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(tmp_path), cmd)
    try:
        _tmux("resize-window", "-t", session, "-x", "120", "-y", "40")
        _wait_for(session, "index plaid")
        _tmux("send-keys", "-t", session, "-l", "Zoos should be closed")
        _tmux("send-keys", "-t", session, "Enter")
        t0 = time.monotonic()
        _wait_for(session, "Tab to a column", timeout=90)
        took = time.monotonic() - t0
        time.sleep(0.5)
        screen = _screen(session)
        assert "Support (" in screen and "Oppose (" in screen, screen
        (tmp_path / "screen.txt").write_text(f"first search {took:.1f} s\n{screen}")
        _tmux("send-keys", "-t", session, "F1")
        _wait_for(session, "the search screen")
        assert "leans oppose" in _screen(session)
        _tmux("send-keys", "-t", session, "Escape")
        time.sleep(0.5)  # an Escape right before a key reads as Alt+key
        assert "the search screen" not in _screen(session)
        _tmux("send-keys", "-t", session, "C-q")
        assert _gone(session, 5), "Ctrl+Q did not end the process"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
