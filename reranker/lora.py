"""Low-rank adapters (Hu et al. 2021) on the linear layers of a BERT-style encoder.

Why hand-written rather than peft: eight lines of arithmetic, and the bundle stores the adapter
tensors under names Perspect controls (no peft version pinned into a shipped file format). The
base weights stay frozen and bit-identical to the registry package, so a bundle entry holds only
the adapters (r * (in + out) numbers per layer).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale


def add_lora(encoder: nn.Module, rank: int, alpha: float) -> list[str]:
    """Freeze `encoder` and wrap every linear layer of its transformer blocks; returns their names."""
    for p in encoder.parameters():
        p.requires_grad_(False)
    names = [
        n
        for n, m in encoder.named_modules()
        if isinstance(m, nn.Linear) and ".layer." in f".{n}" and "pooler" not in n
    ]
    for n in names:
        parent_name, _, leaf = n.rpartition(".")
        parent = encoder.get_submodule(parent_name)
        setattr(parent, leaf, LoRALinear(getattr(parent, leaf), rank, alpha))
    return names


def lora_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {
        k: v.detach().contiguous()
        for k, v in module.state_dict().items()
        if k.endswith(("lora_a", "lora_b"))
    }


def merge_lora(module: nn.Module) -> int:
    """Fold every adapter into its base layer (W + scale * B @ A) for inference: the same outputs
    without the adapters' two extra matrix products per layer. Returns how many were merged."""
    merged = 0
    for name, m in list(module.named_modules()):
        if not isinstance(m, LoRALinear):
            continue
        with torch.no_grad():
            m.base.weight += (m.lora_b @ m.lora_a) * m.scale
        parent_name, _, leaf = name.rpartition(".")
        setattr(module.get_submodule(parent_name) if parent_name else module, leaf, m.base)
        merged += 1
    return merged
