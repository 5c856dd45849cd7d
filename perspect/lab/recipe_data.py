"""Where the `make models` steps that do not train on PERSPECTRUM alone find their data, and the
fingerprints of what each step trains on (perspect.lab.recipe keys a step by them)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from perspect.core import paths
from perspect.core.model import bundle


@dataclass(frozen=True)
class OtherData:
    """Where the steps that do not train on PERSPECTRUM find their data."""

    claimdiff: Path = Path("data") / "claimdiff"
    # the stance trunk's intermediate phase (its page-held-out split is made by the trainer)
    vitaminc: Path = Path("../shared/data/vitaminc/vitaminc_real_shared.jsonl")
    # the relation model's inference pairs (SNLI, MultiNLI, counterfactual, Breaking NLI)
    inference: Path = paths.INFERENCE_DATA
    # the argument model's Touché 2023, IBM Claim Stance and UKP sentential rows
    argument: Path = paths.INFERENCE_DATA.parent / "argument"
    # the direction phase's pairs (Debatepedia, ArguAna, IAM, AIFdb, Nixon-Kennedy)
    direction: Path = paths.INFERENCE_DATA.parent / "direction"
    # readers' corrections (an index's, `make models --corrections INDEX`) the pair steps add
    # to their stance, relevance and equivalence pairs
    corrections: tuple = ()

    def corrections_sha(self) -> str | None:
        if not self.corrections:
            return None
        doc = json.dumps([asdict(c) for c in self.corrections], sort_keys=True)
        return hashlib.sha256(doc.encode()).hexdigest()

    def vitaminc_fingerprint(self) -> dict | None:
        if not self.vitaminc.is_file():
            return None
        return {"file": self.vitaminc.name, "sha256": bundle.sha256_file(self.vitaminc)}

    def inference_fingerprints(self) -> list[dict] | None:
        from perspect.lab.train.relation_data import NLI_FILES

        files = [self.inference / f"{n}.jsonl" for n in NLI_FILES]
        if not all(f.is_file() for f in files):
            return None
        return [{"file": f"inference/{f.name}", "sha256": bundle.sha256_file(f)} for f in files]

    def fingerprints(self) -> list[dict] | None:
        """The comparator step's data, None where ClaimDiff is missing (the step cannot run)."""
        from perspect.core.datasets import claimdiff

        got = claimdiff.data_fingerprints(self.claimdiff)
        return got if len(got) == 2 else None


def data_of(step, data_sha, other: OtherData, log) -> list | None:
    """The fingerprints of the data `step` trains on; None (said in a line) where it is missing
    and the step cannot run."""
    if step.task == "claimdiff":
        sha = other.fingerprints()
        if sha is None:
            log(
                f"{step.name}: no ClaimDiff data in {other.claimdiff}, skipped (perspect data "
                "fetch claimdiff --from DIR)"
            )
            return None
        return [*sha, *(other.inference_fingerprints() or [])]  # the joint reader's pairs
    if step.task == "stance-trunk":
        vc = other.vitaminc_fingerprint()
        if vc is None:
            log(f"{step.name}: no VitaminC file at {other.vitaminc}, skipped")
            return None
        return [*data_sha, vc]
    if step.task in ("relation", "heads"):
        nli, cdf = other.inference_fingerprints(), other.fingerprints()
        if nli is None or cdf is None:
            log(f"{step.name}: no inference pairs in {other.inference} or ClaimDiff, skipped")
            return None
        return [*data_sha, *nli, *cdf]
    if step.task == "direction":
        if not (other.direction / "train.jsonl").is_file():
            log(f"{step.name}: no direction pairs in {other.direction}, skipped")
            return None
        from perspect.lab.train.argument_data import direction_fingerprints

        return [*data_sha, *direction_fingerprints(other.direction)]
    return data_sha
