"""The datasets Perspect is trained and scored on (PERSPECTRUM, ClaimDiff): readers, fetching,
metrics, the rule-based negation of a claim and the reference rows of published systems."""
