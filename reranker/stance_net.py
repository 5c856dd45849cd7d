"""The stance trunk's PyTorch network: all-mpnet-base-v2 decomposed (PreTTR, MacAvaney et al.
SIGIR 2020; DeFormer, Cao et al. ACL 2020), LoRA adapters (peft) on its top layers, linear heads.

Why decomposed: the claim and the perspective each go alone through the frozen lower layers and
meet only in the top ones, so a perspective's lower states are index-time data and a search pays
the claim's lower layers once plus the top layers per candidate. Trained the way it serves (issue
33's study: stance AUROC 77.3 -> 84.6 on dev over the shipped MiniLM pair model).
Why adapters: only they and the heads ship (a few MB); the base comes from its registry packages.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from perspect.reranker import imports

ADAPTER_TARGETS = ["q", "k", "v", "o", "dense"]


def load_base(path: str):
    with imports.LOCK:
        from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the masked-LM keys the base does not use are expected
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path, attn_implementation="eager", add_pooling_layer=False)
    for p in enc.parameters():
        p.requires_grad_(False)
    return tok, enc.eval()


def lora_config(n_layers: int, n_top: int, rank: int, alpha: int, dropout: float = 0.1):
    from peft import LoraConfig

    return LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=ADAPTER_TARGETS,
        layers_to_transform=list(range(n_layers - n_top, n_layers)),
        layers_pattern="layer",
        bias="none",
    )


class DecomposedNet(nn.Module):
    """Lower layers per text, top layers (with adapters) over [claim; perspective], mean pooling,
    one head per task. `encoder` is the base MPNetModel with the adapters injected in place."""

    def __init__(self, encoder: nn.Module, n_top: int, heads: dict[str, int]):
        super().__init__()
        self.encoder = encoder
        layers = encoder.encoder.layer
        self.n_top = n_top
        self.lower_layers = list(layers[: len(layers) - n_top])
        self.top_layers = list(layers[len(layers) - n_top :])
        self.hidden = encoder.config.hidden_size
        self.drop = nn.Dropout(0.1)
        self.heads = nn.ModuleDict({k: nn.Linear(self.hidden, n) for k, n in heads.items()})

    def _run(self, layers, h: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        bias = self.encoder.encoder.compute_position_bias(h)
        ext = (1.0 - att[:, None, None, :].to(h.dtype)) * -1e4
        for layer in layers:
            o = layer(h, attention_mask=ext, position_bias=bias)
            h = o[0] if isinstance(o, tuple) else o
        return h

    def pool(self, seqs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Mean-pooled top-layer states of each joined sequence: what every head reads (a
        multi-task step scores several heads from one pass)."""
        n = max(len(s) for s in seqs)
        h = torch.zeros(len(seqs), n, self.hidden, dtype=seqs[0].dtype)
        att = torch.zeros(len(seqs), n, dtype=torch.long)
        for i, s in enumerate(seqs):
            h[i, : len(s)] = s
            att[i, : len(s)] = 1
        out = self._run(self.top_layers, h, att)
        m = att.unsqueeze(-1).to(out.dtype)
        return (out * m).sum(1) / m.sum(1)

    @torch.no_grad()
    def lower(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Token states after the frozen lower layers, one text per row (each text alone)."""
        h = self.encoder.embeddings(input_ids=input_ids)
        return self._run(self.lower_layers, h, attention_mask)

    def forward(self, seqs: Sequence[torch.Tensor], task: str) -> torch.Tensor:
        """Logits of `task` for each joined sequence (claim states then perspective states)."""
        return self.heads[task](self.drop(self.pool(seqs))).float()


class LowerGraph(nn.Module):
    """(input_ids, attention_mask) -> lower-layer states: the graph exported to ONNX."""

    def __init__(self, net: DecomposedNet):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask):
        h = self.net.encoder.embeddings(input_ids=input_ids)
        return self.net._run(self.net.lower_layers, h, attention_mask)


class TopGraph(nn.Module):
    """(joined states, attention_mask) -> every head's logits side by side, in `net.heads`'
    order (a stance-only trunk: one column): the graph exported to ONNX."""

    def __init__(self, net: DecomposedNet):
        super().__init__()
        self.net = net

    def forward(self, states, attention_mask):
        out = self.net._run(self.net.top_layers, states, attention_mask)
        m = attention_mask.unsqueeze(-1).to(out.dtype)
        pooled = (out * m).sum(1) / m.sum(1)
        return torch.cat([head(pooled) for head in self.net.heads.values()], -1)
