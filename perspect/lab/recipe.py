"""`make models`: the shipped bundle, step by step, resumable.

Each step trains or re-fits one entry of the bundle (perspect.core.model.bundle). Before it runs,
its *inputs key* is computed: the step's recipe (task, profile, base), the sha256 of the training
data files and of the base weights, the `bundle.json` of every entry it reads (a retrained dense
model changes the pair model's negatives and features) and the key of the step before it on the same
entry. A finished step appends `{step, key}` to its entry's record; a step whose key is already
there is skipped. So `make models` picks up where it stopped, on this machine or on another one
from what is committed, and redoes exactly what a changed input invalidates.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.datasets.perspectrum import data_fingerprints
from perspect.core.errors import PerspectError
from perspect.core.model import bundle
from perspect.core.progress import NullReporter, Reporter
from perspect.lab import fitting


@dataclass(frozen=True)
class Step:
    name: str
    task: str  # dense | all | continue | equivalence-ce | colbert | calibrate | unclear | verdict
    writes: str  # the bundle entry it (re)writes
    reads: tuple[str, ...] = ()  # entries whose content it depends on
    profile: str = "full"
    options: dict[str, Any] = field(default_factory=dict)
    base: str | None = None  # its own base (None: the recipe's, MiniLM)
    # the method's revision: bumped when what the step computes changes, so that a bundle made
    # the old way is not "up to date" (0 leaves the keys of unrevised steps as they were)
    rev: int = 0


def steps(
    stance_rounds: int = 3, colbert: bool = True, comparator: bool = True, direction: bool = True
) -> tuple[Step, ...]:
    """The shipped recipe (`direction`: with the direction and sides steps of issue 61; without
    them, `make models DIRECTION=0`, the bundle before it: bench/RESULTS.md "Direction"). The equivalence cross-encoder and ColBERT need no other model; the
    pair model mines its negatives and fits its stacks over the dense vectors; calibration re-fits
    every decision on an index of the bundle's own retrievers. The ClaimDiff comparator trains
    on its own data and the inference pairs (the joint reader), last."""
    out = [
        Step("dense", "dense", "dense"),
        Step("pair", "all", "pair", reads=("dense",)),
        *(
            Step(f"stance-{i}", "continue", "pair", reads=("dense",), profile="continue")
            for i in range(1, stance_rounds + 1)
        ),
        Step("equivalence", "equivalence-ce", "equivalence"),
    ]
    if colbert:
        out.append(Step("colbert", "colbert", "colbert"))
    # the stance trunk (issue 33): LoRA on all-mpnet-base-v2's top layers, decomposed; P(support)
    # of what a search shows comes from it, so the decisions are fitted after it
    out.append(Step("stance-trunk", "stance-trunk", "stance", base=paths.PACKAGED_MPNET))
    # the relation model (issue 41): that trunk, warm-started from it, with inference,
    # equivalence and ClaimDiff heads beside stance; what a search, compare and news read
    # Time-boxed (75 min from its start, caches included) to fit a 2-core session: the shipped
    # entry's record says how many of its steps ran (training.train.steps_done).
    out.append(
        Step(
            "relation",
            "relation",
            "relation",
            reads=("stance",),
            base=paths.PACKAGED_MPNET,
            options=dict(RELATION_OPTIONS),
        )
    )
    # the argument model (issue 55): the relation trunk warm-started again with for / against /
    # neither at three levels (claim-perspective, perspective-sentence, claim-sentence) and its
    # cuts; resumable (its cached states and checkpoint live outside the repository)
    out.append(
        Step("argument", "argument", "argument", reads=("relation",), base=paths.PACKAGED_MPNET)
    )
    # direction (issue 61): the argument model trained again, from itself, on pairs in which B
    # argues for or against A at every level of a debate, denials with a consistency term, and
    # a replay of its rows; its cuts checked on the direction data's dev debates
    if direction:
        out.append(
            Step("direction", "direction", "argument", base=paths.PACKAGED_MPNET,
                 options=dict(DIRECTION_OPTIONS))
        )  # fmt: skip
    reads = ("dense", "equivalence", *(("colbert",) if colbert else ()), "relation")
    # rev 1: the stance decision stacks the trunk with the pair head (fit_stance_stack);
    # rev 2: the trunk is the relation model's
    out.append(Step("calibrate", "calibrate", "pair", reads=reads, rev=2))
    # the margin of sides too close to call (rev 1: fitted for 85 % right sides shown, not 75 %;
    # rev 2: after the weight of a claim's second reading, pipeline.valence)
    out.append(Step("unclear", "unclear", "pair", rev=2))
    # evidence verdicts (rev 1: and the joint reader named as the cited reasons' reader)
    out.append(Step("verdict", "verdict", "pair", reads=("dense",), rev=1))
    # the mining decision (issue 45): is a sentence of the reader's documents an argument on the
    # claim, and on which side; fitted on an index with the evidence paragraphs as documents
    # (rev 3: the side is the stance decision's, past a fitted margin; the cut for arguments at
    # 80 % on tune)
    out.append(Step("mining", "mining", "pair", reads=reads, rev=3))
    # one trunk for the sides (issue 62): the argument model becomes the pair model's stance
    # trunk, its stack, second-reading weight and unclear margin fitted on the tune claims
    if direction:
        out.append(Step("sides", "sides", "pair", reads=("argument",)))
    if comparator:  # rev 1: the joint reader (an inference head beside ClaimDiff, issue 41)
        out.append(Step("comparator", "claimdiff", "comparator", rev=1))
    return tuple(out)


def trainer_work(name: str) -> Path:
    """A work folder beside the argument model's (outside the repository): its own cached
    states and checkpoint, so the two runs never take each other's for another recipe's."""
    from perspect.lab.train.argument import default_work

    return default_work().parent / name


PAIR_TRAINING = ("all", "continue")  # the steps that train the pair model's heads
# the shipped relation model's run (python -m perspect.lab.train.relation with these options)
RELATION_OPTIONS = (
    ("nli_train", 22000),
    ("joint_train", 6000),
    ("nli_held", 3000),
    ("joint_held", 1500),
    ("numeric", 1500),
    ("epochs", 1.25),
    ("minutes", 75.0),
)


# the shipped direction phase's run (python -m perspect.lab.train.argument --direction ...)
DIRECTION_OPTIONS = (("rank", 16), ("alpha", 16), ("epochs", 1.0), ("work_name", "direction-run"))


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


@dataclass(frozen=True)
class Outcome:
    step: str
    ran: bool
    key: str
    seconds: float = 0.0


def inputs_key(
    step: Step,
    data: Path,
    root: Path,
    before: str,
    base: str | None,
    data_sha=None,
    corrections: str | None = None,
) -> str:
    """`data_sha`: `data_fingerprints(data)` when the caller has it (it hashes every file);
    `corrections`: the checksum of the readers' corrections a pair step trains on (None: no
    corrections, and the key is what it was before they existed)."""

    def entry_sha(name: str) -> str | None:
        f = root / name / bundle.MANIFEST
        return bundle.sha256_file(f) if f.is_file() else None

    base_path = Path(paths.resolve_base(base))
    weights = base_path / "model.safetensors"
    doc = {
        "step": {
            k: v
            for k, v in asdict(step).items()
            if (k != "base" or v is not None) and (k != "rev" or v)
        },
        "base": base or paths.PACKAGED_MINILM,
        "base_sha256": bundle.base_sha256(weights) if weights.is_file() else None,
        "data": data_sha if data_sha is not None else data_fingerprints(data),
        "reads": {name: entry_sha(name) for name in step.reads},
        "before": before,
    }
    if corrections is not None:
        doc["corrections"] = corrections
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


def done_steps(folder: Path) -> list[dict[str, str]]:
    if not bundle.is_bundle(folder):
        return []
    return list(bundle.BundleEntry.read(folder).record.get("steps", []))


def make(
    data: str | Path,
    root: str | Path | None = None,
    recipe: Sequence[Step] | None = None,
    only: Sequence[str] = (),
    base: str | None = None,
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
    dry_run: bool = False,
    other: OtherData | None = None,
) -> list[Outcome]:
    """Run the recipe's steps that are not done yet (all, or those named in `only`)."""
    other = other or OtherData()
    data, root = Path(data), Path(root or paths.models_dir())
    recipe = tuple(recipe or steps())
    unknown = set(only) - {s.name for s in recipe}
    if unknown:
        known = ", ".join(s.name for s in recipe)
        raise PerspectError(f"unknown step {sorted(unknown)[0]!r}", hint=f"steps: {known}")
    reporter = reporter or NullReporter()
    before: dict[str, str] = {}  # entry -> key of the last step that wrote it
    data_sha = data_fingerprints(data)
    out = []
    for step in recipe:
        sha = data_sha
        if step.task == "claimdiff":
            sha = other.fingerprints()
            if sha is None:
                log(
                    f"{step.name}: no ClaimDiff data in {other.claimdiff}, skipped (perspect data "
                    "fetch claimdiff --from DIR)"
                )
                out.append(Outcome(step.name, False, ""))
                continue
            sha = [*sha, *(other.inference_fingerprints() or [])]  # the joint reader's pairs
        if step.task == "stance-trunk":
            vc = other.vitaminc_fingerprint()
            if vc is None:
                log(f"{step.name}: no VitaminC file at {other.vitaminc}, skipped")
                out.append(Outcome(step.name, False, ""))
                continue
            sha = [*data_sha, vc]
        if step.task == "relation":
            nli, cdf = other.inference_fingerprints(), other.fingerprints()
            if nli is None or cdf is None:
                log(f"{step.name}: no inference pairs in {other.inference} or ClaimDiff, skipped")
                out.append(Outcome(step.name, False, ""))
                continue
            sha = [*data_sha, *nli, *cdf]
        if step.task == "direction":
            if not (other.direction / "train.jsonl").is_file():
                log(f"{step.name}: no direction pairs in {other.direction}, skipped")
                out.append(Outcome(step.name, False, ""))
                continue
            from perspect.lab.train.argument_data import direction_fingerprints

            sha = [*data_sha, *direction_fingerprints(other.direction)]
        fixes = other.corrections_sha() if step.task in PAIR_TRAINING else None
        key = inputs_key(
            step, data, root, before.get(step.writes, ""), step.base or base, sha, fixes
        )
        before[step.writes] = key
        folder = root / step.writes
        if any(d.get("step") == step.name and d.get("key") == key for d in done_steps(folder)):
            log(f"{step.name}: up to date ({folder})")
            out.append(Outcome(step.name, False, key))
            continue
        if only and step.name not in only:
            log(f"{step.name}: not up to date, not asked for")
            out.append(Outcome(step.name, False, key))
            continue
        if dry_run:
            log(f"{step.name}: would run ({step.task}, profile {step.profile})")
            out.append(Outcome(step.name, False, key))
            continue
        ran = {o.step for o in out if o.ran}
        if step.task == "direction" and "argument" not in ran and _directed(folder):
            # it starts from the argument entry as the argument step leaves it: on top of its own
            # earlier output it would train twice, which no fresh run reproduces
            raise PerspectError(
                f"{folder} holds an earlier direction step's output, not the argument step's",
                hint="make models STEPS=argument,direction (the direction step starts from the "
                "argument step's model)",
            )
        log(f"{step.name}: running ({step.task}, profile {step.profile}) -> {folder}")
        t0 = time.perf_counter()
        _run(step, data, root, folder, base, reporter, log, other)
        record_step(folder, step.name, key, time.perf_counter() - t0)
        out.append(Outcome(step.name, True, key, time.perf_counter() - t0))
    return out


def _directed(folder: Path) -> bool:
    """Whether the entry's last step was a direction step (its weights are that step's)."""
    done = done_steps(folder)
    return bool(done) and done[-1].get("step") == "direction"


def record_step(folder: Path, name: str, key: str, seconds: float) -> None:
    """Append {step, key} to the entry's record (bundle.json; not itself checksummed)."""
    f = folder / bundle.MANIFEST
    m = json.loads(f.read_text())
    steps_done = [s for s in m["record"].get("steps", []) if s.get("step") != name]
    m["record"]["steps"] = [*steps_done, {"step": name, "key": key, "seconds": round(seconds)}]
    tmp = f.with_name(f".{f.name}.{os.getpid()}")
    tmp.write_text(json.dumps(m, indent=1) + "\n")
    tmp.replace(f)


def _run(step, data, root, folder, base, reporter, log, other: OtherData) -> None:
    if step.task == "claimdiff":
        from perspect.lab.claimdiff import train_comparator

        train_comparator(
            other.claimdiff,
            folder,
            base=base,
            profile=step.profile,
            reporter=reporter,
            log=log,
            inference=other.inference,
        )
        return
    if step.task in ("dense", "equivalence-ce", "colbert"):
        trainer = {
            "dense": fitting.train_dense,
            "equivalence-ce": fitting.train_equivalence,
            "colbert": fitting.train_colbert,
        }[step.task]
        trainer(data, folder, base=base, profile=step.profile, reporter=reporter, log=log)
        return
    with paths.models_dir_set_to(root):
        if step.task == "stance-trunk":  # negatives from the bundle's own retrievers
            from perspect.lab.train.stance_trunk import train_entry

            train_entry(data, folder, log, vitaminc_file=other.vitaminc, **step.options)
        elif step.task == "relation":
            from perspect.lab.train.relation import train_entry as train_relation

            train_relation(data, folder, log, inference=other.inference,
                           claimdiff=other.claimdiff, warm_start=root / "stance",
                           **step.options)  # fmt: skip
        elif step.task == "argument":
            from perspect.lab.argument_fit import train_entry as train_argument

            train_argument(data, folder, log, argument=other.argument,
                           warm_start=root / "relation", **step.options)  # fmt: skip
        elif step.task == "direction":  # from the argument model as the step before left it
            from perspect.lab.argument_fit import train_entry as train_argument

            opts = dict(step.options)
            work = trainer_work(opts.pop("work_name"))
            train_argument(data, folder, log, argument=other.argument, warm_start=folder,
                           direction=other.direction, work=work, **opts)  # fmt: skip
        elif step.task == "sides":
            fitting.refit_sides(folder, data, root / "argument")
        elif step.task == "all":
            fitting.train(
                data,
                folder,
                base=base,
                profile=step.profile,
                reporter=reporter,
                log=log,
                corrections=other.corrections,
            )
        elif step.task == "continue":
            from perspect.lab.train.pair import PROFILES
            from perspect.reranker.model import TASKS

            tasks = tuple(t for t in TASKS if t in PROFILES[step.profile].caps)
            fitting.train(
                data,
                folder,
                tasks,
                base,
                step.profile,
                reporter,
                log,
                init=folder,
                corrections=other.corrections,
            )
        elif step.task == "unclear":
            fitting.refit_unclear(folder, data)
        elif step.task == "verdict":
            fitting.refit_verdict(folder, data, reporter=reporter)
        elif step.task == "mining":
            from perspect.lab.mining_fit import fit_entry

            retrievers = ("bm25", "dense", *(("colbert",) if "colbert" in step.reads else ()))
            fit_entry(folder, data, root, other.claimdiff, retrievers, log)
        elif step.task == "calibrate":
            retrievers = ("bm25", "dense", *(("colbert",) if "colbert" in step.reads else ()))
            eq, st = root / "equivalence", root / "relation"
            st = st if bundle.is_bundle(st) else root / "stance"
            fitting.recalibrate(
                folder,
                data,
                reporter=reporter,
                retrievers=retrievers,
                equivalence_model=str(eq) if bundle.is_bundle(eq) else None,
                stance_model=str(st) if bundle.is_bundle(st) else None,
            )
        else:
            raise PerspectError(f"unknown task {step.task!r} in step {step.name!r}")
