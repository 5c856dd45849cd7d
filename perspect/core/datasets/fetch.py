"""Fetching the public datasets Perspect is built and evaluated on.

`fetch_perspectrum` downloads the official PERSPECTRUM release files from the CogComp/perspectrum
GitHub repository, or copies them from a local folder (`--from`). Every file is checked to parse as
JSON and written atomically, so an interrupted fetch never leaves a truncated file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from perspect.core import paths
from perspect.core.errors import PerspectError

PERSPECTRUM_URL = "https://raw.githubusercontent.com/CogComp/perspectrum/master/data/dataset/"
PERSPECTRUM_FILES = (
    "perspective_pool_v1.0.json",
    "perspectrum_with_answers_v1.0.json",
    "dataset_split_v1.0.json",
    "evidence_pool_v1.0.json",
    "topic.json",
)
# A rebuilt subset of the evidence pool with the original eIds (see the shared data README).
PARTIAL_EVIDENCE = "evidence_pool_partial_v1.0.json"
REQUIRED = ("perspective_pool_v1.0.json",)
DEFAULT_DEST = Path("data") / "perspectrum"


def evidence_pool_file(folder: str | Path) -> Path | None:
    """The full evidence pool if present, else the partial one, else None."""
    for name in ("evidence_pool_v1.0.json", PARTIAL_EVIDENCE):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def _check_json(path: Path, origin: str) -> None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        path.unlink(missing_ok=True)
        raise PerspectError(f"{origin}: not valid JSON ({e})") from None


def fetch_perspectrum(
    dest: str | Path | None = None, source: str | Path | None = None, timeout: float = 30.0
) -> list[Path]:
    """Put the PERSPECTRUM files in `dest`; returns the files written."""
    dest = Path(dest or DEFAULT_DEST)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if source is not None:
        src = Path(source)
        if not src.is_dir():
            raise PerspectError(f"--from {src}: no such folder")
        for name in (*PERSPECTRUM_FILES, PARTIAL_EVIDENCE):
            if (src / name).is_file():
                tmp = dest / f".{name}.part"
                shutil.copyfile(src / name, tmp)
                _check_json(tmp, str(src / name))
                os.replace(tmp, dest / name)
                written.append(dest / name)
        missing = [n for n in REQUIRED if not (dest / n).is_file()]
        if missing:
            raise PerspectError(f"--from {src}: missing {', '.join(missing)}")
        return written
    base = paths.perspectrum_url(PERSPECTRUM_URL)
    for name in PERSPECTRUM_FILES:
        url = base + name
        tmp = dest / f".{name}.part"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r, open(tmp, "wb") as f:
                shutil.copyfileobj(r, f)
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            tmp.unlink(missing_ok=True)
            raise PerspectError(
                f"could not download {url}: {getattr(e, 'reason', e)}",
                hint="offline? pass --from DIR with a local copy of the PERSPECTRUM files",
            ) from None
        _check_json(tmp, url)
        os.replace(tmp, dest / name)
        written.append(dest / name)
    return written


# ClaimDiff (Ko et al. 2023): copied from a local folder in its upstream layout; train files only
# (its test split is held out, never fetched).
CLAIMDIFF_FILES = (
    "ClaimDiff-S/ClaimDiff-strength-train.json",
    "ClaimDiff-W/ClaimDiff-weak-train.json",
    "annotation_result_unfiltered_train.json",
)
# The AllSides articles (../shared/data/news, issue 73): 37,554 articles of 491 outlets with
# their leaning, copied as they ship (gzipped JSONL: the news reader takes it as it is).
NEWS_FILE = "allsides_articles.jsonl.gz"
NEWS_SHA256 = "2bee1cdd614a6cafd1fbc44228aa81ad6205f0be7ac001ccf244f48dcaed4c85"
OTHER_DATASETS = {"claimdiff": CLAIMDIFF_FILES, "news": (NEWS_FILE,)}


def fetch_local(dataset: str, source: str | Path | None, dest: str | Path | None) -> list[Path]:
    """Copy `dataset`'s files from `source` (its upstream layout) into `dest` (data/<dataset>)."""
    if dataset not in OTHER_DATASETS:
        raise PerspectError(
            f"unknown dataset {dataset!r}", hint="known: perspectrum, claimdiff, news, debates"
        )
    if source is None:
        raise PerspectError(
            f"{dataset} is copied from a local folder",
            hint=f"perspect data fetch {dataset} --from DIR",
        )
    src, dest = Path(source), Path(dest or Path("data") / dataset)
    if not src.is_dir():
        raise PerspectError(f"--from {src}: no such folder")
    written = []
    for name in OTHER_DATASETS[dataset]:
        if not (src / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        tmp = (dest / name).with_name(f".{Path(name).name}.part")
        shutil.copyfile(src / name, tmp)
        if name.endswith(".json"):
            _check_json(tmp, str(src / name))
        if name == NEWS_FILE:
            _check_sha256(tmp, NEWS_SHA256, str(src / name))
        os.replace(tmp, dest / name)
        written.append(dest / name)
    if not written:
        raise PerspectError(f"--from {src}: none of {', '.join(OTHER_DATASETS[dataset])}")
    if dataset == "claimdiff":
        written.append(write_claimdiff_news(dest))
    return written


CLAIMDIFF_NEWS = "claimdiff_train_articles.jsonl"


def _check_sha256(path: Path, want: str, where: str) -> None:
    """The copy is the file the README describes, or it is removed and refused."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != want:
        path.unlink(missing_ok=True)
        raise PerspectError(
            f"{where}: not the expected file (sha256 {h.hexdigest()[:12]}..., want {want[:12]}...)",
            hint="copy the news folder again from its source",
        )


def write_claimdiff_news(folder: Path) -> Path:
    """A demo news pool (`--news data/claimdiff/claimdiff_train_articles.jsonl`): ClaimDiff train's
    sentences regrouped into their articles (perspect.core.datasets.claimdiff.articles)."""
    from perspect.core.datasets.claimdiff import articles

    out = folder / CLAIMDIFF_NEWS
    tmp = out.with_name(f".{out.name}.part")
    with tmp.open("w", encoding="utf-8") as f:
        for a in articles(folder):
            f.write(json.dumps(a, ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    return out
