"""The page's own costs, measured in a real browser (issue 63): its first paint, its weight (the
HTML, script and style it loads: nothing else is fetched) and how long the answer takes to draw
once the search's reply is there, over a few claims, beside the search itself.

    python bench/page.py [--index default] [--home indexes] [--claims N] [--screenshot PNG]

Starts `perspect serve` on a free port over the index, waits until it is ready, then drives
Debian's chromium headless through Playwright. Skips with a reason where chromium or the index is
missing. Figures: bench/RESULTS.md ("Other figures").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLAIMS = [
    "Animals should have lawful rights",
    "School uniforms should be compulsory",
    "Cities should ban cars from their centres",
    "Homework should be abolished in primary schools",
    "Nuclear power is the answer to climate change",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--claims", type=int, default=len(CLAIMS))
    ap.add_argument("--screenshot", type=Path, default=None, help="save the first answer here")
    a = ap.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("skipped: no chromium (apt-get install chromium)")
        return 0
    from perspect import api

    try:
        api.index_status(a.index, a.home)
    except Exception as e:  # an index that is not there: say so, as the CLI would
        print(f"skipped: {e}")
        return 0
    from playwright.sync_api import sync_playwright

    from perspect.serve.config import ServeConfig
    from tests.web_fixtures import free_port, perspect_server, wait_ready

    cfg = ServeConfig(index=a.index, home=a.home, port=free_port(), warm_fast=False)
    paints, draws, searches = [], [], []
    with perspect_server(cfg) as url, sync_playwright() as pw:
        wait_ready(url, timeout=600)
        b = pw.chromium.launch(executable_path=chromium,
                               args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                     "--disable-background-networking"])  # fmt: skip
        for claim in CLAIMS[: a.claims]:
            page = b.new_context().new_page()
            sizes: list[int] = []
            page.on(
                "response",
                lambda r, s=sizes: (
                    s.append(len(r.body()))
                    if r.url.startswith(url + "/page") or r.url == url + "/"
                    else None
                ),
            )
            page.goto(url + "/")
            page.wait_for_load_state("load")
            fp = page.evaluate(  # two frames on, the paint entries are there
                """() => new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(() =>
                  ok(Object.fromEntries(performance.getEntriesByType('paint')
                    .map(e => [e.name, e.startTime]))))))"""
            )
            paints.append(fp.get("first-contentful-paint") or fp.get("first-paint"))
            page.fill("#claim", claim)
            page.press("#claim", "Enter")
            page.wait_for_selector("#answer:not([hidden]) .cluster", timeout=120_000)
            if a.screenshot is not None and not draws:
                page.set_viewport_size({"width": 1280, "height": 900})
                page.screenshot(path=str(a.screenshot), full_page=False)
            t = page.evaluate("window.perspectTiming")
            draws.append(t["drawMs"])
            searches.append(t["reply"] - t["started"])
            weight = sum(sizes)
            page.context.close()
        b.close()
    print(f"page at {url}/ over index {a.index!r}, {len(draws)} claims, headless chromium")
    got = [x for x in paints if x is not None]
    print(f"first paint: median {statistics.median(got):.0f} ms, max {max(got):.0f} ms "
          f"({len(got)} of {len(paints)} loads reported one)")  # fmt: skip
    print(f"own weight: {weight / 1024:.1f} KB (HTML, script, style; nothing else fetched)")
    print(f"answer drawn after the reply: median {statistics.median(draws):.1f} ms, "
          f"max {max(draws):.1f} ms")  # fmt: skip
    print(f"search, as the page waits for it: median {statistics.median(searches) / 1000:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
