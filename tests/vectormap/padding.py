"""Per-frame map dicts padded by hand: the batched form the tests compare the library's own conversion with."""

from __future__ import annotations

import torch


def pad_by_hand(frames: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The batched form written out: zero padding, ``lengths`` = each line's point count (0 for padding lines)."""
    lines, points = max(f["points"].shape[0] for f in frames), max(f["points"].shape[1] for f in frames)
    out = {"points": torch.zeros(len(frames), lines, points, 2), "lengths": torch.zeros(len(frames), lines).long()}
    for key in set(frames[0]) - {"points"}:
        out[key] = torch.zeros(len(frames), lines, dtype=frames[0][key].dtype)
    for b, f in enumerate(frames):
        m, q = f["points"].shape[:2]
        out["points"][b, :m, :q] = f["points"]
        out["lengths"][b, :m] = q
        for key in set(f) - {"points"}:
            out[key][b, :m] = f[key]
    return out
