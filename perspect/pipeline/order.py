"""The last stage: both sides interleaved, and the coverage line that warns when one is thin, or
when a side rests only on sentences mined from the reader's documents or the news (from one
outlet, maybe): a reader weighs one newspaper's case differently from a curated debate's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perspect.core.result import Coverage, PerspectiveCluster


def interleave(clusters: list[PerspectiveCluster]) -> list[PerspectiveCluster]:
    """Alternate sides, strongest first on each, so neither side is buried below the other;
    unclear clusters come after both, best first."""
    sup = [c for c in clusters if c.stance == "support"]
    opp = [c for c in clusters if c.stance == "oppose"]
    out: list[PerspectiveCluster] = []
    while sup or opp:
        first, second = (
            (sup, opp) if (sup and (not opp or sup[0].score >= opp[0].score)) else (opp, sup)
        )
        out.append(first.pop(0))
        if second:
            out.append(second.pop(0))
    return out + [c for c in clusters if c.stance not in ("support", "oppose")]


def coverage(n_sup: int, n_opp: int, thin: float, n_unclear: int = 0) -> Coverage:
    """The balance of the sides (unclear clusters stand outside it) and its warning."""
    total = n_sup + n_opp
    warning = None
    if total == 0 and n_unclear:
        warning = f"no side could be told for any perspective ({n_unclear} unclear)"
    elif total == 0:
        warning = "no perspective passed the relevance threshold"
    elif n_sup == 0 or n_opp == 0:
        empty = "supporting" if n_sup == 0 else "opposing"
        warning = f"no {empty} perspective found: the index may be one-sided on this claim"
    elif min(n_sup, n_opp) / total < thin:
        thin_side = "supporting" if n_sup < n_opp else "opposing"
        warning = f"few {thin_side} perspectives ({min(n_sup, n_opp)} of {total})"
    return Coverage(n_sup, n_opp, warning, n_unclear)


def thin_sources(clusters: Sequence[PerspectiveCluster]) -> tuple[str, ...]:
    """One note per side whose every cluster was mined (no curated perspective makes any of its
    points): how many outlets (else articles) carry it, named when it is one."""
    notes = []
    for stance, name in (("support", "supporting"), ("oppose", "opposing")):
        side = [c for c in clusters if c.stance == stance]
        if not side or not all(c.mined_only for c in side):
            continue
        sources = list(dict.fromkeys(s for c in side for s in c.sources))
        where = f"one source ({sources[0]})" if len(sources) == 1 else f"{len(sources)} sources"
        notes.append(f"the {name} side comes only from mined sentences, from {where}")
    return tuple(notes)


def retriever_mismatch(manifest: dict, retrievers: Sequence[str]) -> str | None:
    """Why relevance is off on this index, or None. The relevance stack reads the fused RRF score,
    which grows with the number of retrievers: decisions fitted on BM25 + dense + ColBERT keep
    too few perspectives on a BM25 + dense index (T1 24.1 vs 54.7 on 40 dev claims)."""
    fitted = manifest.get("decisions_retrievers")
    if not fitted or set(fitted) == set(retrievers):
        return None
    return (
        f"the models' decisions were fitted on a {' + '.join(fitted)} index and this one has "
        f"{' + '.join(retrievers)}: relevance is miscalibrated (rebuild it with --retrievers "
        f"{','.join(fitted)}, or re-fit: perspect train --task calibrate --index NAME)"
    )


def ordered(
    clusters: list[PerspectiveCluster], thin: float, manifest: dict, retrievers: Sequence[str]
) -> tuple[list[PerspectiveCluster], Coverage]:
    """The clusters in the order shown, and their coverage (with the retriever warning)."""
    out = interleave(clusters)
    n = {s: sum(1 for c in out if c.stance == s) for s in ("support", "oppose")}
    cov = coverage(n["support"], n["oppose"], thin, len(out) - n["support"] - n["oppose"])
    cov = replace(cov, thin=thin_sources(out))
    mismatch = retriever_mismatch(manifest, retrievers)
    if mismatch:
        note = "; ".join(x for x in (cov.warning, mismatch) if x)
        cov = replace(cov, warning=note)
    return out, cov
