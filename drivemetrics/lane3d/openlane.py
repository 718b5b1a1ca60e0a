"""OpenLane (v1) 3D lane scores: F-score, recall, precision, category accuracy and the x / z errors near
(y <= 40 m) and far, as batched kernels and a ``torchmetrics`` family. The steps' machinery lives in helper modules
(no Metric there): :mod:`~drivemetrics.lane3d.resample` (packed lanes, filter, resampling),
:mod:`~drivemetrics.lane3d.pairs` (pair costs, matched samples, errors) and :mod:`~drivemetrics.lane3d.assignment`
(the one-to-one assignment); this module holds the public kernels that chain them and the Metric classes.

Lanes are padded point sets ``(B, L, N, 3)`` in the evaluator's ground frame (metres; x right, y forward, z up,
origin on the ground below the camera) with per-lane point counts ``(B, L)``. The pipeline, one frame or a batch:

1. :func:`openlane3d_resample`: keep the valid points (GT: the visible ones), keep a lane whose first point lies
   before y = 102 m and last point after y = 3 m, keep points with 0 < y < 200 and -10 < x < 10, resample x and
   z at y = 3, 4, ..., 102 m by linear interpolation over y (``scipy.interpolate.interp1d`` with extrapolation); a
   sample is visible when -10 <= x <= 10 and y lies in the lane's range; lanes need 2 visible samples.
2. :func:`openlane3d_pair_matrices`: for every GT x prediction pair, the cost (sum over samples of the point
   distance where both are visible, 1.5 m where only one is), the matched samples (both visible, closer than
   1.5 m) and the mean |dx| / |dz| near and far.
3. :func:`openlane3d_matches`: the assignment (maximum cardinality, minimal cost; scipy on the CPU), the hits at
   0.75 of the visible samples, the category and error sums per frame.

``compat="reference"`` reproduces ``eval_3D_lane.py`` of OpenDriveLab/OpenLane (commit 8a0ce6b). The default
mode fixes five of its rules (see the docs page "3D lanes (OpenLane)"):

- categories: left and right curb (20, 21) are interchangeable both ways (the tool accepts a predicted 20 for a
  GT 21, but not a 21 for a 20);
- the pair cost is the float sum (the tool truncates it to an int, which reorders close pairs);
- pairs costing 150 or more are gated *before* the assignment (the tool assigns first, then drops them, so an
  impossible pair can take a GT lane away from a valid match);
- annotated but invisible GT points are "don't care": predicted samples within 1.5 m of them count neither as a
  hit nor as a miss (the tool drops them from the GT only, so a copy of the GT scores a precision below 1);
- a lane listed far to near is evaluated (the tool checks its first and last point as if it were sorted by y,
  and drops it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import (
    check_coordinates_within_limit,
    check_lengths,
    check_not_meta,
    check_values,
)
from drivemetrics.lane3d.assignment import assign_frames
from drivemetrics.lane3d.pairs import (
    ERROR_NAMES,
    flat_pair_cost,
    flat_pair_details,
    near_pairs,
    pair_cost,
    pair_details,
    pair_index,
    pair_terms,
)
from drivemetrics.lane3d.resample import Y_SAMPLES, OpenLane3DLanes, lanes_from_padded, resample_lanes
from drivemetrics.polyline.lane_fscore import COST_GATE, ratio_hits

__all__ = [
    "DEFAULT_FIXES",
    "OpenLane3DCategoryAccuracy",
    "OpenLane3DFScore",
    "OpenLane3DMetrics",
    "OpenLane3DPrecision",
    "OpenLane3DRecall",
    "OpenLane3DXErrorClose",
    "OpenLane3DXErrorFar",
    "OpenLane3DZErrorClose",
    "OpenLane3DZErrorFar",
    "openlane3d_gt_to_ground",
    "openlane3d_lane_matches",
    "openlane3d_matches",
    "openlane3d_pair_matrices",
    "openlane3d_resample",
    "openlane3d_scores",
]


LEFT_CURB, RIGHT_CURB = 20, 21


#: The default mode's fixes of ``eval_3D_lane.py`` (the module doc); ``compat="reference"`` applies none.
DEFAULT_FIXES = frozenset({"curb", "float_cost", "gate_first", "dont_care", "order_free"})


COUNT_NAMES = ("n_recall_hits", "n_precision_hits", "n_category_correct", "n_gt", "n_pred", "n_matched")


def openlane3d_gt_to_ground(points: Tensor, extrinsic: Tensor, *, validate_args: bool = True) -> Tensor:
    """OpenLane annotations (Waymo camera frame: x front, y left, z up) in the evaluator's ground frame.

    As ``eval_3D_lane.py`` (lines 306-346): ``w = R @ p`` with ``R = extrinsic[:3, :3]``, then
    ``(-w_y, w_x, w_z + extrinsic[2, 3])``: the camera's x / y offset is dropped, its height kept.

    Args:
        points: ``(B, L, N, 3)`` points in the camera frame, metres.
        extrinsic: ``(B, 4, 4)`` camera-to-vehicle transforms.
        validate_args: refuse NaN, infinite or huge (beyond ``max_lane3d_abs_metres``) points or transforms (a
            read-back); the shapes are always checked.

    Returns:
        ``(B, L, N, 3)`` ground-frame points (x right, y forward, z up), dtype of ``points``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_gt_to_ground
        >>> extrinsic = torch.eye(4, dtype=torch.float64)
        >>> extrinsic[:3, 3] = torch.tensor([1.5, 0.2, 2.0])  # 1.5 m ahead, 0.2 m left, 2 m high
        >>> points = torch.tensor([[[[10.0, 1.0, -2.0]]]], dtype=torch.float64)  # 10 m ahead, 1 m left
        >>> openlane3d_gt_to_ground(points, extrinsic[None]).tolist()
        [[[[-1.0, 10.0, 0.0]]]]
    """
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`points` must be (B, L, N, 3), got {tuple(points.shape)}")
    if extrinsic.shape != (points.shape[0], 4, 4):
        raise ValueError(
            f"`extrinsic` must be ({points.shape[0]}, 4, 4) like `points`' batch, got {tuple(extrinsic.shape)}"
        )
    if validate_args:
        check_coordinates_within_limit(points, "points", limit=_LIMIT)
        check_coordinates_within_limit(extrinsic, "extrinsic", limit=_LIMIT)
    rotation = extrinsic[:, None, :3, :3].to(points.dtype)
    world = torch.einsum("blij,blnj->blni", rotation, points)
    height = extrinsic[:, 2, 3].to(points.dtype)[:, None, None]
    return torch.stack([-world[..., 1], world[..., 0], world[..., 2] + height], -1)


def openlane3d_resample(
    points: Tensor,
    lengths: Tensor | None = None,
    visibility: Tensor | None = None,
    *,
    order_free: bool = False,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Filter lanes as the evaluator does and resample them at :data:`Y_SAMPLES`.

    Args:
        points: ``(B, L, N, 3)`` ground-frame lanes, metres, points in file order.
        lengths: ``(B, L)`` valid points per lane (default: all ``N``); 0 marks an absent lane.
        visibility: ``(B, L, N)`` point visibility (GT); points with visibility <= 0 are dropped first.
        order_free: the range check reads the lane's lowest and highest y (the default mode) instead of its first
            and last point in file order (the tool, which drops a lane listed far to near).
        validate_args: refuse ``lengths`` outside ``[0, N]`` and NaN, infinite or huge (beyond
            ``max_lane3d_abs_metres``) valid points (a read-back).

    Returns:
        ``x``, ``z``: ``(B, L, 100)`` float64 resampled values (0 for dropped lanes); ``visible``: ``(B, L, 100)``
        bool (False for dropped lanes); ``kept``: ``(B, L)`` bool, the lanes that are evaluated.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_resample
        >>> lane = torch.tensor([[[[0.5, 2.0, 0.0], [1.5, 12.0, 1.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> out = openlane3d_resample(lane)
        >>> out["kept"].tolist(), int(out["visible"].sum()), round(out["x"][0, 0, 3].item(), 2)
        ([[True]], 10, 0.9)
    """
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`points` must be (B, L, N, 3), got {tuple(points.shape)}")
    batch, lanes = points.shape[:2]
    if validate_args:
        _check_lane_values({"points": points, "lengths": lengths, "visibility": visibility}, "")
    packed = lanes_from_padded(points, lengths, torch.zeros(batch, lanes, dtype=torch.long), visibility)
    flat = resample_lanes(packed, True, order_free)
    samples = len(Y_SAMPLES)
    out = {
        "x": points.new_zeros(batch, lanes, samples, dtype=torch.float64),
        "z": points.new_zeros(batch, lanes, samples, dtype=torch.float64),
        "visible": points.new_zeros(batch, lanes, samples, dtype=torch.bool),
        "kept": points.new_zeros(batch, lanes, dtype=torch.bool),
    }
    kept = flat["kept"]
    for key in ("x", "z"):
        out[key][packed.frame, packed.index] = torch.where(kept[:, None], flat[key], 0.0)
    out["visible"][packed.frame, packed.index] = flat["visible"]
    out["kept"][packed.frame, packed.index] = kept
    return out


def openlane3d_pair_matrices(
    preds: dict[str, Tensor],
    target: dict[str, Tensor],
    *,
    compat: Compat = "default",
    preds_care: Tensor | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Cost, matched samples and errors of every GT x prediction pair of a batch.

    Args:
        preds, target: outputs of :func:`openlane3d_resample`, ``(B, P, 100)`` and ``(B, G, 100)``.
        compat: ``"reference"``: the cost is an int (``1`` when in (0, 1), else truncated), as the tool's
            min-cost flow needs; ``"default"``: the float sum.
        preds_care: ``(B, P, 100)`` or ``(B, G, P, 100)`` bool, the predicted samples that count in each pair
            (default: the visible ones); the default mode's "don't care" rule, see :func:`openlane3d_matches`.
        validate_args: check the keys and shapes of both dicts (same batch, 100 samples); no read-back.

    Returns:
        ``cost`` ``(B, G, P)`` float64; ``num_match`` ``(B, G, P)`` long (both visible and closer than 1.5 m);
        ``errors`` ``(B, G, P, 4)`` float64: mean |dx| close, far, mean |dz| close, far over the samples where
        both are visible, ``-1`` where there are none (``"reference"``: NaN when a lane has a non-finite resampled
        value at a sample it does not show, as the tool).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_pair_matrices, openlane3d_resample
        >>> gt = openlane3d_resample(torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]]))
        >>> pred = openlane3d_resample(torch.tensor([[[[0.3, 3.0, 0.0], [0.3, 52.0, 0.0]]]]))
        >>> out = openlane3d_pair_matrices(pred, gt)
        >>> errors = [round(e, 2) for e in out["errors"][0, 0, 0].tolist()]
        >>> round(out["cost"].item(), 2), out["num_match"].item(), errors
        (15.0, 50, [0.3, 0.3, 0.0, 0.0])
    """
    reference = check_compat(compat)
    if validate_args:
        for name, data in (("preds", preds), ("target", target)):
            if not isinstance(data, Mapping) or any(key not in data for key in ("x", "z", "visible")):
                raise ValueError(f"`{name}` must be the dict of openlane3d_resample (keys x, z, visible)")
            if data["x"].ndim != 3 or data["x"].shape[-1] != len(Y_SAMPLES) or data["z"].shape != data["x"].shape:
                raise ValueError(
                    f"`{name}['x']` and `['z']` must be (B, L, {len(Y_SAMPLES)}), got {tuple(data['x'].shape)}"
                )
        if preds["x"].shape[0] != target["x"].shape[0]:
            raise ValueError(
                f"`preds` and `target` must hold the same frames, got B = {preds['x'].shape[0]} and "
                f"{target['x'].shape[0]}"
            )
    terms = pair_terms(target, preds, preds_care)
    cost = pair_cost(terms, reference)
    num_match, errors = pair_details(terms, reference)
    return {"cost": cost, "num_match": num_match, "errors": errors}


def _category_correct(pred: Tensor, gt: Tensor, reference: bool) -> Tensor:
    curbs = ((pred == LEFT_CURB) & (gt == RIGHT_CURB)) if reference else ((pred == LEFT_CURB) | (pred == RIGHT_CURB))
    curbs = curbs & ((gt == LEFT_CURB) | (gt == RIGHT_CURB))
    return (pred == gt) | curbs


def openlane3d_matches(
    preds: Mapping[str, Tensor],
    target: Mapping[str, Tensor],
    *,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame OpenLane counts and error sums of a batch, and the counted pairs.

    Args:
        preds: ``points`` ``(B, P, N, 3)`` predicted lanes in the ground frame, metres (x right, y forward, z up);
            ``labels`` ``(B, P)`` int categories (OpenLane 0-12, 20 left curb, 21 right curb); optional
            ``lengths`` ``(B, P)`` valid points per lane (default: all ``N``; 0 marks an absent lane).
        target: ``points`` ``(B, G, M, 3)`` GT lanes in the ground frame (:func:`openlane3d_gt_to_ground`),
            ``labels`` ``(B, G)``, optional ``lengths`` ``(B, G)`` and ``visibility`` ``(B, G, M)`` (point
            visibility; default: all visible).
        compat: ``"default"`` (the library's fixes, module doc) or ``"reference"`` (``eval_3D_lane.py``).
        validate_args: check the inputs' keys and shapes; ``False`` skips those checks.

    Returns:
        ``counts``: ``(B, 6)`` long, per frame: recall hits, precision hits, correct categories, GT lanes,
        predicted lanes, counted pairs (:data:`COUNT_NAMES`); ``error_sums`` ``(B, 4)`` float64 and
        ``error_counts`` ``(B, 4)`` long over the counted pairs that have samples in the range
        (:data:`ERROR_NAMES`); ``pairs``: ``(K, 3)`` long rows ``(frame, gt lane, pred lane)`` of the counted
        pairs, lane indices in the input; ``pair_errors``: ``(K, 4)`` float64, ``-1`` where a pair has no sample.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_matches
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> target = {"points": lane, "labels": torch.tensor([[1]])}
        >>> out = openlane3d_matches({"points": lane + 0.2, "labels": torch.tensor([[1]])}, target)
        >>> out["counts"].tolist()
        [[1, 1, 1, 1, 1, 1]]
    """
    fixes = frozenset() if check_compat(compat) else DEFAULT_FIXES
    if validate_args:
        _check_lane_dict(preds, "preds", ("points", "labels"), ("lengths",))
        _check_lane_dict(target, "target", ("points", "labels"), ("lengths", "visibility"))
        _check_lane_values(preds, "preds")
        _check_lane_values(target, "target")
    return _matches(preds, target, fixes)


_LIMIT = "max_lane3d_abs_metres"  # the 3D lane readers' coordinate limit


def _check_lane_values(data: Mapping[str, Tensor | None], name: str) -> None:
    """``validate_args``: ``lengths`` in ``[0, N]``, the valid points finite and within ``max_lane3d_abs_metres``,
    the visibility finite (``name`` "" for the plain arguments of :func:`openlane3d_resample`)."""
    key = (lambda k: f"{name}['{k}']") if name else (lambda k: k)
    points, lengths, visibility = data["points"], data.get("lengths"), data.get("visibility")
    check_not_meta(points, key("points"))
    if lengths is not None:
        if lengths.shape != points.shape[:2]:
            raise ValueError(
                f"`{key('lengths')}` must have shape {tuple(points.shape[:2])}, got {tuple(lengths.shape)}"
            )
        check_lengths(lengths, key("lengths"), points.shape[2])
        points = points[torch.arange(points.shape[2], device=points.device) < lengths.to(points.device)[..., None]]
    check_coordinates_within_limit(points, key("points"), limit=_LIMIT)
    if visibility is not None:
        check_values(visibility, key("visibility"), what="visibility values")


def _check_lane_dict(
    data: Mapping[str, Tensor], name: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> None:
    """One clear ``ValueError`` for a missing or unknown key or a shape that does not fit ``points``."""
    if not isinstance(data, Mapping):
        raise ValueError(f"`{name}` must be a dict of tensors with keys {required} (optional {optional})")
    missing = [key for key in required if key not in data]
    unknown = sorted(set(data) - set(required) - set(optional))
    if missing or unknown:
        raise ValueError(f"`{name}`: missing keys {missing}, unknown keys {unknown}; expected {required} + {optional}")
    points = data["points"]
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`{name}['points']` must be (B, L, N, 3), got {tuple(points.shape)}")
    for key, shape in (("labels", points.shape[:2]), ("lengths", points.shape[:2]), ("visibility", points.shape[:3])):
        if key in data and data[key] is not None and tuple(data[key].shape) != tuple(shape):
            raise ValueError(f"`{name}['{key}']` must have shape {tuple(shape)}, got {tuple(data[key].shape)}")


def _matches(preds: Mapping[str, Tensor], target: Mapping[str, Tensor], fixes: frozenset[str]) -> dict[str, Tensor]:
    """:func:`openlane3d_matches` with a chosen set of the default mode's fixes (:data:`DEFAULT_FIXES`)."""
    for name, data in (("preds", preds), ("target", target)):  # shapes only: no read-back
        check_not_meta(data["points"], f"{name}['points']")
    if preds["points"].shape[0] != target["points"].shape[0]:
        raise ValueError(
            f"`preds` and `target` must hold the same frames, got B = {preds['points'].shape[0]} and "
            f"{target['points'].shape[0]}"
        )
    gt = lanes_from_padded(target["points"], target.get("lengths"), target["labels"], target.get("visibility"))
    pr = lanes_from_padded(preds["points"], preds.get("lengths"), preds["labels"])
    return _match_lanes(gt, pr, target["points"].shape[0], fixes)


def openlane3d_lane_matches(
    preds: OpenLane3DLanes,
    target: OpenLane3DLanes,
    *,
    frames: int,
    compat: Compat = "default",
    fixes: Collection[str] | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """:func:`openlane3d_matches` on lanes packed lane after lane (:class:`OpenLane3DLanes`), no padding over lanes.

    Args:
        preds: predicted lanes, ground frame.
        target: GT lanes, ground frame (:func:`openlane3d_gt_to_ground`), with their point visibility.
        frames: frames of the batch (their indices in ``frame`` lie below it).
        compat: ``"default"`` or ``"reference"``.
        fixes: instead of ``compat``, a subset of the default mode's fixes (:data:`DEFAULT_FIXES`) to apply, e.g. to
            measure the effect of one of them.
        validate_args: check that the packed fields fit each other (shapes, ``lengths`` summing to the points,
            frames in ``[0, frames)`` and in order); ``False`` skips those checks (they read values back).

    Returns:
        The dict of :func:`openlane3d_matches`; lane indices in ``pairs`` are the lanes' ``index``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_lane_matches
        >>> from drivemetrics.lane3d.resample import OpenLane3DLanes
        >>> points = torch.tensor([[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]], dtype=torch.float64)
        >>> one = torch.tensor([1])
        >>> gt = OpenLane3DLanes(points, torch.tensor([2]), torch.tensor([0]), torch.tensor([0]), one, None)
        >>> pred = gt._replace(points=points + 0.2, frame=torch.tensor([1]))  # the prediction is in frame 1
        >>> openlane3d_lane_matches(pred, gt, frames=2)["counts"].tolist()
        [[0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0]]
    """
    chosen = (frozenset() if check_compat(compat) else DEFAULT_FIXES) if fixes is None else frozenset(fixes)
    if validate_args:
        _check_packed_lanes(preds, "preds", frames)
        _check_packed_lanes(target, "target", frames)
    return _match_lanes(target, preds, frames, chosen)


def _check_packed_lanes(lanes: OpenLane3DLanes, name: str, frames: int) -> None:
    """One clear ``ValueError`` where the fields of packed lanes (:class:`OpenLane3DLanes`) do not fit each other."""
    points, lengths = lanes.points, lanes.lengths
    if points.ndim != 2 or points.shape[-1] != 3:
        raise ValueError(f"`{name}.points` must be (T, 3), got {tuple(points.shape)}")
    for field in ("lengths", "frame", "index", "labels"):
        if getattr(lanes, field).shape != lengths.shape or lengths.ndim != 1:
            raise ValueError(
                f"`{name}.{field}` must be (M,) like `{name}.lengths`, got {tuple(getattr(lanes, field).shape)}"
            )
    if lanes.visibility is not None and lanes.visibility.shape != points.shape[:1]:
        raise ValueError(f"`{name}.visibility` must be (T,) like the points, got {tuple(lanes.visibility.shape)}")
    if bool((lengths <= 0).any()) or int(lengths.sum()) != points.shape[0]:
        raise ValueError(f"`{name}.lengths` must be > 0 and sum to the {points.shape[0]} points")
    frame = lanes.frame
    if frame.numel() and (bool((frame < 0).any()) or bool((frame >= frames).any()) or bool((frame.diff() < 0).any())):
        raise ValueError(f"`{name}.frame` must be non-decreasing and in [0, {frames})")


def _match_lanes(gt: OpenLane3DLanes, pr: OpenLane3DLanes, batch: int, fixes: frozenset[str]) -> dict[str, Tensor]:
    """The matching of :func:`openlane3d_matches` on the lanes of ``batch`` frames (lane indices of the output
    as ``gt.index`` / ``pr.index``)."""
    unknown = fixes - DEFAULT_FIXES
    if unknown:
        raise ValueError(f"unknown fixes {sorted(unknown)}; known: {sorted(DEFAULT_FIXES)}")
    device = gt.points.device
    order_free = "order_free" in fixes
    g = resample_lanes(gt, True, order_free)
    p = resample_lanes(pr, False, order_free)
    near_ignored = None
    if "dont_care" in fixes and gt.visibility is not None:
        # a predicted sample within 1.5 m of an annotated but invisible GT stretch counts neither as a hit nor as a
        # miss, unless it lies within 1.5 m of a visible sample of the GT lane it is paired with; a predicted lane
        # with fewer than 2 samples away from invisible stretches is not counted
        full = resample_lanes(gt, False, order_free)
        ignored = full["visible"] & ~g["visible"]
        gi, pj, *_ = pair_index(gt.frame, ignored.any(-1), pr.frame, p["kept"], batch)
        hits = (ignored[gi] & near_pairs(full, p, gi, pj)).to(torch.int32)
        near_ignored = torch.zeros_like(p["visible"], dtype=torch.int32).index_add_(0, pj, hits) > 0
        kept = p["kept"] & ((p["visible"] & ~near_ignored).sum(-1) >= 2)
        p = {**p, "kept": kept, "visible": p["visible"] & kept[:, None]}
    gi, pj, pair_frame, first, n_gt, n_pred = pair_index(gt.frame, g["kept"], pr.frame, p["kept"], batch)
    care = None
    if near_ignored is not None:
        near_own = g["visible"][gi] & near_pairs(g, p, gi, pj)
        care = p["visible"][pj] & ~(near_ignored[pj] & ~near_own)
    reference_cost = "float_cost" not in fixes
    # the cost of every pair (for the assignment); matched samples and errors of the counted pairs only
    cost = flat_pair_cost(g, p, gi, pj, care, reference_cost)
    gate_ok = cost < COST_GATE
    chosen = assign_frames(cost, gate_ok if "gate_first" in fixes else None, first, n_gt, n_pred)
    chosen = chosen[gate_ok[chosen]]
    matched, pair_errors = flat_pair_details(
        g, p, gi[chosen], pj[chosen], None if care is None else care[chosen], reference_cost
    )
    fb, gl, pl = pair_frame[chosen], gi[chosen], pj[chosen]
    pred_visible = p["visible"].index_select(0, pl) if care is None else care[chosen]
    pred_samples = pred_visible.sum(-1, dtype=torch.int32)
    recall_hit = ratio_hits(matched, g["visible"].index_select(0, gl).sum(-1, dtype=torch.int32))
    precision_hit = ratio_hits(matched, pred_samples)
    category_ok = _category_correct(pr.labels[pl], gt.labels[gl], "curb" not in fixes)
    counts = torch.zeros(batch, 6, dtype=torch.long, device=device)
    counts[:, 0].index_add_(0, fb, recall_hit.long())
    counts[:, 1].index_add_(0, fb, precision_hit.long())
    counts[:, 2].index_add_(0, fb, category_ok.long())
    counts[:, 3] = torch.bincount(gt.frame[g["kept"]], minlength=batch)
    counts[:, 4] = torch.bincount(pr.frame[p["kept"]], minlength=batch)
    counts[:, 5].index_add_(0, fb, torch.ones_like(fb))
    has_error = pair_errors > -1 + 1e-6
    error_sums = torch.zeros(batch, 4, dtype=torch.float64, device=device)
    error_sums.index_add_(0, fb, torch.where(has_error, pair_errors, 0.0))
    error_counts = torch.zeros(batch, 4, dtype=torch.long, device=device)
    error_counts.index_add_(0, fb, has_error.long())
    return {
        "counts": counts,
        "error_sums": error_sums,
        "error_counts": error_counts,
        "pairs": torch.stack([fb, gt.index[gl], pr.index[pl]], -1),
        "pair_errors": pair_errors,
    }


def _ratio(num: Tensor, den: Tensor) -> Tensor:
    num, den = num.to(torch.float64), den.to(torch.float64)
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), 0.0)


def openlane3d_scores(
    counts: Tensor, error_sums: Tensor, error_counts: Tensor, *, validate_args: bool = True
) -> dict[str, Tensor]:
    """Pooled scores from summed counts, as ``bench_one_submit``: 0 for a ratio without denominator, NaN for an
    error without any value.

    Args:
        counts: ``(..., 6)`` counts of :func:`openlane3d_matches` (summed over frames when 2-D).
        error_sums, error_counts: ``(..., 4)``.
        validate_args: refuse negative or non-integer counts and negative or non-finite error sums (a
            read-back).

    Returns:
        ``f_score``, ``recall``, ``precision``, ``category_accuracy``, the four errors (0-d float64) and the six
        counts (0-d long).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_scores
        >>> counts = torch.tensor([3, 2, 2, 4, 2, 3])  # recall hits, precision hits, correct, GT, pred, pairs
        >>> out = openlane3d_scores(counts, torch.tensor([0.3, 0.6, 0.1, 0.2]), torch.tensor([3, 2, 3, 2]))
        >>> round(out["f_score"].item(), 4), round(out["x_error_close"].item(), 4)
        (0.8571, 0.1)
    """
    if counts.shape[-1:] != (6,) or error_sums.shape[-1:] != (4,) or error_counts.shape[-1:] != (4,):
        raise ValueError(
            f"`counts` must be (..., 6), `error_sums` and `error_counts` (..., 4), got {tuple(counts.shape)}, "
            f"{tuple(error_sums.shape)} and {tuple(error_counts.shape)}"
        )
    if validate_args:
        for name, values in (("counts", counts), ("error_counts", error_counts)):
            if values.is_floating_point():
                raise ValueError(f"`{name}` must be integer counts, got {values.dtype}")
            check_values(values, name, low=0, what="counts")
        check_values(error_sums, "error_sums", low=0.0, what="error sums")
    counts = counts.reshape(-1, 6).sum(0)
    error_sums = error_sums.reshape(-1, 4).to(torch.float64).sum(0)
    error_counts = error_counts.reshape(-1, 4).sum(0)
    recall = _ratio(counts[0], counts[3])
    precision = _ratio(counts[1], counts[4])
    out = {
        "f_score": _ratio(2 * recall * precision, recall + precision),
        "recall": recall,
        "precision": precision,
        "category_accuracy": _ratio(counts[2], counts[5]),
    }
    means = error_sums / error_counts.to(torch.float64)  # 0 / 0 = NaN: no value, as np.average of nothing
    for i, name in enumerate(ERROR_NAMES):
        out[name] = means[i]
    for i, name in enumerate(COUNT_NAMES):
        out[name] = counts[i]
    return out


class OpenLane3DMetrics(MetricFamily):
    """OpenLane 3D lane scores accumulated over batches: sum-reduced counts and error sums.

    ``update(preds, target)`` with the dicts of tensors of :func:`openlane3d_matches` (``points``, ``labels``,
    optional ``lengths``, and the GT's optional ``visibility``; ground-frame lanes, metres); ``compute()`` returns
    the dict of :func:`openlane3d_scores` (F-score, recall, precision, category accuracy, four errors, six counts).

    Args:
        compat: ``"default"`` (documented fixes) or ``"reference"`` (``eval_3D_lane.py``).
        kwargs: torchmetrics ``Metric`` keyword arguments.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane3d import OpenLane3DMetrics
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])  # (B, L, N, 3), metres
        >>> preds = torch.cat([lane + 0.2, lane + torch.tensor([5.0, 0.0, 0.0])], 1)  # the lane and a false one
        >>> metric = OpenLane3DMetrics()
        >>> target = {"points": lane, "labels": torch.tensor([[1]])}
        >>> metric.update({"points": preds, "labels": torch.tensor([[1, 1]])}, target)
        >>> out = metric.compute()
        >>> round(out["f_score"].item(), 4), out["n_pred"].item()
        (0.6667, 2)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    counts: Tensor
    error_sums: Tensor
    error_counts: Tensor

    def __init__(self, compat: Compat = "default", validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        self.compat = compat
        self.add_state("counts", torch.zeros(6, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("error_sums", torch.zeros(4, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("error_counts", torch.zeros(4, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("OpenLane3D", compat))

    def update(self, preds: Mapping[str, Tensor], target: Mapping[str, Tensor]) -> None:
        """Add a batch: ``preds`` / ``target`` dicts of tensors as in :func:`openlane3d_matches`."""
        out = openlane3d_matches(preds, target, compat=self.compat, validate_args=self.validate_args)
        # out of place: under ddp_spawn the states may share memory with other processes
        self.counts = self.counts + out["counts"].sum(0).to(self.counts.device)
        self.error_sums = self.error_sums + out["error_sums"].sum(0).to(self.error_sums.device)
        self.error_counts = self.error_counts + out["error_counts"].sum(0).to(self.error_counts.device)

    def compute(self) -> dict[str, Tensor]:
        """The scores and counts of :func:`openlane3d_scores` from the accumulated totals."""
        return openlane3d_scores(self.counts, self.error_sums, self.error_counts, validate_args=False)


class OpenLane3DFScore(ScalarMetric, OpenLane3DMetrics):
    """OpenLane F-score ``2PR / (P + R)`` over all frames seen (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DFScore, openlane3d_example_inputs
        >>> metric = OpenLane3DFScore()
        >>> metric(**openlane3d_example_inputs())  # recall 1, precision 2 / 3
        tensor(0.8000, dtype=torch.float64)
    """

    key = "f_score"


class OpenLane3DRecall(ScalarMetric, OpenLane3DMetrics):
    """OpenLane recall: GT lanes with 75 % of their samples matched / GT lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DRecall, openlane3d_example_inputs
        >>> metric = OpenLane3DRecall()
        >>> metric(**openlane3d_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "recall"


class OpenLane3DPrecision(ScalarMetric, OpenLane3DMetrics):
    """OpenLane precision: predicted lanes with 75 % of their samples matched / predicted lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DPrecision, openlane3d_example_inputs
        >>> metric = OpenLane3DPrecision()
        >>> metric(**openlane3d_example_inputs())  # the lane at x = 7 m is false
        tensor(0.6667, dtype=torch.float64)
    """

    key = "precision"


class OpenLane3DCategoryAccuracy(ScalarMetric, OpenLane3DMetrics):
    """OpenLane category accuracy over the counted pairs (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DCategoryAccuracy, openlane3d_example_inputs
        >>> metric = OpenLane3DCategoryAccuracy()
        >>> metric(**openlane3d_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "category_accuracy"


class _OpenLane3DMeanMetres(ScalarMetric, OpenLane3DMetrics):
    """A mean error of the counted pairs, metres: lower is better, no upper bound on its plot."""

    higher_is_better = False
    plot_upper_bound = None


class OpenLane3DXErrorClose(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DXErrorClose, openlane3d_example_inputs
        >>> metric = OpenLane3DXErrorClose()
        >>> metric(**openlane3d_example_inputs())  # 0.2 and 0.5 m
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_close"


class OpenLane3DXErrorFar(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DXErrorFar, openlane3d_example_inputs
        >>> metric = OpenLane3DXErrorFar()
        >>> metric(**openlane3d_example_inputs())
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_far"


class OpenLane3DZErrorClose(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DZErrorClose, openlane3d_example_inputs
        >>> metric = OpenLane3DZErrorClose()
        >>> metric(**openlane3d_example_inputs())  # 0.1 and 0.3 m
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_close"


class OpenLane3DZErrorFar(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import OpenLane3DZErrorFar, openlane3d_example_inputs
        >>> metric = OpenLane3DZErrorFar()
        >>> metric(**openlane3d_example_inputs())
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_far"
