"""Time `make demo` and `make test` as a newcomer meets them: a fresh clone, an empty pip cache,
no compiled kernels, no index, caches under a throwaway HOME; stage by stage.

Each `make` prints one line per step ("setup: ...", "demo: ..."); this script stamps every line
as it arrives and reports the time from one step's line to the next, then the whole.

    python bench/newcomer.py [demo] [test] [--repo .] [--keep DIR]

The clone is of the repository's HEAD (committed work only). The data folder `../shared/data`
is reached from the clone through a link beside it, as from a checkout. Figures:
bench/RESULTS.md ("`make demo` on a fresh clone", "`make test` on a fresh clone").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[int, list[tuple[float, str]]]:
    t0 = time.perf_counter()
    lines: list[tuple[float, str]] = []
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.perf_counter() - t0, line.rstrip()))
        print(f"[{lines[-1][0]:7.1f} s] {lines[-1][1]}", flush=True)
    return proc.wait(), [*lines, (time.perf_counter() - t0, "(end)")]


def stages(lines: list[tuple[float, str]]) -> list[tuple[str, float]]:
    """(step line, seconds until the next step line) for the lines make prints per step."""
    marks = [(t, s) for t, s in lines if s.split(":", 1)[0] in ("setup", "demo", "test")]
    marks.append(lines[-1])
    return [(s, marks[i + 1][0] - t) for i, (t, s) in enumerate(marks[:-1])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=["demo", "test"])
    ap.add_argument("--repo", type=Path, default=ROOT)
    ap.add_argument("--keep", type=Path, default=None, help="clone here and keep it")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="perspect-newcomer-"))
    shared = a.repo.resolve().parent / "shared"
    report = []
    for target in a.targets:
        base = work / target
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        if shared.is_dir():
            (base / "shared").symlink_to(shared)
        subprocess.run(["git", "clone", "-q", str(a.repo), str(base / "main")], check=True)
        home = base / "home"
        home.mkdir()
        env = {
            **os.environ,
            "HOME": str(home),
            "PIP_CACHE_DIR": str(base / "pip-cache"),
            "TORCH_EXTENSIONS_DIR": str(base / "torch-extensions"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
        for var in ("PERSPECT_HOME", "PERSPECT_MODELS", "PERSPECT_CACHE"):
            env.pop(var, None)
        pip_conf = Path.home() / ".config" / "pip"
        if pip_conf.is_dir():  # the machine's local package indexes, not a cache
            shutil.copytree(pip_conf, home / ".config" / "pip")
        rc, lines = timed(["make", target], base / "main", env)
        report.append((target, rc, lines))
        if a.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print()
    for target, rc, lines in report:
        print(f"make {target}: exit {rc}, {lines[-1][0] / 60:.1f} min")
        for s, sec in stages(lines):
            print(f"  {sec:7.1f} s  {s}")
    return max((rc for _, rc, _ in report), default=0)


if __name__ == "__main__":
    sys.exit(main())
