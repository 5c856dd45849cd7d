"""What a newcomer waits for: `make demo` / `make test` on a fresh clone; the page in a browser.

    python -m bench newcomer demo [--repo .] [--keep DIR]
    python -m bench newcomer test [--repo .] [--keep DIR]
    python -m bench newcomer page [--index default] [--home indexes] [--claims N] [--screenshot PNG]

`demo` / `test`: `make demo` or `make test` as a newcomer meets it: a fresh clone of the
repository's HEAD (committed work only), an empty pip cache, no compiled kernels, no index, caches
under a throwaway HOME. Each `make` prints one line per step ("setup: ...", "demo: ..."); every
line is stamped as it arrives and the time from one step's line to the next is reported, then the
whole. The data folder `../shared/data` is reached from the clone through a link beside it, as
from a checkout. Figures: bench/RESULTS.md ("`make demo` on a fresh clone", "`make test` on a
fresh clone").

`page` (issue 63): the page's first paint, its weight (the HTML, script and style it loads:
nothing else is fetched) and how long the answer takes to draw once the search's reply is there,
over a few claims, beside the search itself. Starts `perspect serve` on a free port over the
index, waits until it is ready, then drives Debian's chromium headless through Playwright. Skips
with a reason where chromium or the index is missing. Figures: bench/RESULTS.md ("Other
figures").
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

# ---- demo / test: `make` on a fresh clone --------------------------------------------------------


def stamped(cmd: list[str], cwd: Path, env: dict) -> tuple[int, list[tuple[float, str]]]:
    """Run `cmd`, echoing each output line with the seconds since the start; (exit, lines)."""
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


def fresh_make(target: str, repo: Path, keep: Path | None) -> int:
    """`make TARGET` in a fresh clone of `repo` with empty caches; prints its stages."""
    work = keep or Path(tempfile.mkdtemp(prefix="perspect-newcomer-"))
    shared = repo.resolve().parent / "shared"
    base = work / target
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    if shared.is_dir():
        (base / "shared").symlink_to(shared)
    subprocess.run(["git", "clone", "-q", str(repo), str(base / "main")], check=True)
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
    rc, lines = stamped(["make", target], base / "main", env)
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmake {target}: exit {rc}, {lines[-1][0] / 60:.1f} min")
    for s, sec in stages(lines):
        print(f"  {sec:7.1f} s  {s}")
    return rc


def demo(args) -> int:
    """Minutes of `make demo` on a fresh clone with empty caches, stage by stage."""
    return fresh_make("demo", args.repo, args.keep)


def test(args) -> int:
    """Minutes of `make test` on a fresh clone with empty caches, stage by stage."""
    return fresh_make("test", args.repo, args.keep)


def _clone_args(p) -> None:
    p.add_argument("--repo", type=Path, default=harness.ROOT, help="the repository cloned")
    p.add_argument("--keep", type=Path, default=None, help="clone here and keep it")


# ---- page: the page's costs in headless chromium -------------------------------------------------

# the page bench's own claims (two are not in the harness's sets): its figures are over these
PAGE_CLAIMS = [
    "Animals should have lawful rights",
    "School uniforms should be compulsory",
    "Cities should ban cars from their centres",
    "Homework should be abolished in primary schools",
    "Nuclear power is the answer to climate change",
]

# two frames on, the paint entries are there
PAINTS = """() => new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(() =>
  ok(Object.fromEntries(performance.getEntriesByType('paint')
    .map(e => [e.name, e.startTime]))))))"""


def page(args) -> int:
    """The page's first paint, own weight and answer drawing time, in headless chromium."""
    chromium = shutil.which("chromium")
    if chromium is None:
        print("skipped: no chromium (apt-get install chromium)")
        return 0
    from perspect import api

    home = str(args.home) if args.home else None
    try:
        api.index_status(args.index, home)
    except Exception as e:  # an index that is not there: say so, as the CLI would
        print(f"skipped: {e}")
        return 0
    from playwright.sync_api import sync_playwright

    from perspect.serve.config import ServeConfig
    from tests.web_fixtures import free_port, perspect_server, wait_ready

    cfg = ServeConfig(index=args.index, home=home, port=free_port(), warm_fast=False)
    paints, draws, searches = [], [], []
    with perspect_server(cfg) as url, sync_playwright() as pw:
        wait_ready(url, timeout=600)
        b = pw.chromium.launch(executable_path=chromium,
                               args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                     "--disable-background-networking"])  # fmt: skip
        for claim in PAGE_CLAIMS[: args.claims]:
            tab = b.new_context().new_page()
            sizes: list[int] = []
            tab.on(
                "response",
                lambda r, s=sizes: (
                    s.append(len(r.body()))
                    if r.url.startswith(url + "/page") or r.url == url + "/"
                    else None
                ),
            )
            tab.goto(url + "/")
            tab.wait_for_load_state("load")
            fp = tab.evaluate(PAINTS)
            paints.append(fp.get("first-contentful-paint") or fp.get("first-paint"))
            tab.fill("#claim", claim)
            tab.press("#claim", "Enter")
            tab.wait_for_selector("#answer:not([hidden]) .cluster", timeout=120_000)
            if args.screenshot is not None and not draws:
                tab.set_viewport_size({"width": 1280, "height": 900})
                tab.screenshot(path=str(args.screenshot), full_page=False)
            t = tab.evaluate("window.perspectTiming")
            draws.append(t["drawMs"])
            searches.append(t["reply"] - t["started"])
            weight = sum(sizes)
            tab.context.close()
        b.close()
    print(f"page at {url}/ over index {args.index!r}, {len(draws)} claims, headless chromium")
    got = [x for x in paints if x is not None]
    print(f"first paint: median {statistics.median(got):.0f} ms, max {max(got):.0f} ms "
          f"({len(got)} of {len(paints)} loads reported one)")  # fmt: skip
    print(f"own weight: {weight / 1024:.1f} KB (HTML, script, style; nothing else fetched)")
    print(f"answer drawn after the reply: median {statistics.median(draws):.1f} ms, "
          f"max {max(draws):.1f} ms")  # fmt: skip
    print(f"search, as the page waits for it: median {statistics.median(searches) / 1000:.2f} s")
    return 0


def _page_args(p) -> None:
    p.add_argument("--claims", type=int, default=len(PAGE_CLAIMS), help="how many of its claims")
    p.add_argument("--screenshot", type=Path, default=None, help="save the first answer here")


def main(argv: list[str] | None = None) -> int:
    subs = {
        "demo": (demo, (), _clone_args),
        "test": (test, (), _clone_args),
        "page": (page, ("index", "home"), _page_args),
    }
    return harness.commands(__doc__, subs)(argv)


if __name__ == "__main__":
    raise SystemExit(main())
