"""MapTracker's consistency-aware map AP (C-mAP) as Metrics: frames arrive one batch at a time with their scene
and ego pose; tracks are formed and scored per scene in ``compute`` (the rules are in
:mod:`drivemetrics.vectormap.consistency`).

Distributed training: every scene must be updated on one process (a sampler that keeps scenes whole, e.g. one
scene per rank or a scene-wise ``DistributedSampler``); ``compute`` raises a ``ValueError`` naming the scene when
its frames came from two processes, as track ids cannot be linked across them.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.ragged import RaggedRows, RaggedStateMixin
from drivemetrics._internal.validation import check_coordinates_within_limit, check_finite
from drivemetrics.vectormap.consistency import (
    CMAP_CLASSES,
    Compat,
    consistent_true_positive,
    evaluate_cmap,
)
from drivemetrics.vectormap.protocol import STREAM_RANGES

__all__ = [
    "ConsistentMapAPMetrics",
    "ConsistentMapAveragePrecision",
    "ConsistentMapMeanAveragePrecision",
    "consistent_true_positive",
]


def _scene_ids(scene: Sequence[str] | Sequence[int] | Tensor, count: int) -> Tensor:
    """``(B,)`` int64 scene ids: integers as given, names by their CRC-32 (names must not collide)."""
    if arrays.is_tensor(scene):
        ids = scene.reshape(-1).to(torch.int64)
    else:
        values = list(scene)
        if values and all(isinstance(v, str) for v in values):
            ids = torch.tensor([zlib.crc32(str(v).encode()) for v in values], dtype=torch.int64)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            ids = torch.tensor([int(v) for v in values if isinstance(v, (int, np.integer))], dtype=torch.int64)
        else:
            raise ValueError("`scene` must be one name (str) or one integer id per frame")
    if ids.numel() != count:
        raise ValueError(f"`scene` must hold one id per frame ({count}), got {ids.numel()}")
    return ids


def _lines(
    data: Mapping[str, Tensor], name: str, with_scores: bool, validate: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``points (B, N, P, 2)``, ``lengths (B, N)``, ``labels (B, N)`` and ``scores (B, N)`` of a batch dict."""
    if not isinstance(data, Mapping) or "points" not in data or "labels" not in data:
        raise ValueError(f"`{name}` must be a dict with `points` (B, N, P, 2) and `labels` (B, N)")
    points, labels = data["points"], data["labels"]
    if points.ndim != 4 or points.shape[-1] != 2:
        raise ValueError(f"`{name}['points']` must be (B, N, P, 2) metres, got shape {tuple(points.shape)}")
    if labels.shape != points.shape[:2]:
        raise ValueError(f"`{name}['labels']` must be {tuple(points.shape[:2])}, got {tuple(labels.shape)}")
    lengths = data.get("lengths")
    if lengths is None:
        lengths = torch.full(points.shape[:2], points.shape[2], dtype=torch.int64, device=points.device)
    elif lengths.shape != points.shape[:2]:
        raise ValueError(f"`{name}['lengths']` must be {tuple(points.shape[:2])}, got {tuple(lengths.shape)}")
    scores = data.get("scores") if with_scores else None
    if with_scores and (scores is None or scores.shape != points.shape[:2]):
        raise ValueError(f"`{name}['scores']` must be {tuple(points.shape[:2])}")
    if validate:
        present = lengths > 0
        if bool(((lengths < 0) | (lengths > points.shape[2]) | (lengths == 1)).any()):
            raise ValueError(f"`{name}['lengths']` must be 0 (padding) or 2 to P")
        if bool((present & ((labels < 0) | (labels >= len(CMAP_CLASSES)))).any()):
            raise ValueError(f"`{name}['labels']` must be class ids 0 (ped_crossing), 1 (divider), 2 (boundary)")
        # finite and within the map readers' limit (`max_map_coordinate`, metres), as the commands
        check_coordinates_within_limit(points[present], f"{name}['points']", limit="max_map_coordinate")
        if scores is not None and not bool(((scores[present] >= 0) & (scores[present] <= 1)).all()):
            raise ValueError(f"`{name}['scores']` must lie in [0, 1]")
    return points, lengths, labels, scores


def _rows(points: Tensor, lengths: Tensor, labels: Tensor, scores: Tensor | None) -> RaggedRows:
    """One frame per batch row: a row per point ``(line, class id, [score,] x, y)`` float64."""
    batch, lines, width = points.shape[:3]
    point_valid = torch.arange(width, device=points.device)[None, None, :] < lengths[:, :, None]
    line_index = torch.arange(lines, device=points.device)[None, :, None].expand(batch, lines, width)
    columns = [line_index.to(torch.float64), labels[:, :, None].expand(batch, lines, width).to(torch.float64)]
    if scores is not None:
        columns.append(scores[:, :, None].expand(batch, lines, width).to(torch.float64))
    columns += [points[..., 0].to(torch.float64), points[..., 1].to(torch.float64)]
    table = torch.stack(columns, -1)[point_valid]
    return RaggedRows(table, point_valid.reshape(batch, -1).sum(1).to(torch.int64))


class ConsistentMapAPMetrics(RaggedStateMixin, MetricFamily):
    """MapTracker's C-mAP and the plain mAP of the same predictions over scenes (a dict).

    ``compute()`` returns ``{"cmap", "map", "cap_<class>", "ap_<class>", "cap_<class>_<thr>", "ap_<class>_<thr>"}``
    (``cap``: consistency-aware). Each ``update`` takes a batch of frames with their scene and ego pose; a scene's
    frames must arrive in time order, on one process. State: the frames' lines as ragged rows (one gather across
    processes), scored when computed (tracks need whole scenes).

    Args:
        roi: perception range, ``"60x30"`` or ``"100x50"`` (thresholds 0.5 / 1.0 / 1.5 or 1.0 / 1.5 / 2.0 m).
        compat: ``"default"`` (the library's fixes) or ``"reference"`` (MapTracker's tools), see
            :mod:`drivemetrics.vectormap.consistency`.
        validate_args: check shapes, labels, lengths, points finite and within ``max_map_coordinate``, poses
            finite and scores in [0, 1] in ``update``.

    Examples:
        >>> import torch
        >>> from drivemetrics.vectormap import ConsistentMapAPMetrics
        >>> metric = ConsistentMapAPMetrics(roi="60x30")
        >>> line = torch.tensor([[[[-20.0, 1.0], [20.0, 1.0]]]])  # (B, N, P, 2): one frame, one divider
        >>> for k in range(3):  # the ego drives 2 m forward per frame
        ...     pose = torch.eye(4)[None].clone()
        ...     pose[0, 0, 3] = 2.0 * k
        ...     target = {"points": line - torch.tensor([2.0 * k, 0.0]), "labels": torch.tensor([[1]])}
        ...     preds = {"points": target["points"] + torch.tensor([0.0, 0.2]), "labels": torch.tensor([[1]]),
        ...              "scores": torch.tensor([[0.9]])}
        ...     metric.update(preds, target, scene=["scene-1"], pose=pose)
        >>> out = metric.compute()
        >>> out["cmap"].item(), out["cap_divider_0.5"].item()
        (0.3333333333333333, 1.0)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, roi: str = "60x30", compat: Compat = "default", validate_args: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        if roi not in STREAM_RANGES:
            raise ValueError(f"`roi` must be one of {tuple(STREAM_RANGES)}, got {roi!r}")
        if compat not in ("default", "reference"):
            raise ValueError(f"`compat` must be 'default' or 'reference', got {compat!r}")
        self.roi, self.compat, self.validate_args = roi, compat, bool(validate_args)
        self.thresholds = STREAM_RANGES[roi]
        # per frame: one row (scene id, process rank, pose 4 x 4); per point of a line: (line, class, [score,] x, y)
        self.add_ragged_state(frame=((18,), torch.float64), preds=((5,), torch.float64), target=((4,), torch.float64))
        add_config_state(self, (roi, compat))

    def update(
        self,
        preds: Mapping[str, Tensor],
        target: Mapping[str, Tensor],
        *,
        scene: Sequence[str] | Sequence[int] | Tensor,
        pose: Tensor,
    ) -> None:
        """Add a batch of ``B`` frames: ``preds`` ``{"points" (B, N, P, 2), "labels" (B, N), "scores" (B, N),
        "lengths" (B, N) optional}`` and ``target`` (the same without scores), metres in each frame's ego frame;
        ``scene``: one name or integer id per frame; ``pose``: ``(B, 4, 4)`` ego -> global of each frame."""
        pred_points, pred_lengths, pred_labels, scores = _lines(preds, "preds", True, self.validate_args)
        gt_points, gt_lengths, gt_labels, _ = _lines(target, "target", False, self.validate_args)
        batch = pred_points.shape[0]
        if gt_points.shape[0] != batch:
            raise ValueError(f"`preds` and `target` differ in frames ({batch}, {gt_points.shape[0]})")
        if pose.shape != (batch, 4, 4):
            raise ValueError(f"`pose` must be ({batch}, 4, 4) ego -> global, got {tuple(pose.shape)}")
        if self.validate_args:
            check_finite(pose, "pose")  # global frame: beyond the ego-frame limit
        ids = _scene_ids(scene, batch).to(pose.device)
        rank = (
            torch.distributed.get_rank()
            if torch.distributed.is_available() and torch.distributed.is_initialized()
            else 0
        )
        frame = torch.cat(
            [
                ids[:, None].to(torch.float64),
                torch.full((batch, 1), float(rank), device=pose.device, dtype=torch.float64),
                pose.reshape(batch, 16).to(torch.float64),
            ],
            1,
        )
        self.append_frames(
            frame=RaggedRows(frame, torch.ones(batch, dtype=torch.int64, device=pose.device)),
            preds=_rows(pred_points, pred_lengths, pred_labels, scores),
            target=_rows(gt_points, gt_lengths, gt_labels, None),
        )

    def compute(self) -> dict[str, Tensor]:
        """``cmap``, ``map``, ``cap_<class>``, ``ap_<class>`` and their values at each threshold (float64)."""
        from drivemetrics.vectormap.io import MapFrame, MapSample

        held = self.ragged_frames()
        frame_rows = held.fields["frame"].rows.cpu().numpy()
        pred_parts = [p.cpu().numpy() for p in held.fields["preds"].split()]
        gt_parts = [p.cpu().numpy() for p in held.fields["target"].split()]
        scene_rank: dict[int, int] = {}
        frames, gt, preds = [], [], []
        for f, row in enumerate(frame_rows):
            scene_id, rank = int(row[0]), int(row[1])
            if scene_rank.setdefault(scene_id, rank) != rank:
                raise ValueError(
                    f"scene {scene_id}: frames from processes {scene_rank[scene_id]} and {rank}; C-mAP links tracks "
                    "within a scene, so each scene must be updated on one process (a sampler that keeps scenes whole)"
                )
            pose = row[2:].reshape(4, 4)
            frames.append(MapFrame(f"f{f}", str(scene_id), 0, pose[:3, 3].copy(), pose[:3, :3].copy()))
            gt.append(_sample(f"f{f}", gt_parts[f], with_scores=False))
            preds.append(_sample(f"f{f}", pred_parts[f], with_scores=True))
        order = sorted(range(len(frames)), key=lambda f: frames[f].scene)  # stable: time order within a scene
        counter: dict[str, int] = {}
        for f in order:
            frames[f].index = counter.get(frames[f].scene, 0)
            counter[frames[f].scene] = frames[f].index + 1
        result = evaluate_cmap(
            [frames[f] for f in order], [gt[f] for f in order], preds, self.roi, self.compat, details=False
        )
        out: dict[str, Tensor] = {}
        for mode, prefix, total in (("cmap", "cap", "cmap"), ("plain", "ap", "map")):
            block = result[mode]
            out[total] = torch.tensor(block["mAP"], dtype=torch.float64, device=self.device)
            for name, entry in block["per_class"].items():
                out[f"{prefix}_{name}"] = torch.tensor(entry["AP"], dtype=torch.float64, device=self.device)
                for threshold in self.thresholds:
                    value = entry[f"AP@{threshold}"]
                    out[f"{prefix}_{name}_{threshold:g}"] = torch.tensor(value, dtype=torch.float64, device=self.device)
        del MapSample
        return out


def _sample(token: str, rows: np.ndarray, with_scores: bool) -> Any:
    """A :class:`~drivemetrics.vectormap.io.MapSample` from one frame's point rows (:func:`_rows`)."""
    from drivemetrics.vectormap.io import MapSample

    sample = MapSample(token)
    if not len(rows):
        return sample
    line = rows[:, 0].astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], line[1:] != line[:-1]]))
    for start, stop in zip(starts, [*starts[1:], len(rows)], strict=True):
        sample.points.append(rows[start:stop, -2:])
        sample.labels.append(CMAP_CLASSES[int(rows[start, 1])])
        if with_scores:
            sample.scores.append(float(rows[start, 2]))
    return sample


class ConsistentMapMeanAveragePrecision(ScalarMetric, ConsistentMapAPMetrics):
    """MapTracker's C-mAP (mean over classes and thresholds), one tensor (arguments as
    :class:`ConsistentMapAPMetrics`).

    Examples:
        >>> from drivemetrics.vectormap import ConsistentMapMeanAveragePrecision, consistent_map_example_inputs
        >>> ConsistentMapMeanAveragePrecision()(**consistent_map_example_inputs())
        tensor(0.4444, dtype=torch.float64)
    """

    key = "cmap"


class ConsistentMapAveragePrecision(ScalarMetric, ConsistentMapAPMetrics):
    """AP of one class, consistency-aware (``consistent=True``) or plain, over the thresholds or at one, one tensor.

    Args:
        class_name: ``ped_crossing``, ``divider`` or ``boundary``.
        threshold: one of the range's thresholds for the AP at it alone; ``None`` for the mean.
        consistent: the C-mAP rule (``True``) or the plain AP of the same predictions.
        roi: see :class:`ConsistentMapAPMetrics`.
        compat: see :class:`ConsistentMapAPMetrics`.

    Examples:
        >>> from drivemetrics.vectormap import ConsistentMapAveragePrecision, consistent_map_example_inputs
        >>> metric = ConsistentMapAveragePrecision("divider", threshold=1.0, consistent=False)
        >>> metric(**consistent_map_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    def __init__(
        self,
        class_name: str,
        threshold: float | None = None,
        consistent: bool = True,
        roi: str = "60x30",
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(roi=roi, compat=compat, validate_args=validate_args, **kwargs)
        if class_name not in CMAP_CLASSES:
            raise ValueError(f"`class_name` must be one of {CMAP_CLASSES}, got {class_name!r}")
        if threshold is not None and float(threshold) not in self.thresholds:
            raise ValueError(f"`threshold` must be one of {self.thresholds}, got {threshold}")
        self.class_name = class_name
        self.prefix = "cap" if consistent else "ap"
        self.at_threshold = "" if threshold is None else f"_{float(threshold):g}"

    key = "{prefix}_{class_name}{at_threshold}"
