"""Searches on a Ray cluster (`perspect serve --ray`, perspect.api.cluster + perspect.serve.on_ray)
on a 3-node cluster of local processes (loopback only, a small object store each, no dashboard,
no usage reporting), driven as a user drives it: `perspect serve --ray ADDRESS` in its own
process, over HTTP. Its answers are the embedded index's (each retriever's and the whole search's);
a pipeline replica killed while 8 clients search loses no search (each lost one is asked again),
and the surviving replica batches its searches' query encodings;
no cluster is one line and exit 2; the OpenAPI description is the local server's."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from perspect.api import Perspect
from perspect.core.model import bundle
from perspect.serve.config import ServeConfig
from tests.conftest import ROOT, perspect_cmd, run_cli
from tests.web_fixtures import free_port, wait_ready

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'perspect[ray]')")

MODELS = ROOT / "models"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bundle.is_bundle(MODELS / "pair"), reason="needs the shipped bundle"),
]
CLAIMS = ["zoos protect endangered species", "animal testing is needed for medical research"]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    node = {"num_cpus": 2, "object_store_memory": 150 * 2**20}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    for _ in range(2):
        c.add_node(**node)
    c.wait_for_nodes()
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def home(plaid_index, tmp_path_factory):
    """The PLAID index (BM25, dense, ColBERT on PLAID), copied: searches keep what they compute."""
    d = tmp_path_factory.mktemp("ray_serve") / "home"
    shutil.copytree(plaid_index, d)
    return d


@contextmanager
def served(home: Path, address: str, *extra: str):
    """`perspect serve --ray ADDRESS` as a user starts it; yields its URL once /ready says 200."""
    port = free_port()
    log = home.parent / f"serve-{port}.log"
    args = ["serve", "--index", "plaid", "--home", str(home), "--port", str(port),
            "--model", str(MODELS / "pair"), "--ray", address, "--shards", "3", *extra]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen([*perspect_cmd(), *args], stdout=out, stderr=out,
                                start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield url, proc, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server(home, cluster):
    with served(home, cluster.address, "--replicas", "2", "--time-budget", "120") as s:
        yield s


def test_its_answers_are_the_embedded_index(server, home):
    url, _, _ = server
    ready = wait_ready(url)
    assert ready["engines"]["cluster"]["shards"] == 3, ready
    with Perspect.open("plaid", home=home, model=MODELS / "pair") as p:
        for claim in CLAIMS:
            for kind in ("bm25", "dense", "colbert", "hybrid"):
                want = p.retrieve(claim, 20, "perspectives", kind)
                got = httpx.post(f"{url}/search", json={"claim": claim, "retriever": kind},
                                 timeout=120)  # fmt: skip
                assert got.status_code == 200, got.text
                assert [h["id"] for h in got.json()["hits"]] == [h.id for h in want.hits], kind
            want = p.search(claim)
            got = httpx.post(f"{url}/search", json={"claim": claim}, timeout=120)
            assert got.status_code == 200, got.text
            body = got.json()
            assert want.clusters and got.headers["X-Perspect-Index-Version"]
            assert [c["representative"]["id"] for c in body["clusters"]] == [
                c.representative.id for c in want.clusters
            ], claim
            assert [c["stance"] for c in body["clusters"]] == [c.stance for c in want.clusters]
    # a reader's errors are the local server's
    r = httpx.post(f"{url}/search", json={"claim": "zoos", "pool": "news"}, timeout=60)
    assert r.status_code == 404 and "news" in r.json()["error"], r.text  # raised on a replica
    r = httpx.post(f"{url}/search", json={"claim": "   "}, timeout=60)
    assert r.status_code == 400, r.text
    # a search as a job (the page's way in) reports its stages, then its answer
    job = httpx.post(f"{url}/searches", json={"claim": CLAIMS[0]}, timeout=30).json()
    stages, deadline = set(), time.monotonic() + 120
    while (j := httpx.get(f"{url}/searches/{job['id']}", timeout=30).json())["state"] in (
        "queued", "running",
    ):  # fmt: skip
        stages.add(j["stage"])
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert j["state"] == "done" and j["result"]["clusters"], j
    assert len(stages - {None}) >= 1, stages


def test_a_replica_killed_while_8_clients_search_loses_no_search(server):
    url, _, log = server
    answers, failures, stop = [], [], threading.Event()

    def client(n: int) -> None:
        with httpx.Client(timeout=120) as http:
            while not stop.is_set():
                claim = f"{CLAIMS[n % len(CLAIMS)]} ({n})"  # each client's own claims
                r = http.post(f"{url}/search", json={"claim": claim})
                (answers if r.status_code == 200 else failures).append((r.status_code, r.text))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    try:
        while len(answers) < 4 and not failures:
            time.sleep(0.1)
        before = len(answers)
        replicas = _processes("ray::ServeReplica:perspect:Pipeline")
        assert len(replicas) == 2, replicas
        os.kill(replicas[0], signal.SIGKILL)  # as a node's process lost, mid-search
        deadline = time.monotonic() + 120
        while len(answers) < before + 12 and not failures:
            assert time.monotonic() < deadline, (len(answers), log.read_text()[-3000:])
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=180)
    assert not failures, failures[:3]
    ready = httpx.get(f"{url}/ready", timeout=30).json()
    cluster_status = ready["engines"]["cluster"]
    assert cluster_status["retries"] >= 1, ready  # a search was lost, and asked again
    # the replicas batched their concurrent searches' query encodings (request batching)
    assert cluster_status["largest_batch"] > 1, ready


def _processes(title: str) -> list[int]:
    """The pids of the processes whose command line starts with `title` (Ray names its workers'
    processes after their actors). The test process itself never joins the cluster: a driver
    left connected is killed by Ray once a cluster it reached goes (another test's, say)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and (d / "cmdline").read_bytes().startswith(title.encode()):
                found.append(int(d.name))
        except OSError:
            continue
    return sorted(found)


def test_no_cluster_is_one_line_and_exit_2(home):
    r = run_cli("serve", "--index", "plaid", "--home", str(home), "--ray", "127.0.0.1:1",
                ok=False, timeout=120)  # fmt: skip
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(errors) == 1 and errors[0].startswith("error: no Ray cluster at '127.0.0.1:1'")


def test_without_ray_serve_ray_says_how_to_install_it(home):
    import sys

    code = ("import sys; sys.modules['ray'] = None; from perspect.cli.main import main; "
            "sys.exit(main(sys.argv[1:]))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code, "serve", "--index", "plaid", "--home",
                        str(home), "--ray", "auto"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and "pip install 'perspect[ray]'" in r.stderr, r.stderr[-2000:]


def test_the_http_api_is_the_local_servers():
    from perspect.serve.app import create_app

    local = create_app(ServeConfig()).openapi()
    on_ray = create_app(ServeConfig(ray="auto")).openapi()
    assert local == on_ray and "/search" in local["paths"]
