"""Reading the PERSPECTRUM release (Chen et al. 2019) in its upstream file names and formats."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from perspect.core.datasets.fetch import evidence_pool_file
from perspect.core.errors import PerspectError

ANNOTATIONS = "perspectrum_with_answers_v1.0.json"
SPLIT = "dataset_split_v1.0.json"
PERSPECTIVES = "perspective_pool_v1.0.json"


@dataclass(frozen=True)
class Cluster:
    """Equivalent perspectives on one claim, with their stance and evidence paragraph ids."""

    pids: tuple[int, ...]
    stance: str  # SUPPORT or UNDERMINE
    evidence: tuple[int, ...]


@dataclass(frozen=True)
class Claim:
    cid: int
    text: str
    split: str
    clusters: tuple[Cluster, ...]

    @property
    def pids(self) -> set[int]:
        return {p for c in self.clusters for p in c.pids}

    def gold_sides(self, perspectives: dict[int, str]) -> list[tuple[int, bool]]:
        """(pId, supports the claim) of each gold perspective whose text `perspectives` holds:
        the rows every stance fit and T2 read."""
        return [
            (p, cl.stance == "SUPPORT")
            for cl in self.clusters
            for p in cl.pids
            if p in perspectives
        ]


def _load_json(path: Path):
    if not path.is_file():
        raise PerspectError(f"missing {path}", hint="perspect data fetch perspectrum --dest DIR")
    return json.loads(path.read_text(encoding="utf-8"))


def load_claims(folder: str | Path, split: str | None = None) -> list[Claim]:
    """Claims of `split` (train/dev/test), in file order; the split comes only from the split file."""
    folder = Path(folder)
    splits = {int(k): v for k, v in _load_json(folder / SPLIT).items()}
    out = []
    for rec in _load_json(folder / ANNOTATIONS):
        s = splits.get(int(rec["cId"]))
        if split is not None and s != split:
            continue
        clusters = tuple(
            Cluster(
                tuple(int(p) for p in c["pids"]),
                c["stance_label_3"],
                tuple(int(e) for e in c.get("evidence", [])),
            )
            for c in rec["perspectives"]
        )
        out.append(Claim(int(rec["cId"]), rec["text"], s or "", clusters))
    if split is not None and not out:
        raise PerspectError(
            f"no {split!r} claims in {folder}", hint="the test split is held out; use --split dev"
        )
    return out


def load_perspectives(folder: str | Path) -> dict[int, str]:
    return {int(r["pId"]): r["text"] for r in _load_json(Path(folder) / PERSPECTIVES)}


def load_evidence(folder: str | Path) -> dict[int, str]:
    path = evidence_pool_file(folder)
    if path is None:
        return {}
    return {int(r["eId"]): r["text"] for r in _load_json(path)}


DATA_FILES = (ANNOTATIONS, SPLIT, PERSPECTIVES)


def data_fingerprints(folder: str | Path) -> list[dict]:
    """Name, size and sha256 of the files a model was trained on (for its manifest)."""
    import hashlib

    files = [Path(folder) / n for n in DATA_FILES]
    if evidence_pool_file(folder) is not None:
        files.append(evidence_pool_file(folder))
    return [
        {
            "file": f.name,
            "size": f.stat().st_size,
            "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
        }
        for f in files
        if f.is_file()
    ]


def tune_claims_of(data_dir: str | Path) -> tuple[list[Claim], list[Claim]]:
    """The held-out 15 % of train claims (by hashed claim id) and the rest: decisions are fitted
    on the first, models trained on the second, and dev never tunes anything."""
    order = sorted(
        load_claims(data_dir, "train"), key=lambda c: hashlib.md5(str(c.cid).encode()).hexdigest()
    )
    n_tune = max(1, math.ceil(0.15 * len(order)))
    return order[:n_tune], order[n_tune:]
