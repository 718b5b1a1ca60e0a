"""Evaluating map-AP files: pair prediction samples with GT samples by token, pack them, run the protocol."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from drivemetrics.vectormap.io import MapSample, pack_samples, read_map_gt, read_map_preds
from drivemetrics.vectormap.map_ap import vector_map_ap_from_matches, vector_map_matches
from drivemetrics.vectormap.protocol import get_protocol

__all__ = ["MapEvaluation", "evaluate_map_files", "evaluate_map_samples"]

#: file format of each preset (the default protocol reads either, detected from the content)
PROTOCOL_FORMATS = {"nuscenes-maptr": "maptr", "av2-cvpr23": "av2"}


@dataclass
class MapEvaluation:
    """Result of a file evaluation: the report dict and the prediction tokens without GT (ignored)."""

    report: dict[str, Any]
    unknown_samples: list[str]


def evaluate_map_samples(
    gt: list[MapSample],
    preds: list[MapSample],
    protocol: str = "default",
    device: torch.device | str = "cpu",
    batch_size: int = 2000,
) -> MapEvaluation:
    """Evaluate prediction samples against GT samples (paired by token; GT without predictions count as empty).

    Returns:
        ``report = {"mAP": float, "classes": {name: {"AP", "AP@<thr>", "num_gts", "num_preds"}}}``.

    >>> import numpy as np
    >>> gt = [MapSample("a", [np.array([[0.0, 0.0], [0.0, 10.0]])], ["divider"])]
    >>> pred = [MapSample("a", [np.array([[0.7, 0.0], [0.7, 10.0]])], ["divider"], [0.9])]
    >>> evaluate_map_samples(gt, pred, "av2-cvpr23").report["classes"]["divider"]["AP@1.0"]
    1.0
    """
    proto = get_protocol(protocol)
    gt_tokens = {s.token for s in gt}
    by_token: dict[str, MapSample] = {}
    for sample in preds:
        if sample.token in by_token:
            raise ValueError(f"prediction sample {sample.token} appears twice")
        by_token[sample.token] = sample
    unknown = [s.token for s in preds if s.token not in gt_tokens]
    paired = [by_token.get(s.token, MapSample(s.token)) for s in gt]
    pred_dims = min((p.shape[1] for s in paired for p in s.points), default=2)
    if proto.dims == "2d" and pred_dims != 2:
        raise ValueError(
            f"protocol {proto.name!r} evaluates 2-D predictions; the prediction file has {pred_dims}-D points"
        )
    gt_dims = 2 if proto.dims == "2d" else pred_dims
    pieces = []
    for start in range(0, len(gt), batch_size):
        gt_part = pack_samples(gt[start : start + batch_size], proto.class_names, gt_dims, device=device)
        pred_part = pack_samples(paired[start : start + batch_size], proto.class_names, pred_dims, device=device)
        pieces.append(
            vector_map_matches(
                pred_part["points"],
                pred_part["lengths"],
                pred_part["labels"],
                pred_part["scores"],
                gt_part["points"],
                gt_part["lengths"],
                gt_part["labels"],
                proto,
            )
        )
    if pieces:
        scores = torch.cat([p["scores"] for p in pieces])
        labels = torch.cat([p["labels"] for p in pieces])
        tp = torch.cat([p["true_positive"] for p in pieces])
        num_targets = torch.stack([p["num_targets"] for p in pieces]).sum(0)
    else:
        scores = torch.zeros(0, dtype=torch.float64)
        labels = torch.zeros(0, dtype=torch.long)
        tp = torch.zeros(0, len(proto.thresholds), dtype=torch.bool)
        num_targets = torch.zeros(len(proto.class_names), dtype=torch.long)
    out = vector_map_ap_from_matches(scores, labels, tp, num_targets, proto)
    classes: dict[str, dict[str, float | int]] = {}
    for c, name in enumerate(proto.class_names):
        entry: dict[str, float | int] = {"AP": float(out["ap"][c])}
        for t, threshold in enumerate(proto.thresholds):
            entry[f"AP@{threshold}"] = float(out["ap_per_threshold"][c, t])
        entry["num_gts"] = int(out["num_targets"][c])
        entry["num_preds"] = int(out["num_preds"][c])
        classes[name] = entry
    return MapEvaluation({"mAP": float(out["map"]), "classes": classes}, unknown)


def evaluate_map_files(
    gt_path: str | Path,
    pred_path: str | Path,
    protocol: str = "default",
    device: torch.device | str = "cpu",
) -> MapEvaluation:
    """Read a GT and a prediction file in the protocol's native format and evaluate them."""
    fmt = PROTOCOL_FORMATS.get(get_protocol(protocol).name)
    gt = read_map_gt(gt_path, fmt)  # type: ignore[arg-type]
    preds = read_map_preds(pred_path, fmt)  # type: ignore[arg-type]
    return evaluate_map_samples(gt, preds, protocol, device)
