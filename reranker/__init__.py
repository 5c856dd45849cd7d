"""Pairwise models over a claim (relevance, stance, equivalence, evidence, ClaimDiff) and training."""
