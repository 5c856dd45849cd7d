"""Shared fixtures: tiny pools written by the tests, and the shared PERSPECTRUM data when present."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A test process that leaves a Ray cluster never rejoins one on its own: with auto-connect, a Ray
# call after its shutdown would join the newest cluster on the machine (another test file's, on the
# other xdist worker), and Ray ends a driver whose cluster goes away. Read when ray is imported.
os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PERSPECT_SHARED_DATA", ROOT.parent / "shared" / "data"))
PERSPECTRUM = SHARED / "perspectrum"

PERSPECTIVES = [
    {"pId": 1, "text": "Animals feel pain and deserve legal protection.", "source": "test"},
    {"pId": 2, "text": "Zoos keep endangered species alive.", "source": "test"},
    {"pId": 3, "text": "School uniforms reduce bullying.", "source": "test"},
    {"pId": 4, "text": "Nuclear power is a clean source of energy.", "source": "test"},
    {"pId": 5, "text": "Uniforms stifle the self-expression of students.", "source": "test"},
    {"pId": 6, "text": "Eating meat is natural for humans.", "source": "test"},
]
EVIDENCE = [
    {
        "eId": 10,
        "text": "Studies show that mammals have nociceptors and experience pain much "
        "like humans do, which is why many countries protect them by law.",
        "source": "test",
    },
    {
        "eId": 11,
        "text": "Reactors emit almost no carbon dioxide while generating electricity.",
        "source": "test",
    },
]
NEWS = [
    {
        "id": "a1",
        "title": "Parliament debates animal law",
        "source": "Daily Planet",
        "date": "2026-01-02",
        "url": "https://example.org/a1",
        "text": "Parliament debated animal rights on Monday. Dr. Smith said pets feel pain.\n\n"
        "The vote is expected in March.",
    },
    {
        "id": "a2",
        "title": "Energy",
        "outlet": "The Sun",
        "date": "2026-02-03",
        "text": "Nuclear plants produce little carbon. Critics disagree.",
    },
]


# two short articles on one council vote: the vote agrees, its outcome is disputed, and each has a
# sentence the other does not address (compare's tests, with each reader of inference)
COUNCIL_ARTICLES = (
    "The council voted on the new parking rules on Monday. The plan passed by seven votes to two. "
    "The market will move to Station Square.",
    "On Monday the council voted on the parking rules. The plan was rejected by six votes to "
    "three. A new species of frog was found in Peru.",
)


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def restamp_bundle(folder: Path) -> None:
    """Re-write a bundle entry's checksums after a deliberate edit (a well-formed bundle)."""
    from perspect.core.model.bundle import MANIFEST, sha256_file

    m = json.loads((folder / MANIFEST).read_text())
    m["files"] = {rel: sha256_file(folder / rel) for rel in m["files"]}
    (folder / MANIFEST).write_text(json.dumps(m))


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_default_colbert(monkeypatch, tmp_path_factory):
    """Tests choose their models: ones trained in the checkout (models/) must not leak in."""
    for var in ("PERSPECT_COLBERT_MODEL", "PERSPECT_MODEL"):
        if var not in os.environ:
            monkeypatch.setenv(var, str(tmp_path_factory.getbasetemp() / "no-model"))
    # the packaged MiniLM, not the shipped bundle's dense model (tests/test_shipped_bundle.py
    # is where the bundle is tested)
    if "PERSPECT_DENSE_MODEL" not in os.environ:
        monkeypatch.setenv("PERSPECT_DENSE_MODEL", "all-MiniLM-L6-v2")
    # Models the tests make are materialized into a per-session cache; ONNX graphs of the
    # packaged encoders and PLAID's compiled kernels stay in the checkout's cache (slow to make).
    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PERSPECT_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    if "PERSPECT_ONNX_CACHE" not in os.environ:
        monkeypatch.setenv("PERSPECT_ONNX_CACHE", str(root / ".cache" / "onnx"))
    if "TORCH_EXTENSIONS_DIR" not in os.environ:
        monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root / ".cache" / "torch_extensions"))
    # Default builds in tests are BM25-only (loading the dense encoder in every CLI subprocess
    # cost minutes of CI); tests of the dense retriever and of the real default say so.
    monkeypatch.setenv("PERSPECT_RETRIEVERS", "bm25")


@pytest.fixture
def pools(tmp_path: Path) -> dict[str, Path]:
    return {
        "perspectives": write_json(tmp_path / "perspective_pool_v1.0.json", PERSPECTIVES),
        "evidence": write_json(tmp_path / "evidence_pool_v1.0.json", EVIDENCE),
        "news": write_jsonl(tmp_path / "news.jsonl", NEWS),
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def built(pools, home):
    from perspect.indexer.indexer import Indexer, Source

    Indexer("tiny", home=home).build([Source(pool, path) for pool, path in pools.items()])
    return home


@pytest.fixture
def perspectrum_dir() -> Path:
    if not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file():
        pytest.skip(f"shared PERSPECTRUM data not found at {PERSPECTRUM}")
    return PERSPECTRUM


def perspect_cmd() -> list[str]:
    return [sys.executable, "-m", "perspect.cli"]


def run_cli(*args: str, ok: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """`perspect ARGS` in a new process; with `ok`, it must succeed."""
    r = subprocess.run([*perspect_cmd(), *args], capture_output=True, text=True, timeout=timeout)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """A 2-layer, 32-wide random BERT with the packaged MiniLM tokenizer: seconds to train."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from perspect.reranker.model import resolve_base

    folder = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(resolve_base(None))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_pair_model(tiny_base, tmp_path_factory):
    """An untrained tiny pair model whose thresholds keep every candidate: deterministic output
    for engine and UI tests (what the UI shows is what matters there, not model quality)."""
    import torch

    from perspect.reranker.model import PairModel

    torch.manual_seed(0)  # the heads are random: same weights whatever ran before (snapshots)
    model = PairModel.from_base(tiny_base)
    model.manifest["thresholds"] = {
        "relevance": 0.0,
        "stance": 0.5,
        "equivalence": 0.0,
        "evidence": 0.0,
    }
    out = tmp_path_factory.mktemp("tiny-pair") / "model"
    model.save(out)
    return out


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory):
    """The hand-made pools indexed once (BM25), shared read-only by UI and engine tests."""
    from perspect.core.index.config import IndexConfig
    from perspect.indexer.indexer import Indexer, Source

    d = tmp_path_factory.mktemp("tiny-index")
    srcs = [
        Source("perspectives", write_json(d / "p.json", PERSPECTIVES)),
        Source("evidence", write_json(d / "e.json", EVIDENCE)),
    ]
    Indexer("tiny", home=d / "home", config=IndexConfig(("bm25",))).build(srcs)
    return d / "home"


@pytest.fixture(scope="session")
def tiny_colbert(tiny_base, tmp_path_factory):
    """The tiny random BERT plus a 16-d projection, saved once and reused (as the product does)."""
    from pylate import models

    model = models.ColBERT(
        model_name_or_path=tiny_base,
        device="cpu",
        embedding_size=16,
        query_length=16,
        document_length=32,
    )
    out = tmp_path_factory.mktemp("tiny-colbert") / "model"
    model.save(str(out))
    return out


# A tiny hand-made PERSPECTRUM-format folder: five claims, two clusters each, one paragraph each.
TOPICS = [
    # (claim, [(stance, [paraphrases], evidence paragraph)])
    (
        "Animals should have legal rights.",
        [
            (
                "SUPPORT",
                ["Animals feel pain like humans do.", "Animals can suffer just as people can."],
                "Mammals have pain receptors and suffer much like humans.",
            ),
            (
                "UNDERMINE",
                ["Rights come with duties animals cannot carry.", "Animals cannot bear duties."],
                "Legal rights are tied to obligations, which animals cannot understand.",
            ),
        ],
    ),
    (
        "School uniforms should be mandatory.",
        [
            (
                "SUPPORT",
                ["Uniforms reduce bullying over clothes.", "Uniforms stop teasing about outfits."],
                "Schools with uniforms report fewer incidents of clothing-related bullying.",
            ),
            (
                "UNDERMINE",
                ["Uniforms stifle self-expression.", "Uniforms suppress individuality."],
                "Students value choosing their own clothes as a form of personal expression.",
            ),
        ],
    ),
    (
        "Nuclear power should be expanded.",
        [
            (
                "SUPPORT",
                ["Nuclear power emits little carbon.", "Reactors produce almost no CO2."],
                "Over their life cycle reactors emit about as little carbon as wind turbines.",
            ),
            (
                "UNDERMINE",
                ["Nuclear waste stays dangerous for millennia.", "Radioactive waste lasts ages."],
                "Spent fuel remains radioactive for thousands of years and needs storage.",
            ),
        ],
    ),
    (
        "Homework should be banned.",
        [
            (
                "SUPPORT",
                ["Homework causes stress in children.", "Homework makes kids anxious."],
                "Surveys link heavy homework loads with anxiety and poor sleep in pupils.",
            ),
            (
                "UNDERMINE",
                ["Homework reinforces what was learned.", "Practice at home consolidates lessons."],
                "Spaced practice at home improves retention of classroom material.",
            ),
        ],
    ),
    (
        "Voting should be compulsory.",
        [
            (
                "SUPPORT",
                ["Compulsory voting raises turnout.", "Mandatory voting gets more people to vote."],
                "Australia's turnout exceeds ninety percent since voting became mandatory.",
            ),
            (
                "UNDERMINE",
                ["Forcing people to vote violates freedom.", "Mandatory voting curbs liberty."],
                "Compelling citizens to vote infringes on their freedom not to participate.",
            ),
        ],
    ),
]


@pytest.fixture(scope="session")
def tiny_perspectrum(tmp_path_factory):
    d = tmp_path_factory.mktemp("perspectrum")
    persp, evid, claims, split = [], [], [], {}
    pid = eid = 0
    for cid, (claim, clusters) in enumerate(TOPICS, start=1):
        rec = {"cId": cid, "text": claim, "perspectives": []}
        for stance, texts, paragraph in clusters:
            eid += 1
            evid.append({"eId": eid, "text": paragraph})
            pids = []
            for t in texts:
                pid += 1
                persp.append({"pId": pid, "text": t})
                pids.append(pid)
            rec["perspectives"].append(
                {"pids": pids, "stance_label_3": stance, "evidence": [eid, 999]}
            )
        claims.append(rec)
        split[str(cid)] = "dev" if cid == 5 else "train"
    for name, data in (
        ("perspectrum_with_answers_v1.0.json", claims),
        ("dataset_split_v1.0.json", split),
        ("perspective_pool_v1.0.json", persp),
        ("evidence_pool_partial_v1.0.json", evid),
    ):
        (d / name).write_text(json.dumps(data))
    return d


# A small pool for end-to-end tests of the real default setup: generated sentences on a few
# topics, enough documents for PLAID (not the exact scoring of tiny pools).
SUBJECTS = ["Zoos", "Animal testing", "Hunting", "Factory farming", "Circuses with animals"]
PREDICATES = [
    "should be banned because animals suffer there",
    "protects endangered species from extinction",
    "harms the welfare of the animals involved",
    "teaches children to respect wildlife",
    "is cruel and should be closed down",
    "is needed for medical research progress",
    "creates jobs in rural communities",
    "keeps animals in small cages for profit",
]
ADVERBS = ["clearly", "often", "mostly", "sometimes", "rarely", "arguably"]


@pytest.fixture(scope="session")
def plaid_index(tmp_path_factory):
    """BM25 + the shipped dense encoder + the shipped ColBERT in PLAID mode (as the `default`
    index of `make demo`), over 240 generated perspectives and the hand-made evidence; PLAID's
    kernels are compiled once into the checkout's cache when missing (about 2 minutes)."""
    for name in ("pair", "dense", "colbert"):
        if not (ROOT / "models" / name / "bundle.json").is_file():
            pytest.skip(f"the shipped bundle has no models/{name}")
    # built once for the whole run: under pytest-xdist the workers share their base folder's
    # parent, and the first to take the lock builds it (read-only to every test: they copy it)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    d = shared / "plaid-index"
    with open(shared / "plaid-index.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / "home" / "plaid" / "CURRENT").is_file():
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            _build_plaid_index(d)
    return d / "home"


def _build_plaid_index(d: Path) -> None:
    from perspect.core.index.config import IndexConfig
    from perspect.indexer.indexer import Indexer, Source

    persp = [
        {"pId": 100 + i, "text": f"{s} {a} {p}."}
        for i, (s, p, a) in enumerate(
            (s, p, a) for s in SUBJECTS for p in PREDICATES for a in ADVERBS
        )
    ]
    config = IndexConfig(
        ("bm25", "dense", "colbert"),
        {
            "colbert": {"model": str(ROOT / "models" / "colbert"), "min_plaid_docs": 100},
            "dense": {"model": str(ROOT / "models" / "dense")},
        },
    )
    Indexer("plaid", home=d / "home", config=config).build(
        [
            Source("perspectives", write_json(d / "p.json", persp)),
            Source("evidence", write_json(d / "e.json", EVIDENCE)),
        ]
    )
