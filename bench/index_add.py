"""`perspect index add` of news articles to a copy of the demo index: wall time of the command
and the bytes of new files its version wrote (what it does not share with the version before).

    python bench/index_add.py [--index default] [--home indexes] [--articles 10]
                              [--baseline-tree DIR] [--runs 2]

The articles are PolitiFact rulings from PolitiHop's validation split (`../shared/data/politihop`:
real articles, 20-60 sentences each), none of them in the demo index. Each run copies the index
afresh for each code (this checkout, and `--baseline-tree`'s: bench/baseline.py), and the two
take turns, so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import baseline  # noqa: E402


def articles(n: int, data: Path) -> list[dict]:
    csv.field_size_limit(1 << 30)
    out = []
    with open(data / "politihop_valid.tsv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            sents = json.loads(row["ruling"]) if row["ruling"].startswith("[") else []
            if len(sents) >= 20:
                out.append(
                    {
                        "id": f"politihop-{row['article_id']}",
                        "title": row["statement"][:120],
                        "outlet": "PolitiFact",
                        "text": "\n\n".join(
                            " ".join(sents[i : i + 4]) for i in range(0, len(sents), 4)
                        ),
                    }
                )
            if len(out) == n:
                break
    return out


def files(version: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (inode, size)."""
    out = {}
    for root, _dirs, names in os.walk(version):
        for name in names:
            p = Path(root) / name
            out[str(p.relative_to(version))] = (p.stat().st_ino, p.stat().st_size)
    return out


def live(home: Path, name: str) -> Path:
    v = (home / name / "CURRENT").read_text().strip()
    return home / name / "versions" / v


def one(cmd_of, home: Path, name: str, news: Path) -> tuple[float, int, int, float]:
    """(seconds, new bytes, shared bytes, CPU seconds of the command and its children) of one
    add. The CPU seconds depend less on what else the machine runs than the wall time."""
    before = {ino for ino, _ in files(live(home, name)).values()}
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = cmd_of(["index", "add", "--name", name, "--home", str(home), "--news", str(news), "-q"])
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    if r.returncode:
        raise SystemExit(f"index add failed: {r.stderr[-800:]}")
    after = files(live(home, name))
    new = sum(size for ino, size in after.values() if ino not in before)
    shared = sum(size for ino, size in after.values() if ino in before)
    return wall, new, shared, cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--articles", type=int, default=10)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "politihop"))
    ap.add_argument("--baseline-tree", default=None)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    src = Path(args.home) / args.index
    if not (src / "CURRENT").is_file():
        print(f"skip: no index {args.index} in {args.home}")
        return 0
    arts = articles(args.articles, Path(args.data))
    perspect = str(Path(sys.executable).with_name("perspect"))
    codes = {
        "this checkout": lambda argv: subprocess.run(
            [perspect, *argv], capture_output=True, text=True
        )
    }
    if args.baseline_tree:
        tree = Path(args.baseline_tree)
        codes[f"baseline {tree.name}"] = lambda argv: baseline.run(
            tree, argv, capture_output=True, text=True
        )
    got: dict[str, list[tuple[float, int, int, float]]] = {k: [] for k in codes}
    with tempfile.TemporaryDirectory(prefix="perspect-add-") as tmp:
        news = Path(tmp) / "news.jsonl"
        news.write_text("".join(json.dumps(a) + "\n" for a in arts))
        for run in range(args.runs):
            order = list(codes) if run % 2 == 0 else list(reversed(codes))
            for label in order:
                home = Path(tmp) / f"home-{run}-{len(got[label])}-{abs(hash(label))}"
                shutil.copytree(src, home / args.index, symlinks=True)
                got[label].append(one(codes[label], home, args.index, news))
                shutil.rmtree(home)
    sentences = sum(len(a["text"].split(". ")) for a in arts)
    print(
        f"# `perspect index add --news` of {len(arts)} articles (~{sentences} sentences) to a copy "
        f"of index {args.index}, {args.runs} runs each, taking turns\n"
    )
    print(
        "| code | wall s (median) | wall s (max) | CPU s (median) | new files MB | "
        "shared with the version before MB |"
    )
    print("|---|---|---|---|---|---|")
    for label, rows in got.items():
        walls = [w for w, _, _, _ in rows]
        print(
            f"| {label} | {statistics.median(walls):.1f} | {max(walls):.1f} | "
            f"{statistics.median([c for _, _, _, c in rows]):.1f} | "
            f"{statistics.median([n for _, n, _, _ in rows]) / 1e6:.1f} | "
            f"{statistics.median([s for _, _, s, _ in rows]) / 1e6:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
