"""`perspect serve` as an HTTP server, against real clients: a body over the limit is a 413 with
its JSON error for urllib, http.client, requests, httpx and curl, sent fast or slowly; a wrong
method is a 405 with `Allow`; the OpenAPI description states the limits; and the first
`POST /compare` on a fresh server, while its models load, is answered (it was a 500: two threads
importing transformers for the first time at once)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import httpx
import pytest

from perspect.core.index.config import IndexConfig
from perspect.serve.config import ServeConfig
from tests.conftest import PERSPECTIVES, ROOT, write_json
from tests.test_news_search import _comparator
from tests.web_fixtures import (
    free_port,
    perspect_server,
    serve_process,
    wait_healthy,
    wait_ready,
)

pytestmark = pytest.mark.slow
CLAIM = "Animals feel pain and need legal protection"
ARTICLE_A = {
    "title": "Council backs shelters",
    "text": "The council approved funding. Adoptions rose.",
}
ARTICLE_B = {"title": "Shelters struggle", "text": "Shelters are underfunded. Adoptions fell."}


@pytest.fixture
def index_home(tmp_path):
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    Indexer("tiny", home=home, config=IndexConfig(("bm25",))).build(
        [Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))]
    )
    return home


def test_the_first_compare_while_the_models_load_is_answered(
    index_home, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    """A fresh `perspect serve` (its own process: nothing imported yet) loads the default and
    --fast engines in the background, exporting their ONNX graphs (torch and transformers), while
    the first POST /compare loads the comparator (transformers too)."""
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    for attempt in range(2):
        # a new graph cache each time: the loader exports, as on a fresh install
        monkeypatch.setenv("PERSPECT_ONNX_CACHE", str(tmp_path / f"onnx-{attempt}"))
        # a budget for the loads on a busy machine: the compare now waits for them (504 past it)
        with serve_process(index_home, tiny_pair_model, "--time-budget", "300") as (proc, url):
            wait_healthy(url, lambda proc=proc: proc.poll() is None, timeout=120)
            r = httpx.post(f"{url}/compare", json={"a": ARTICLE_A, "b": ARTICLE_B}, timeout=300)
            assert r.status_code == 200, (attempt, r.text)
            assert r.json()["schema"] == "perspect.compare/1"
            # and neither engine was lost to the race (it once left the default one unloaded)
            _until_ready(url, proc)
            engines = httpx.get(f"{url}/ready", timeout=30).json()["engines"]
            assert engines["default"]["loaded"] and engines["fast"]["error"] is None, engines
            got = httpx.post(f"{url}/search", json={"claim": CLAIM, "fast": True}, timeout=120)
            assert got.status_code == 200, got.text


@pytest.fixture
def limit_server(index_home, tiny_pair_model):
    """An in-process server with the default limits (1 MB bodies); no model is needed here."""
    cfg = ServeConfig(
        index="tiny",
        home=str(index_home),
        model=str(tiny_pair_model),
        port=free_port(),
        warm_fast=False,
        max_claim_chars=200,
        max_k=10,
    )
    with perspect_server(cfg) as url:
        yield url, cfg


def _refused(status: int, body: bytes) -> None:
    assert status == 413, (status, body[:200])
    err = json.loads(body)["error"]
    assert "over the limit of 1,000,000 bytes" in err and "\n" not in err


BIG = b'{"claim": "' + b"x" * 6_000_000 + b'"}'  # the 6 MB of the report


def test_a_body_over_the_limit_is_a_413_for_every_common_client(limit_server, tmp_path):
    import requests

    url, _ = limit_server
    json_type = {"Content-Type": "application/json"}
    # urllib (http.client): sends the whole body, then reads the answer
    try:
        urllib.request.urlopen(urllib.request.Request(f"{url}/search", BIG, json_type), timeout=60)
        raise AssertionError("accepted")
    except urllib.error.HTTPError as e:
        _refused(e.code, e.read())
    r = requests.post(f"{url}/search", data=BIG, headers=json_type, timeout=60)
    _refused(r.status_code, r.content)
    r = httpx.post(f"{url}/search", content=BIG, headers=json_type, timeout=60)
    _refused(r.status_code, r.content)
    # streamed without a length (chunked), over the limit part way through
    chunks = (BIG[i : i + 65536] for i in range(0, len(BIG), 65536))
    r = httpx.post(f"{url}/search", content=chunks, headers=json_type, timeout=60)
    _refused(r.status_code, r.content)
    # the server still answers on a new request
    assert httpx.get(f"{url}/health", timeout=10).status_code == 200
    if shutil.which("curl"):
        body = tmp_path / "big.json"
        body.write_bytes(BIG)
        for extra in ([], ["-H", "Expect:"]):  # asks first (100-continue), or sends it all
            out = tmp_path / "out.json"
            got = subprocess.run(
                ["curl", "-sS", "-o", str(out), "-w", "%{http_code}", "--data-binary",
                 f"@{body}", "-H", "Content-Type: application/json", *extra, f"{url}/search"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert got.returncode == 0, got.stderr
            _refused(int(got.stdout), out.read_bytes())


def _slow_post(url: str, body: bytes, piece: int, pause: float, chunked: bool) -> tuple[int, bytes]:
    """POST `body` over a raw socket `piece` bytes at a time, `pause` seconds apart; then read."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        head = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {len(body)}\r\n"
        s.sendall((head + "\r\n").encode())
        for i in range(0, len(body), piece):
            part = body[i : i + piece]
            s.sendall(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
            time.sleep(pause)
        if chunked:
            s.sendall(b"0\r\n\r\n")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, rest = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


def test_a_body_over_the_limit_is_a_413_at_any_client_speed(limit_server):
    url, _ = limit_server
    body = b'{"claim": "' + b"x" * 1_200_000 + b'"}'
    # fast, then a client trickling 1.2 MB over about 3 s: with a length, and chunked
    for piece, pause, chunked in ((1 << 20, 0.0, False), (40_000, 0.1, False), (40_000, 0.1, True)):
        status, rest = _slow_post(url, body, piece, pause, chunked)
        assert status == 413 and b"over the limit" in rest, (piece, chunked, status, rest[:200])


def test_a_wrong_method_is_a_405_with_allow(limit_server):
    url, _ = limit_server
    for method, path, allowed in (("PUT", "/search", "POST"), ("DELETE", "/health", "GET")):
        r = httpx.request(method, f"{url}{path}", timeout=10)
        assert r.status_code == 405 and allowed in r.headers["allow"], (r, r.headers)
        assert method in r.json()["error"] and allowed in r.json()["error"]


def test_the_description_states_every_limit_and_status(limit_server):
    url, cfg = limit_server
    spec = httpx.get(f"{url}/openapi.json", timeout=10).json()
    schemas = spec["components"]["schemas"]
    search = schemas["SearchRequest"]["properties"]
    assert search["claim"]["maxLength"] == cfg.max_claim_chars and search["claim"]["pattern"]
    k = next(x for x in search["k"]["anyOf"] if x.get("type") == "integer")
    assert (k["minimum"], k["maximum"]) == (1, cfg.max_k)
    assert search["pool"]["anyOf"][0]["enum"] == ["perspectives", "evidence", "news", "documents"]
    assert schemas["ArticleIn"]["properties"]["text"]["pattern"]
    news = schemas["NewsRequest"]["properties"]["articles"]
    assert (news["minItems"], news["maxItems"]) == (1, cfg.max_news_inputs)
    ops = {(m.upper(), p): op for p, item in spec["paths"].items() for m, op in item.items()}
    want = {
        ("POST", "/search"): {"200", "400", "404", "413", "422", "500", "503", "504"},
        ("POST", "/compare"): {"200", "400", "413", "422", "500", "503", "504"},
        ("POST", "/indexes/{name}/news"): {"200", "400", "404", "413", "422", "500", "503"},
        ("POST", "/indexes/{name}/documents"): {"200", "400", "404", "413", "422", "500", "503"},
        ("GET", "/indexes/{name}/context"): {"200", "400", "404", "413", "422", "500"},
    }
    for key, codes in want.items():
        assert set(ops[key]["responses"]) == codes, key
        for code in codes - {"200"}:
            ref = ops[key]["responses"][code]["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/ErrorBody"), (key, code)
    param = ops[("POST", "/indexes/{name}/news")]["parameters"][0]["schema"]
    assert param["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    # and the server answers as described: what the schema refuses is a 400 or 422, one line
    wait_ready(url, timeout=300)
    with httpx.Client(base_url=url, timeout=60) as c:
        for body, status in (
            ({"claim": ""}, 400),
            ({"claim": " \u00a0\u2003"}, 400),  # white space only, Unicode's too
            ({"claim": "x", "k": 11}, 400),
            ({"claim": "x", "k": 2.5}, 422),
            ({"claim": "x", "pool": "nope"}, 400),
            ({"claim": "x", "pool": "news"}, 404),  # the index has no news pool
            ({"claim": "x", "retriever": "dense"}, 404),  # nor a dense retriever
        ):
            r = c.post("/search", json=body)
            assert r.status_code == status and set(r.json()) == {"error"}, (body, r.text)
        r = c.post("/compare", json={"a": {"text": "12 34."}, "b": {"text": "Rain fell."}})
        assert r.status_code == 400 and "no sentences" in r.json()["error"], r.text
        r = c.post("/indexes/tiny%0A/news", json={"articles": ["http://127.0.0.1:1/"]})
        assert r.status_code == 400 and "bad index name" in r.json()["error"], r.text
        r = c.post("/indexes/tiny/news", json={"articles": []})
        assert r.status_code == 400 and "no articles" in r.json()["error"], r.text


def _until_ready(url: str, proc, timeout: float = 300) -> None:
    """/ready answers 200 (a loading server may be slow to answer at all on a busy machine)."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ready", timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("the server did not get ready")


def test_the_api_fuzzed_from_its_own_description(
    index_home, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    """schemathesis, every check on, against a real `perspect serve` (its own process) over a
    tiny index and tiny models: no 500, no hang, no status the description does not list,
    every error one line of JSON, nothing schemathesis finds (the summary of `python -m bench
    fuzz api`)."""
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    with serve_process(index_home, tiny_pair_model, "--time-budget", "60") as (proc, url):
        wait_healthy(url, lambda: proc.poll() is None, timeout=120)
        _until_ready(url, proc)
        r = subprocess.run(
            [sys.executable, "-m", "bench", "fuzz", "api", "--url", url,
             "--max-examples", "4", "--slow", "20", "--out", str(tmp_path / "fuzz"), "--json"],
            capture_output=True, text=True, timeout=900, cwd=ROOT,
        )  # fmt: skip
    assert r.stdout, r.stderr[-2000:]
    rep = json.loads(r.stdout)
    assert rep["requests"] >= 150, rep
    assert not rep["failures"] and not rep["broken"], (rep["failures"], rep["broken"][:10])
    seen = {code for codes in rep["statuses"].values() for code in codes}
    assert "500" not in seen and {"200", "400", "404", "405", "422"} <= seen, rep["statuses"]
    assert rep["ok"] and r.returncode == 0
