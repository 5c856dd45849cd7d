"""The benches' one harness (bench/harness.py): the turns a baseline and a candidate take, the
percentiles every cost table prints, the Markdown table, the claim sets and the command line."""

from __future__ import annotations

import json

import pytest

from bench import harness


def test_turns_alternate_and_warm_each_runner_first():
    calls: list[tuple[str, str]] = []
    runners = {name: (lambda c, n=name: calls.append((n, c)) or len(c)) for name in ("base", "new")}
    seen = []
    ms = harness.taking_turns(runners, ["a", "bb", "ccc"], seen=lambda *x: seen.append(x[:2]))
    # warm-up: each runner once on the first claim, untimed; then a, bb, ccc in turn, the order
    # reversed on every other claim so that neither always runs second on a busy machine
    assert calls == [("base", "a"), ("new", "a"), ("base", "a"), ("new", "a"),
                     ("new", "bb"), ("base", "bb"), ("base", "ccc"), ("new", "ccc")]  # fmt: skip
    assert {k: len(v) for k, v in ms.items()} == {"base": 3, "new": 3}
    assert seen[2] == ("new", "bb") and all(t >= 0 for v in ms.values() for t in v)


def test_turns_can_keep_the_first_runner_first():
    calls: list[str] = []
    runners = {name: (lambda c, n=name: calls.append(n)) for name in ("first", "after")}
    harness.taking_turns(runners, ["a", "b", "c"], warm=False, alternate=False)
    assert calls == ["first", "after"] * 3  # each claim's first search is the first row's


def test_percentiles_are_nearest_rank_and_the_table_puts_each_beside_the_first():
    xs = [float(x) for x in range(1, 21)]  # 1..20 ms
    t = harness.Timing.of(xs)
    assert (t.n, t.p50, t.p95, t.max) == (20, 11.0, 19.0, 20.0)  # a p95 of 20 runs is a run
    assert harness.Timing.of([]).n == 0
    text = harness.cost_table({"before": [10.0, 10.0], "after": [5.0, 5.0]})
    lines = text.splitlines()
    assert lines[0].startswith("|") and set(lines[1]) <= {"|", "-", " "}
    assert "1.00x" in lines[2] and "0.50x" in lines[3]


def test_json_is_written_with_dataclasses(tmp_path):
    out = tmp_path / "deep" / "cost.json"
    harness.write_json(out, {"engine": harness.Timing.of([1.0, 2.0, 3.0])})
    assert json.loads(out.read_text())["engine"]["p50"] == 2.0


def test_claim_sets():
    written = harness.claims("written")
    assert len(written) == 46 and len(set(written)) == 46
    assert harness.claims("written", 5) == written[:5]
    assert harness.claims("reader") == harness.ARGUMENT_CLAIMS
    with pytest.raises(SystemExit):
        harness.claims("nope")


def test_commands_spell_the_common_options_once(capsys):
    got = {}

    def run(a) -> int:
        """Measure something."""
        got.update(vars(a))
        return 3

    main = harness.commands("A bench.\n\nMore.", {"run": (run, ("index", "limit"), None)})
    assert main(["run", "--limit", "7"]) == 3
    assert got["index"] == "default" and got["limit"] == 7
    with pytest.raises(SystemExit) as e:
        main(["nope"])
    assert e.value.code == 2


READY_SERVER = r"""
import http.server, sys, time
time.sleep(0.5)  # a server still loading: refused connections first
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ready" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_wait_ready_waits_for_the_server_and_stops_on_one_that_exits(tmp_path):
    import subprocess
    import sys

    port = harness.free_port()
    proc = subprocess.Popen([sys.executable, "-c", READY_SERVER, str(port)])
    try:
        took = harness.wait_ready(f"http://127.0.0.1:{port}", proc, timeout=60)
        assert 0.3 < took < 60
    finally:
        proc.kill()
        proc.wait()
    log = tmp_path / "server.log"
    log.write_text("error: no index 'x'\n")
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])
    with pytest.raises(SystemExit, match=r"exited before it was ready.*no index 'x'"):
        harness.wait_ready(f"http://127.0.0.1:{harness.free_port()}", gone, timeout=60, log=log)
