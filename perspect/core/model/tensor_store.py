"""How the bundle stores a trained tensor (perspect.core.model.bundle packs and rebuilds with
these): as its int8 difference from the base's twin, a scale a row, where the base has one of the
same shape (a fine-tuned layer moves little from its base: the difference's rounding error is about
1e-4 of the weight, under float16's own, at half its bytes); as the rows appended to a grown
vocabulary; else in float16 when large, as it is otherwise. Why apart from the bundle's format: the
encodings are numeric choices, measured and tested on their own (tests/test_bundle.py)."""

from __future__ import annotations

HALF_MIN_ELEMENTS = 65_536  # float tensors at least this large are stored in float16 (or int8)
SCALE = "::int8_scale"  # the key of an int8 difference's row scales, beside its own key


def grown_from(base, t) -> bool:
    """`t` is `base` with rows appended (same columns, same leading rows at the bundle's float16
    storage precision: a model rebuilt from a bundle entry packs again the same way)."""
    import torch

    n = base.shape[0]
    return (
        base.dim() == t.dim() == 2
        and base.shape[1] == t.shape[1]
        and t.shape[0] > n
        and torch.equal(base.to(torch.float16), t[:n].to(torch.float16))
    )


def deltable(t) -> bool:
    return t.is_floating_point() and t.dim() == 2 and t.numel() >= HALF_MIN_ELEMENTS


def int8_delta(t, base):
    """`t - base` as int8 with one float32 scale a row (the row's largest difference / 127)."""
    import torch

    d = t.float() - base.float()
    scale = d.abs().amax(dim=1).clamp(min=1e-12) / 127
    q = torch.round(d / scale[:, None]).clamp(-127, 127).to(torch.int8)
    return q.contiguous(), scale.contiguous()


def stored(t):
    import torch

    if t.is_floating_point() and t.numel() >= HALF_MIN_ELEMENTS:
        return t.to(torch.float16).contiguous()
    return t.contiguous()
