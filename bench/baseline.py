"""Run another checkout's Perspect (the previous main, say) beside this one, in one bench run.

    python bench/baseline.py --make DIR [--commit main]   # export a commit's tree into DIR

A bench given `--baseline-tree DIR` starts a worker process that imports Perspect from DIR (this
environment's packages, that tree's code and model bundle) and answers requests line by line, so
the two take turns query by query on the same machine at the same moment: a shared machine's
noise falls on both alike. The tree gets this checkout's made ONNX graphs (hard links: same
weights, same graphs) and reads this checkout's cache, so it pays no export and no compile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Imports Perspect from the tree in argv[1]: the editable install's finder maps `perspect.*` to
# this checkout's folders; here it is pointed at the tree's instead, before anything is imported.
BOOT = r"""
import importlib, json, os, sys
tree = sys.argv[1]
sys.path = [p for p in sys.path if p not in ("", os.getcwd())]  # no checkout from the cwd
for name in list(sys.modules):
    if name.startswith("__editable___perspect"):
        m = sys.modules[name]
        here = os.path.dirname(m.MAPPING["perspect"])
        m.MAPPING.update({k: v.replace(here, tree, 1) for k, v in m.MAPPING.items()})
sys.argv = sys.argv[1:]
exec(compile(sys.argv[1], "<baseline worker>", "exec"))
"""

SEARCH_WORKER = r"""
import json, sys, time
from perspect import Perspect
index, home = sys.argv[2], (sys.argv[3] or None)
p = Perspect.open(index, home=home)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    claim = json.loads(line)
    t0 = time.perf_counter()
    r = p.search(claim)
    ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({"ms": ms, "clusters": len(r.clusters), "timings": dict(r.timings_ms)}), flush=True)
"""


def env(tree: Path) -> dict[str, str]:
    """The worker's environment: this checkout's caches (materialised bases, PLAID's kernels)."""
    return {**os.environ, "PERSPECT_CACHE": os.environ.get("PERSPECT_CACHE", str(ROOT / ".cache"))}


class Worker:
    """A process running `code` with Perspect imported from `tree`; `ask` sends one JSON value
    and returns its JSON answer."""

    def __init__(self, tree: Path, code: str, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(tree), code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
            env=env(tree),
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"the baseline worker in {tree} did not start")

    def ask(self, value) -> dict:
        self.proc.stdin.write(json.dumps(value) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(60)


def search_worker(tree: Path, index: str, home: str | None) -> Worker:
    """The tree's `Perspect.search`, on the same index (`home` absolute)."""
    return Worker(tree, SEARCH_WORKER, index, home or "")


def run(tree: Path, argv: list[str], **kw) -> subprocess.CompletedProcess:
    """The tree's `perspect` command line (`perspect.cli.run`), once."""
    code = "import sys; from perspect.cli import run; sys.argv = ['perspect', *sys.argv[2:]]; run()"
    return subprocess.run([sys.executable, "-c", BOOT, str(tree), code, *argv], env=env(tree), **kw)


def make(tree: Path, commit: str) -> None:
    """Export `commit`'s files into `tree` (no git metadata) and link this checkout's graphs."""
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for graphs in (ROOT / "models").glob("*/onnx"):
        dst = tree / "models" / graphs.parent.name / "onnx"
        if not dst.exists():
            subprocess.run(["cp", "-al", str(graphs), str(dst)], check=True)
    data = ROOT / "data"
    if data.exists() and not (tree / "data").exists():
        (tree / "data").symlink_to(data.resolve())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--make", required=True, help="folder to export the tree into")
    ap.add_argument("--commit", default="main")
    args = ap.parse_args()
    make(Path(args.make), args.commit)
    print(f"{args.make}: {args.commit} exported, graphs linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
