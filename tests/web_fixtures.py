"""Real local HTTP servers for the tests of `perspect serve` and `perspect news add`: a plain
http.server over a folder of pages and feeds the test writes, and uvicorn serving Perspect."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

PARAGRAPHS = {
    "animals": [
        "The city council voted on Tuesday to give animals in shelters new legal protections, "
        "after months of debate between advocates and farmers.",
        "Supporters said that animals feel pain and fear, and that the law should recognise it. "
        "Opponents argued that the rules would raise costs for small farms across the region.",
        "The law takes effect in June, and the council will review it after one year.",
    ],
    "nuclear": [
        "The energy ministry approved two new reactors on Monday, saying nuclear power is a "
        "clean source of energy that emits almost no carbon dioxide.",
        "Critics warned about the cost of the plants and the storage of their waste for "
        "thousands of years, and asked for more wind and solar power instead.",
        "Construction is planned to start next spring near the coast.",
    ],
    "uniforms": [
        "A school district in the north will require uniforms from September, after a survey "
        "found that most parents favour them.",
        "Teachers said uniforms reduce bullying over clothes, while some students said they "
        "stifle self-expression and asked for a vote of their own.",
        "The district will publish the rules and the prices of the uniforms next month.",
    ],
}


def article_html(title: str, outlet: str, date: str, paragraphs: list[str]) -> str:
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title} | {outlet}</title>"
        f'<meta property="og:site_name" content="{outlet}">'
        f'<meta property="og:title" content="{title}">'
        f'<meta name="date" content="{date}"></head><body>'
        "<nav>Home | World | Politics | Sport</nav>"
        f"<article><h1>{title}</h1>\n{body}</article>"
        f"<footer>Copyright {outlet}</footer></body></html>"
    )


def rss(title: str, items: list[tuple[str, str, str]]) -> str:
    """An RSS 2.0 feed; items are (title, link, RFC 822 date)."""
    entries = "".join(
        f"<item><title>{t}</title><link>{link}</link><pubDate>{d}</pubDate></item>"
        for t, link, d in items
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
        f"<title>{title}</title><link>http://example.org/</link>"
        f"<description>news</description>{entries}</channel></rss>"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextmanager
def static_server(folder: Path):
    """http.server over `folder` on a free port; yields its base URL (no trailing slash)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def write_site(folder: Path) -> dict[str, str]:
    """Three article pages, a feed of two of them (plus a dead link), a page too short to be an
    article and a JSON file; returns their paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    outlets = {"animals": "Daily Planet", "nuclear": "Energy Post", "uniforms": "School Times"}
    titles = {
        "animals": "Council votes on animal welfare law",
        "nuclear": "Two new reactors approved",
        "uniforms": "District requires school uniforms",
    }
    for i, (key, paras) in enumerate(PARAGRAPHS.items(), start=1):
        (folder / f"{key}.html").write_text(
            article_html(titles[key], outlets[key], f"2026-03-0{i}", paras), encoding="utf-8"
        )
    (folder / "short.html").write_text(
        article_html("Subscribe", "Daily Planet", "2026-03-09", ["Subscribe to read more."])
    )
    (folder / "data.json").write_text('{"not": "an article"}')
    return {
        "animals": "/animals.html",
        "nuclear": "/nuclear.html",
        "uniforms": "/uniforms.html",
        "short": "/short.html",
        "json": "/data.json",
        "missing": "/missing.html",
    }


def write_feed(folder: Path, base: str, name: str = "feed.xml") -> str:
    (folder / name).write_text(
        rss(
            "Planet Feed",
            [
                (
                    "Two new reactors approved",
                    f"{base}/nuclear.html",
                    "Mon, 02 Mar 2026 08:00:00 GMT",
                ),
                ("School uniforms", f"{base}/uniforms.html", "Tue, 03 Mar 2026 08:00:00 GMT"),
                ("Gone", f"{base}/gone.html", "Wed, 04 Mar 2026 08:00:00 GMT"),
            ],
        ),
        encoding="utf-8",
    )
    return f"/{name}"


@contextmanager
def perspect_server(config, app=None):
    """`perspect serve` in this process (`app`, else one made from `config`): uvicorn on a free
    port, in a thread; yields its URL once it answers /health."""
    import uvicorn

    from perspect.serve.app import create_app

    server = uvicorn.Server(
        uvicorn.Config(
            app or create_app(config), host="127.0.0.1", port=config.port, log_level="warning"
        )
    )
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{config.port}"
    wait_healthy(url, t.is_alive, timeout=30)
    try:
        yield url
    finally:
        server.should_exit = True
        t.join(timeout=15)


def wait_healthy(url: str, alive, timeout: float = 60) -> None:
    """Poll /health until it answers 200; fails once `alive()` is false or past `timeout`."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or not alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)


@contextmanager
def serve_process(home: Path, model: Path, *extra: str, index: str = "tiny"):
    """`perspect serve` as a user starts it, in its own process group on a free port; yields
    (process, URL) once it answers /health, and stops the group after."""
    import os
    import signal
    import subprocess

    from tests.conftest import perspect_cmd

    port = free_port()
    args = ["serve", "--index", index, "--home", str(home), "--port", str(port)]
    proc = subprocess.Popen(
        [*perspect_cmd(), *args, "--model", str(model), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        yield proc, url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def wait_ready(url: str, timeout: float = 120) -> dict:
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        r = httpx.get(f"{url}/ready", timeout=5)
        if r.status_code == 200:
            return r.json()
        if time.monotonic() > deadline:
            raise RuntimeError(f"not ready: {r.text}")
        time.sleep(0.1)
