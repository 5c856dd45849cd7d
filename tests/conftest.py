"""Shared fixtures: tiny pools written by the tests, and the shared PERSPECTRUM data when present."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

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


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_default_colbert(monkeypatch, tmp_path_factory):
    """Tests choose their models: ones trained in the checkout (models/) must not leak in."""
    for var in ("PERSPECT_COLBERT_MODEL", "PERSPECT_MODEL"):
        if var not in os.environ:
            monkeypatch.setenv(var, str(tmp_path_factory.getbasetemp() / "no-model"))


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
    from indexer.indexer import Indexer, Source

    Indexer("tiny", home=home).build([Source(pool, path) for pool, path in pools.items()])
    return home


@pytest.fixture
def perspectrum_dir() -> Path:
    if not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file():
        pytest.skip(f"shared PERSPECTRUM data not found at {PERSPECTRUM}")
    return PERSPECTRUM


def perspect_cmd() -> list[str]:
    return [sys.executable, "-m", "perspect.cli"]
