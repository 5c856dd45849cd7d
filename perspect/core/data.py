"""Fetching the public datasets Perspect is built and evaluated on.

`fetch_perspectrum` downloads the official PERSPECTRUM release files from the CogComp/perspectrum
GitHub repository, or copies them from a local folder (`--from`). Every file is checked to parse as
JSON and written atomically, so an interrupted fetch never leaves a truncated file behind.
"""

from __future__ import annotations

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
