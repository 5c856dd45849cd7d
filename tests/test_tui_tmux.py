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
