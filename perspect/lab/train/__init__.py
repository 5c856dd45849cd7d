"""The one home of training: every trainer of the bundle's models, apart from the models it trains.

Served models (perspect.reranker, perspect.retriever) never import from here, so serving pulls in
no training library (sentence-transformers' model/trainer split). Orchestration (steps, profiles,
decision fitting) is perspect.lab.fitting and perspect.lab.recipe; ClaimDiff's training and
evaluation are perspect.lab.claimdiff, its data perspect.core.datasets.claimdiff.

    pair.py         the pair model: relevance, stance, equivalence, evidence heads (pair_data.py)
    equivalence.py  the claim-conditioned equivalence cross-encoder
    dense.py        the bi-encoder; colbert.py the ColBERT model; st.py their shared trainer setup
    comparator.py   the ClaimDiff comparator's LoRA adapters and heads
    average.py      weight averaging (model soup)
"""
