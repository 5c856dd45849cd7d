"""Progress a log can read (issue 62): where stderr is not a terminal, each stage prints a line
when it starts, about every 10 % (count, rate, time left) and when it ends, as it goes: not
rich's bars all at once at the end."""

from __future__ import annotations

import io
import os
import re
import subprocess
import time

from perspect.core.presentation.progress_bars import LineReporter, RichReporter
from tests.conftest import perspect_cmd


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_at_start_every_tenth_and_end():
    out, clock = io.StringIO(), Clock()
    rep = LineReporter(out, clock)
    with rep.stage("encoding perspectives", total=1000) as adv:
        for _ in range(100):
            clock.t += 0.5
            adv(10)
    lines = out.getvalue().splitlines()
    assert "encoding perspectives: started (1,000)" in lines[0]
    tenths = [ln for ln in lines if re.search(r": \d+ % ", ln)]
    assert [int(re.search(r": (\d+) % ", ln).group(1)) for ln in tenths] == list(range(10, 100, 10))
    assert "100/1,000, 20.0/s, 45 s left" in tenths[0]  # count, rate, time left
    assert "done, 1,000 in 50 s (20.0/s)" in lines[-1]
    assert len(lines) == 11


def test_a_stage_that_fails_says_so_and_a_quick_one_says_nothing():
    """A stage that fails after running a while says it stopped; one over within a second (a
    bad input found at once) prints nothing, so the command's error stays one line."""
    out, clock = io.StringIO(), Clock()
    try:
        with LineReporter(out, clock).stage("building", total=10) as adv:
            clock.t += 5
            adv(3)
            raise RuntimeError("disk full")
    except RuntimeError:
        pass
    assert "building: stopped after 5 s" in out.getvalue() and "done" not in out.getvalue()
    quick = io.StringIO()
    try:
        with LineReporter(quick).stage("reading documents", total=None):
            raise FileNotFoundError("nope")
    except FileNotFoundError:
        pass
    with LineReporter(quick).stage("committing", total=None):
        pass
    assert quick.getvalue() == ""


def test_rich_reporter_writes_lines_where_its_stream_is_no_terminal():
    out = io.StringIO()
    with RichReporter(stream=out) as rep, rep.stage("indexing", total=4) as adv:
        time.sleep(1.2)  # past the quiet second: it says it started, and that it ended
        adv(4)
    text = out.getvalue()
    assert "indexing: started (4)" in text and "indexing: done, 4" in text
    assert "\x1b[" not in text  # no terminal codes in a log


def test_a_real_build_prints_its_stages_to_a_pipe_as_it_goes(pools, home):
    """`perspect index build` with stderr to a pipe: the lines arrive while it runs (the first
    before the build has ended) and each stage that starts also ends."""
    cmd = [*perspect_cmd(), "index", "build", "--name", "logged", "--home", str(home),
           "--perspectives", str(pools["perspectives"]), "--evidence", str(pools["evidence"])]  # fmt: skip
    env = {**os.environ, "PERSPECT_PROGRESS_QUIET_S": "0"}  # this build is quicker than a second
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    first = p.stderr.readline()
    still_running = p.poll() is None
    rest = p.stderr.read()
    assert p.wait(timeout=300) == 0, rest
    lines = [first, *rest.splitlines()]
    starts = {m.group(1) for ln in lines if (m := re.search(r"\] (.+): started", ln))}
    ends = {m.group(1) for ln in lines if (m := re.search(r"\] (.+): done\b", ln))}
    assert starts and starts <= ends, lines
    assert still_running or "started" in first


def test_prepare_can_leave_the_kernels_to_the_build(tmp_path, monkeypatch):
    """`perspect models prepare --no-kernels` (make demo): a bundle with ColBERT prepares without
    compiling PLAID's kernels; the index build compiles them beside its encoders."""
    from perspect.reranker import factory
    from perspect.retriever import pylate_glue

    (tmp_path / "colbert").mkdir()
    called = []
    monkeypatch.setattr(pylate_glue, "build_kernels", lambda: called.append(1))
    assert factory.prepare(tmp_path, kernels=False) == []
    assert not called
