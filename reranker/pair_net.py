"""The pair model's PyTorch network: the shared encoder, one linear head per task, and the graph
exported to ONNX. Kept apart from perspect.reranker.model so that a search served by ONNX Runtime
never imports torch or transformers (4-5 s of a cold start here)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from perspect.core.errors import ModelError
from perspect.reranker import imports


def load_encoder(name: str):
    with imports.LOCK:
        from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the base's unused pooling keys are expected, not news
    try:
        tok = AutoTokenizer.from_pretrained(name)
        enc = AutoModel.from_pretrained(name)
    except OSError as e:
        raise ModelError(
            f"cannot load base model {name!r}: {str(e).splitlines()[0]}",
            hint="pass a local model folder with --base, or go online for a hub id",
        ) from None
    return tok, enc


def freeze_lower(encoder: nn.Module, train_layers: int | None) -> None:
    """Train only the top `train_layers` transformer layers (and what sits above them).

    Why: the shipped bundle then holds those layers, not the whole encoder (the frozen rest comes
    from the base's registry package, unchanged bit for bit), and backward stops halfway, which is
    a third of a CPU step. None trains everything."""
    if train_layers is None:
        return
    layers = encoder.encoder.layer
    for p in encoder.embeddings.parameters():
        p.requires_grad_(False)
    for layer in layers[: max(0, len(layers) - train_layers)]:
        for p in layer.parameters():
            p.requires_grad_(False)


class MultiHeadCrossEncoder(nn.Module):
    def __init__(self, encoder: nn.Module, tasks: Sequence[str]):
        super().__init__()
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.heads = nn.ModuleDict({t: nn.Linear(hidden, 1) for t in tasks})

    def pooled(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
        return (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def forward(
        self, batch: dict[str, torch.Tensor], tasks: Sequence[str]
    ) -> dict[str, torch.Tensor]:
        h = self.pooled(batch)
        return {t: self.heads[t](h).squeeze(-1) for t in tasks}


class AllHeads(nn.Module):
    """Every head's logit from one forward pass, (batch, tasks): the graph exported to ONNX."""

    def __init__(self, net: MultiHeadCrossEncoder, tasks: Sequence[str]):
        super().__init__()
        self.net, self.tasks = net, list(tasks)

    def forward(self, input_ids, attention_mask, token_type_ids):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        h = self.net.pooled({**batch, "token_type_ids": token_type_ids})
        return torch.stack([self.net.heads[t](h).squeeze(-1) for t in self.tasks], -1)
