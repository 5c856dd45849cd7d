"""The comparator's PyTorch network (relation head on the pooled states, rationale head per
token), its LoRA adapters (peft, as the stance trunk's) and its ONNX export; apart from
perspect.reranker.comparator so that serving it on ONNX Runtime imports no torch."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from perspect.core.datasets.claimdiff import RELATIONS
from perspect.core.errors import ModelError

# every linear layer of the encoder's blocks (attention query, key, value and output; the
# feed-forward pair), not the pooler: peft matches the whole module name against it
ADAPTER_TARGETS = r".*\.layer\.\d+\..*(query|key|value|dense)"
ADAPTER_WEIGHTS = "adapter_model.safetensors"  # peft's names in an adapter folder
NLI_LABELS = ("entailment", "neutral", "contradiction")


def lora_config(rank: int, alpha: float):
    """Low-rank adapters (Hu et al. 2021) of rank `rank`, scaled by alpha / rank, no dropout."""
    from peft import LoraConfig

    return LoraConfig(
        r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=ADAPTER_TARGETS, bias="none"
    )


def with_adapters(encoder: nn.Module, rank: int, alpha: float):
    """`encoder` frozen, with fresh adapters to train (B = 0: the base's outputs to start)."""
    from peft import get_peft_model

    return get_peft_model(encoder, lora_config(rank, alpha))


def load_adapters(encoder: nn.Module, folder: Path):
    """`encoder` with the adapters saved in `folder` (peft's layout: adapter_config.json and
    adapter_model.safetensors); refused in one line when they do not fit it."""
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    try:
        config = LoraConfig.from_pretrained(str(folder))
        config.base_model_name_or_path = None  # the entry's encoder, checked by its bundle.json
        model = get_peft_model(encoder, config)
        stored = load_file(str(folder / ADAPTER_WEIGHTS))
        got = set_peft_model_state_dict(model, stored)
    except (OSError, ValueError, RuntimeError) as e:
        raise ModelError(f"cannot read the comparator's adapters in {folder}: {e}") from None
    if got.unexpected_keys or any("lora_" in k for k in got.missing_keys):
        raise ModelError(f"{folder} does not fit its encoder", hint="retrain it")
    return model


def save_adapters(encoder: nn.Module, folder: Path, base: str) -> None:
    """The adapters of `encoder` (a peft model) into `folder`, in peft's layout, in float16 (half
    the bytes; the adapters' deltas are small numbers near zero). `base`: the base's name, which
    the config records (not the local folder it was loaded from)."""
    from peft import PeftModel, get_peft_model_state_dict
    from safetensors.torch import save_file

    if not isinstance(encoder, PeftModel):
        raise ModelError("a loaded comparator has its adapters merged: save the one training made")
    state = get_peft_model_state_dict(encoder, save_embedding_layers=False)  # none are adapted
    folder.mkdir(parents=True, exist_ok=True)
    config = encoder.peft_config["default"]
    config.base_model_name_or_path = base
    config.save_pretrained(str(folder))
    half = {k: v.half().contiguous() for k, v in state.items()}
    save_file(half, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})


class ComparatorNet(nn.Module):
    """`nli`: a third head, three-way inference (entailment / neutral / contradiction) on the same
    pooled states: the joint reader of issue 41, where both texts meet from the first layer."""

    def __init__(self, encoder: nn.Module, nli: bool = False):
        super().__init__()
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.relation = nn.Linear(hidden, len(RELATIONS))
        self.rationale = nn.Linear(hidden, 1)
        self.nli = nn.Linear(hidden, len(NLI_LABELS)) if nli else None

    def heads(self) -> tuple[str, ...]:
        return ("relation", "rationale") + (("nli",) if self.nli is not None else ())

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """(relation logits, rationale logits per token[, inference logits])."""
        states = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        out = (self.relation(pooled), self.rationale(states).squeeze(-1))
        return (*out, self.nli(pooled)) if self.nli is not None else out

    def merge_adapters(self) -> int:
        """Fold each adapter into its layer (W + alpha / r * B @ A) for inference: the same outputs
        without the adapters' two extra matrix products per layer. Returns how many were merged."""
        from peft import PeftModel
        from peft.tuners.lora import LoraLayer

        if not isinstance(self.encoder, PeftModel):
            return 0
        merged = sum(isinstance(m, LoraLayer) for m in self.encoder.modules())
        self.encoder = self.encoder.merge_and_unload()
        return merged

    def heads_state(self) -> dict[str, torch.Tensor]:
        return {
            f"{name}.{k}": v.detach().contiguous()
            for name in self.heads()
            for k, v in getattr(self, name).state_dict().items()
        }


class Exported(nn.Module):
    """Positional inputs for the exporter; every head's logits out."""

    def __init__(self, net: ComparatorNet):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask, token_type_ids):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        return self.net({**batch, "token_type_ids": token_type_ids})
