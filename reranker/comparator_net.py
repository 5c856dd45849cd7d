"""The comparator's PyTorch network (relation head on the pooled states, rationale head per
token) and its ONNX export; apart from perspect.reranker.comparator so that serving it on ONNX
Runtime imports no torch."""

from __future__ import annotations

import torch
from torch import nn

from perspect.core.datasets.claimdiff import RELATIONS


class ComparatorNet(nn.Module):
    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.relation = nn.Linear(hidden, len(RELATIONS))
        self.rationale = nn.Linear(hidden, 1)

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        states = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.relation(pooled), self.rationale(states).squeeze(-1)

    def heads_state(self) -> dict[str, torch.Tensor]:
        return {
            f"{name}.{k}": v.detach().contiguous()
            for name in ("relation", "rationale")
            for k, v in getattr(self, name).state_dict().items()
        }


class Exported(nn.Module):
    """Positional inputs for the exporter; both heads' logits out."""

    def __init__(self, net: ComparatorNet):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask, token_type_ids):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        return self.net({**batch, "token_type_ids": token_type_ids})
