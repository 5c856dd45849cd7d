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
