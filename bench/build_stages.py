"""Where an index's last write spent its time: the stages its manifest records, in order.

    python bench/build_stages.py [--index default] [--home indexes]

Every write (build, add, delete, rebuild) keeps the wall-clock start and length of each of its
stages in the version's manifest ("stages", written by perspect.core.progress.Timed). Stages on
the build's second thread (the stance states beside the other pools' encoders) overlap the
others, so the lengths add up to more than the write: the "busy" column says how many stages
were running during each one's span, on average.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def overlap(rows: list[dict], row: dict) -> float:
    """How many stages ran, on average, through `row`'s span (itself included)."""
    a, b = row["start_s"], row["start_s"] + row["seconds"]
    if b <= a:
        return 1.0
    total = sum(max(0.0, min(b, r["start_s"] + r["seconds"]) - max(a, r["start_s"])) for r in rows)
    return total / (b - a)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", type=Path, default=ROOT / "indexes")
    args = ap.parse_args(argv)
    folder = args.home / args.index
    try:
        live = (folder / "CURRENT").read_text().strip()
        manifest = json.loads((folder / "versions" / live / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        print(f"error: cannot read the live manifest of {folder}: {e}", file=sys.stderr)
        return 2
    rows = sorted(manifest.get("stages", []), key=lambda r: r["start_s"])
    if not rows:
        print(f"error: {live} records no stages (written before they were kept)", file=sys.stderr)
        return 2
    op = (manifest.get("operations") or [{"op": "build"}])[-1].get("op", "?")
    end = max(r["start_s"] + r["seconds"] for r in rows)
    print(f"{args.index} {live} ({op}): {end:.0f} s from its first stage to its last")
    print(f"{'start':>7} {'seconds':>8} {'share':>6} {'busy':>5}  stage")
    for r in rows:
        share = 100 * r["seconds"] / end if end else 0.0
        print(
            f"{r['start_s']:>7.1f} {r['seconds']:>8.1f} {share:>5.0f}% "
            f"{overlap(rows, r):>5.1f}  {r['stage']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
