"""`make models`: the shipped bundle, step by step, resumable.

Each step trains or re-fits one entry of the bundle (perspect.core.model.bundle). Before it runs,
its *inputs key* is computed: the step's recipe (task, profile, base), the sha256 of the training
data files and of the base weights, the `bundle.json` of every entry it reads (a retrained dense
model changes the pair model's negatives and features) and the key of the step before it on the same
entry. A finished step appends `{step, key}` to its entry's record; a step whose key is already
there is skipped. So `make models` picks up where it stopped, on this machine or on another one
from what is committed, and redoes exactly what a changed input invalidates.

Intermediate stages (`Step.ships` False: the trunks the argument model descends from) live in the
user's cache; a step reading one depends on its inputs key, and it runs only where a step that
starts from it must.

Why one module: the recipe, its keys and the runner that plans and resumes it change together
(a step added is a key, a plan and a run branch).
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
from perspect.lab.recipe_data import OtherData, data_of


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
    # False: a stage of another entry's training (a warm start, a fit's input), kept outside the
    # repository (`intermediate_dir`) and run only when a step that reads it must run (issue 62:
    # the trunks the argument model descends from answer no search)
    ships: bool = True


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
    out.append(
        Step("stance-trunk", "stance-trunk", "stance", base=paths.PACKAGED_MPNET, ships=False)
    )
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
            ships=not direction,  # with direction, the argument model answers what it did
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
    # the relation model's heads (inference, equivalence, ClaimDiff) fitted onto the argument
    # trunk, frozen, and its news and compare cuts after them (issue 62: one trunk answers sides,
    # reasons, news, compare and mining; the relation model ships no more)
    if direction:
        # rev 1: C and class weights picked on the tune rows, ClaimDiff's by strengthen's precision
        out.append(Step("heads", "heads", "argument", base=paths.PACKAGED_MPNET, rev=1))
        # what bears on a claim as written (issue 71): the trunk and a bearing head trained on
        # the judged set (bench/judged), other heads distilled; its decisions and verdict cuts
        out.append(Step("bearing", "bearing", "argument", base=paths.PACKAGED_MPNET))
    reads = ("dense", "equivalence", *(("colbert",) if colbert else ()), "relation")
    # rev 1: the stance decision stacks the trunk with the pair head (fit_stance_stack);
    # rev 2: the trunk is the relation model's
    out.append(Step("calibrate", "calibrate", "pair", reads=reads, rev=2))
    # the margin of sides too close to call (rev 1: fitted for 85 % right sides shown, not 75 %;
    # rev 2: after the weight of a claim's second reading, pipeline.valence)
    out.append(Step("unclear", "unclear", "pair", rev=2))
    # evidence verdicts (rev 1: and the joint reader named as the cited reasons' reader)
    out.append(Step("verdict", "verdict", "pair", reads=("dense",), rev=1))
    # one trunk for the sides (issue 62): the argument model becomes the pair model's stance
    # trunk, its stack, second-reading weight and unclear margin fitted on the tune claims
    if direction:
        out.append(Step("sides", "sides", "pair", reads=("argument",)))
    # the mining decision (issue 45): is a sentence of the reader's documents an argument on the
    # claim, and on which side; fitted on an index with the evidence paragraphs as documents
    # (rev 3: the side is the stance decision's, past a fitted margin; the cut for arguments at
    # 80 % on tune), over the heads of the trunk the engine reads (with direction: the argument
    # model's, after the sides step names it)
    mine_reads = (*reads[:-1], "argument") if direction else reads
    out.append(Step("mining", "mining", "pair", reads=mine_reads, rev=3))
    if direction:
        # which news sentences a search shows (issue 73): a stack over the argument trunk's heads
        # fitted on the judged news pairs (bench/judged/news-*.jsonl), kept with the pipeline's
        # other decisions in the pair model's manifest
        out.append(Step("news", "news", "pair", reads=("argument",)))
    if comparator:  # rev 1: the joint reader (an inference head beside ClaimDiff, issue 41)
        out.append(Step("comparator", "claimdiff", "comparator", rev=1))
    return tuple(out)


def _data_shas(recipe, data: Path, other: OtherData, log) -> dict[str, list | None]:
    """Each step's training data checksums (None: its data is missing, and it is skipped)."""
    data_sha = data_fingerprints(data)
    return {step.name: data_of(step, data_sha, other, log) for step in recipe}


def _keyed(recipe, data, root, base, other, shas, before: dict[str, str], staged: dict[str, str]):
    """Each runnable step with its inputs key as the files stand now, in order (lazily: a step
    run or re-recorded before the next is asked changes the next one's key)."""
    shipped = {s.writes for s in recipe if s.ships}
    for step in recipe:
        if shas[step.name] is None:
            continue
        fixes = other.corrections_sha() if step.task in PAIR_TRAINING else None
        key = inputs_key(step, data, root, before.get(step.writes, ""), step.base or base,
                         shas[step.name], fixes, staged)  # fmt: skip
        before[step.writes] = key
        if not step.ships and step.writes not in shipped:
            staged[step.writes] = key
        yield step, key, entry_folder(step.writes, root, staged)


def done(step: Step, key: str, folder: Path) -> bool:
    """Whether `folder`'s record holds `step` finished under `key`."""
    return any(d.get("step") == step.name and d.get("key") == key for d in done_steps(folder))


def repack(
    data: str | Path,
    names: Sequence[str],
    root: str | Path | None = None,
    base: str | None = None,
    log: Callable[[str], None] = print,
    other: OtherData | None = None,
    recipe: Sequence[Step] | None = None,
) -> list[str]:
    """Store entries `names` anew in the current format (`bundle.pack`: the trained matrices as
    int8 differences from the base), and carry each finished step's record over to the key its
    inputs have after it. Why carry them: a storage change is not a change of what any step
    computed from (the weights move by about 1e-4 of themselves, closer to the trained ones than
    float16 kept them), and without it every step reading a repacked entry's `bundle.json` would
    read as stale: hours of `make models` for nothing. The dev figures are taken again after
    it (bench/RESULTS.md), not refitted. Returns the steps whose records were carried over."""
    other = other or OtherData()
    data, root = Path(data), Path(root or paths.models_dir())
    recipe = tuple(recipe or steps())
    shas = _data_shas(recipe, data, other, log)
    was_done = {
        step.name: done(step, key, folder)
        for step, key, folder in _keyed(recipe, data, root, base, other, shas, {}, {})
    }
    for name in names:
        entry = bundle.BundleEntry.read(root / name)
        full = bundle.materialize(root / name)
        before = entry.size
        bundle.pack(full, root / name, name=entry.name, role=entry.role, base_id=entry.base_id,
                    base_subdir=entry.base_subdir, record=entry.record)  # fmt: skip
        log(
            f"{name}: {before / 1e6:.1f} MB -> {bundle.BundleEntry.read(root / name).size / 1e6:.1f} MB"
        )
    carried = []
    for step, key, folder in _keyed(recipe, data, root, base, other, shas, {}, {}):
        if was_done.get(step.name) and not done(step, key, folder):
            _rekey(folder, step.name, key)
            carried.append(step.name)
    log(f"records carried over to their new keys: {', '.join(carried) or 'none'}")
    return carried


def _rekey(folder: Path, name: str, key: str) -> None:
    """Step `name`'s recorded key replaced in place (its place in the record kept: the direction
    step's check reads their order)."""
    steps_done = done_steps(folder)
    for s in steps_done:
        if s.get("step") == name:
            s["key"] = key
    _write_steps(folder, steps_done)


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
    staged: dict[str, str] | None = None,
) -> str:
    """`data_sha`: `data_fingerprints(data)` when the caller has it (it hashes every file);
    `corrections`: the checksum of the readers' corrections a pair step trains on (None: no
    corrections, and the key is what it was before they existed); `staged`: the inputs key of
    each intermediate entry (`Step.ships` False), which a step reading it depends on instead of
    its files (a fresh clone has none of them, and needs none while nothing reading them runs)."""
    staged = staged or {}

    def entry_sha(name: str) -> str | None:
        if name in staged:
            return f"staged:{staged[name]}"
        f = root / name / bundle.MANIFEST
        return bundle.sha256_file(f) if f.is_file() else None

    base_path = Path(paths.resolve_base(base))
    weights = base_path / "model.safetensors"
    doc = {
        "step": {
            k: v
            for k, v in asdict(step).items()
            if (k != "base" or v is not None) and (k != "rev" or v) and k != "ships"
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
    shas = _data_shas(recipe, data, other, log)

    def keyed(before: dict[str, str], staged: dict[str, str]):
        return _keyed(recipe, data, root, base, other, shas, before, staged)

    # the plan, from the keys as things stand: a step runs when its key is not recorded, or when
    # it reads an entry a step before it will rewrite (that entry's checksum will change); an
    # intermediate runs only where a step that will run reads it (directly or through another)
    staged: dict[str, str] = {}
    plan = [(s, done(s, k, f)) for s, k, f in keyed({}, staged)]
    rewritten: set[str] = set()
    stale: dict[str, bool] = {}
    for step, is_done in plan:
        stale[step.name] = not is_done or any(r in rewritten for r in step.reads)
        if stale[step.name] and step.writes not in staged and (not only or step.name in only):
            rewritten.add(step.writes)
    needed: dict[str, str] = {}  # intermediate entry -> the step that needs it
    for step, _ in reversed(plan):
        if step.writes in staged:
            runs = stale[step.name] and step.writes in needed
        else:
            runs = stale[step.name] and (not only or step.name in only)
        if runs:
            for r in step.reads:
                if r in staged:
                    needed.setdefault(r, step.name)
    outcome: dict[str, Outcome] = {}
    ran: set[str] = set()
    # the run: each key again just before its step, since a step that ran rewrote what it wrote
    for step, key, folder in keyed({}, {}):
        # a dry run rewrites nothing: a step is stale there when the plan says it will be
        if done(step, key, folder) and not (dry_run and stale[step.name]):
            log(f"{step.name}: up to date ({folder})")
            outcome[step.name] = Outcome(step.name, False, key)
            continue
        if step.writes in staged and step.writes not in needed:
            log(f"{step.name}: not needed (an intermediate stage; nothing that reads it runs)")
            outcome[step.name] = Outcome(step.name, False, key)
            continue
        if only and step.name not in only and step.writes not in needed:
            log(f"{step.name}: not up to date, not asked for")
            outcome[step.name] = Outcome(step.name, False, key)
            continue
        if dry_run:
            why = f", needed by {needed[step.writes]}" if step.writes in needed else ""
            log(f"{step.name}: would run ({step.task}, profile {step.profile}{why})")
            outcome[step.name] = Outcome(step.name, False, key)
            continue
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
        _run(step, data, root, folder, base, reporter, log, other, staged)
        record_step(folder, step.name, key, time.perf_counter() - t0)
        outcome[step.name] = Outcome(step.name, True, key, time.perf_counter() - t0)
        ran.add(step.name)
    return [outcome.get(s.name) or Outcome(s.name, False, "") for s in recipe]


def intermediate_dir(root: Path) -> Path:
    """Where the intermediate entries of the bundle in `root` live: `$PERSPECT_CACHE`, else the
    user's cache (outside the repository, as the trainers' checkpoints), one folder per bundle
    (a test's scratch bundle never shares another's)."""
    tag = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:10]
    env = os.environ.get("PERSPECT_CACHE")
    home = Path(env) if env else trainer_work("intermediate").parent
    return home / "intermediate" / tag


def entry_folder(name: str, root: Path, staged: dict[str, str] | Sequence[str]) -> Path:
    """The folder of entry `name`: the bundle's, or for an intermediate one, the cache's."""
    return intermediate_dir(root) / name if name in staged else Path(root) / name


def _directed(folder: Path) -> bool:
    """Whether the entry's weights are a direction step's (one ran after its last argument
    step; the heads step after it changes only heads)."""
    names = [d.get("step") for d in done_steps(folder)]
    last = max((i for i, n in enumerate(names) if n == "argument"), default=-1)
    return "direction" in names[last + 1 :]


def record_step(folder: Path, name: str, key: str, seconds: float) -> None:
    """Append {step, key} to the entry's record (bundle.json; not itself checksummed)."""
    steps_done = [s for s in done_steps(folder) if s.get("step") != name]
    _write_steps(folder, [*steps_done, {"step": name, "key": key, "seconds": round(seconds)}])


def _write_steps(folder: Path, steps_done: list[dict]) -> None:
    """The entry's record of finished steps replaced, the manifest written whole or not at all."""
    f = folder / bundle.MANIFEST
    m = json.loads(f.read_text())
    m["record"]["steps"] = steps_done
    tmp = f.with_name(f".{f.name}.{os.getpid()}")
    tmp.write_text(json.dumps(m, indent=1) + "\n")
    tmp.replace(f)


def _run(step, data, root, folder, base, reporter, log, other: OtherData, staged=()) -> None:
    def entry(name: str) -> Path:
        return entry_folder(name, root, staged)

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
                           claimdiff=other.claimdiff, warm_start=entry("stance"),
                           **step.options)  # fmt: skip
        elif step.task == "argument":
            from perspect.lab.argument_fit import train_entry as train_argument

            train_argument(data, folder, log, argument=other.argument,
                           warm_start=entry("relation"), **step.options)  # fmt: skip
        elif step.task == "direction":  # from the argument model as the step before left it
            from perspect.lab.argument_fit import train_entry as train_argument

            opts = dict(step.options)
            work = trainer_work(opts.pop("work_name"))
            train_argument(data, folder, log, argument=other.argument, warm_start=folder,
                           direction=other.direction, work=work, **opts)  # fmt: skip
        elif step.task == "heads":
            from perspect.lab.argument_heads import fit_entry as fit_heads

            fit_heads(folder, data, other.claimdiff, other.inference, trainer_work("argument-heads"),
                      baseline=entry("relation"), log=log)  # fmt: skip
        elif step.task == "bearing":
            from perspect.lab.bearing_step import fit_entry as fit_bearing

            fit_bearing(folder, data, trainer_work("argument-bearing"), log)
        elif step.task == "news":
            from perspect.lab.news_fit import main as fit_news

            fit_news(["--argument", str(root / "argument"), "--pair", str(folder),
                      "--work", str(trainer_work("argument-news")), "--write"])  # fmt: skip
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
            eq, st = root / "equivalence", entry("relation")
            st = st if bundle.is_bundle(st) else entry("stance")
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
