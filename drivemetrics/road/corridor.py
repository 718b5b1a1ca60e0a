"""Behaviour-based driving corridor of Fritsch, Kühnl and Geiger (ITSC 2013, sections IV-B and V-C).

An ego-lane detection in the bird's-eye view (BEV) is judged by the corridor a vehicle could follow on it. A
beam search chains constant-steering manoeuvres of the single-track model (the *corridor elements*) as long as
enough of each new element is covered by detections; the corridor that results is scored against the ground-truth
ego-lane by lateral precision, longitudinal F1 and hitrate at given distances.

No public implementation of the metric exists; this module is the reference of the library. Every choice that the
paper leaves open is listed in :func:`fit_driving_corridor` and the README ("Road: driving corridor").

Geometry (road frame, metres): ``x`` lateral (right), ``z`` forward, heading in radians from +z towards +x (the
convention of :func:`drivemetrics.vehicle.single_track_step`). Grids follow :class:`drivemetrics.geometry.BevGrid`.

Exact rasterisation. A constant-steering manoeuvre with curvature ``k = tan(rho) / L`` sweeps an annular sector
(a rectangle when ``rho = 0``): the points whose offset from the arc is at most ``W / 2`` and that lie between the
lateral lines of the start and end poses. A cell belongs to an element when its *center* lies in that region
(half-open between consecutive elements, so they never share a cell). Each grid row meets the region in at most two
intervals, computed in closed form; sums over cells then come from per-row prefix sums. The cost is a few
operations per row and element, with no loop over cells, candidates or frames (only over search stages).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.compute import safe_divide
from drivemetrics._internal.extras import require
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state, plot_metric
from drivemetrics._internal.validation import check_binary, check_shape, check_tensor, check_values
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor_config import CorridorConfig
from drivemetrics.vehicle.single_track import single_track_step

__all__ = [
    "CorridorFit",
    "DrivingCorridorHitRate",
    "DrivingCorridorLateralPrecision",
    "DrivingCorridorLongitudinalF1Score",
    "DrivingCorridorMetrics",
    "corridor_curves",
    "corridor_row_statistics",
    "driving_corridor_scores",
    "fit_driving_corridor",
]


class CorridorFit(NamedTuple):
    """The fitted corridor of each frame (``P = 1 + max_stages * steps_per_stage`` step poses; NaN after the end).

    mask: ``(B, H, W)`` bool, the grid cells of the corridor. path: ``(B, P, 3)`` centerline poses
    ``(x, z, heading)`` at every step (metres, metres, radians). left / right: ``(B, P, 2)`` boundary points
    ``(x, z)`` at ``-W/2`` / ``+W/2`` across the heading. wheel_angles: ``(B, max_stages)`` wheel angle of each
    stage in radians (NaN after the end). num_stages: ``B`` number of elements (0: no corridor). length: ``B`` arc
    length in metres. fitness: ``B`` accumulated confidence under the corridor (sum over its cells).
    """

    mask: Tensor
    path: Tensor
    left: Tensor
    right: Tensor
    wheel_angles: Tensor
    num_stages: Tensor
    length: Tensor
    fitness: Tensor


# ----------------------------------------------------------------------------------------------------------------
# Rasterisation of corridor elements by rows


def _half_line(alpha: Tensor, beta: Tensor) -> tuple[Tensor, Tensor]:
    """``{t : alpha + beta * t >= 0}`` as an interval ``[lo, hi]`` (possibly infinite or empty)."""
    root = -alpha / torch.where(beta == 0, 1.0, beta)
    whole = torch.where(alpha >= 0, -math.inf, math.inf)  # beta == 0: everything or nothing
    lo = torch.where(beta > 0, root, torch.where(beta < 0, -math.inf, whole))
    hi = torch.where(beta < 0, root, torch.where(beta > 0, math.inf, -whole))
    return lo, hi


def _disc_chord(cx: Tensor, dz: Tensor, radius: Tensor) -> tuple[Tensor, Tensor]:
    """Interval of ``t`` with ``(t - cx)^2 + dz^2 <= radius^2``; empty (``+inf, -inf``) when the row misses."""
    sq = radius * radius - dz * dz
    half = torch.sqrt(sq.clamp_min(0))
    hit = sq >= 0
    return torch.where(hit, cx - half, math.inf), torch.where(hit, cx + half, -math.inf)


def _element_rows(start: Tensor, end: Tensor, width: float, bulge: float, grid: BevGrid) -> tuple[Tensor, int]:
    """First grid row of each element's window and the (common) number of rows to examine.

    The element's ``z`` extent is that of its four corners (start and end pose +- W/2 across the heading),
    widened by ``bulge`` metres: a bound of how far its arcs reach beyond the corners' chords (0 for straight
    elements). Rows are those whose center can lie inside; the count is the largest over all elements.
    """
    res = grid.resolution
    half = 0.5 * width
    z_corners = torch.stack(
        [
            start[..., 1] - half * torch.sin(start[..., 2]),
            start[..., 1] + half * torch.sin(start[..., 2]),
            end[..., 1] - half * torch.sin(end[..., 2]),
            end[..., 1] + half * torch.sin(end[..., 2]),
        ],
        -1,
    )
    top = z_corners.amax(-1) + bulge
    bottom = z_corners.amin(-1) - bulge
    first = torch.ceil((grid.z_max - top) / res - 0.5)
    last = torch.floor((grid.z_max - bottom) / res - 0.5)
    count = int((last - first).max().item()) + 1 if first.numel() else 1
    return first, max(count, 1)


def _element_spans(
    start: Tensor, end: Tensor, curvature: Tensor, width: float, grid: BevGrid, first_row: Tensor, num_rows: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Cell spans of corridor elements, row by row.

    Args:
        start, end: ``(..., 3)`` start and end poses ``(x, z, heading)`` of each element.
        curvature: ``...`` signed curvature ``tan(rho) / L`` in 1/m (positive turns right; 0 is straight).
        width: corridor width in metres.
        first_row, num_rows: the rows examined, from :func:`_element_rows`.

    Returns:
        ``rows``: ``(..., R)`` row indices (may lie outside the grid), ``col_lo`` / ``col_hi``: ``(..., R, 2)``
        half-open column ranges ``[lo, hi)`` of the (at most two) spans, unclipped; a span is empty when
        ``hi <= lo``.
    """
    res = grid.resolution
    x0, z0, h0 = (v[..., None] for v in start.unbind(-1))
    x1, z1, h1 = (v[..., None] for v in end.unbind(-1))
    k = curvature[..., None]
    rows_f = first_row[..., None] + torch.arange(num_rows, device=start.device, dtype=start.dtype)
    z = grid.z_max - (rows_f + 0.5) * res
    dz0, dz1 = z - z0, z - z1
    sin0, cos0, sin1, cos1 = torch.sin(h0), torch.cos(h0), torch.sin(h1), torch.cos(h1)
    # between the start pose's lateral line (forward of it) and the end pose's (behind it)
    s_lo, s_hi = _half_line(dz0 * cos0 - x0 * sin0, sin0.expand_as(z))
    e_lo, e_hi = _half_line(x1 * sin1 - dz1 * cos1, (-sin1).expand_as(z))
    w_lo, w_hi = torch.maximum(s_lo, e_lo), torch.minimum(s_hi, e_hi)
    straight = k == 0
    both = bool(straight.any()) and not bool(straight.all())
    if bool(straight.any()):  # the slab |lateral offset| <= W / 2
        a_lo, a_hi = _half_line(0.5 * width - x0 * cos0 - dz0 * sin0, cos0.expand_as(z))
        b_lo, b_hi = _half_line(0.5 * width + x0 * cos0 + dz0 * sin0, (-cos0).expand_as(z))
        o_lo, o_hi = torch.maximum(a_lo, b_lo), torch.minimum(a_hi, b_hi)
        i_lo, i_hi = o_hi, o_hi
    if not bool(straight.all()):  # the annulus R - W/2 <= |p - c| <= R + W/2 around c = p0 + (1/k) * right
        inv_k = 1.0 / torch.where(straight, torch.ones_like(k), k)
        cx, dzc = x0 + cos0 * inv_k, z - z0 + sin0 * inv_k
        radius = inv_k.abs()
        co_lo, co_hi = _disc_chord(cx, dzc, radius + 0.5 * width)
        ci_lo, ci_hi = _disc_chord(cx, dzc, radius - 0.5 * width)
        missed = ci_lo > ci_hi
        ci_lo, ci_hi = torch.where(missed, co_hi, ci_lo), torch.where(missed, co_hi, ci_hi)
        if both:
            o_lo, o_hi = torch.where(straight, o_lo, co_lo), torch.where(straight, o_hi, co_hi)
            i_lo, i_hi = torch.where(straight, i_lo, ci_lo), torch.where(straight, i_hi, ci_hi)
        else:
            o_lo, o_hi, i_lo, i_hi = co_lo, co_hi, ci_lo, ci_hi
    # span 1: from the outer entry to the hole (or the outer exit); span 2: from the hole's exit to the outer exit
    lo = torch.stack([torch.maximum(o_lo, w_lo), torch.maximum(i_hi, w_lo)], -1)
    hi = torch.stack([torch.minimum(i_lo, w_hi), torch.minimum(o_hi, w_hi)], -1)
    # columns j with lo <= x_j < hi, x_j = x_min + (j + 0.5) res; infinities are clamped far outside the grid
    pad = float(grid.cols + 4 * num_rows)  # beyond any element's extent
    col_lo = torch.ceil(((lo - grid.x_min) / res - 0.5).clamp(-pad, grid.cols + pad)).long()
    col_hi = torch.ceil(((hi - grid.x_min) / res - 0.5).clamp(-pad, grid.cols + pad)).long()
    return rows_f.long(), col_lo, col_hi


def _span_sums(
    rows: Tensor, col_lo: Tensor, col_hi: Tensor, prefix: Sequence[Tensor], frame_ids: Tensor, grid: BevGrid
) -> tuple[Tensor, list[Tensor]]:
    """Area (cells, rows beyond the far edge excluded) and in-grid sums of each element.

    ``rows`` / ``col_*``: ``b x ... x R (x 2)`` from :func:`_element_spans` for frames ``frame_ids`` (``b``);
    ``prefix``: flattened ``(B, H, (W + 1))`` row-wise prefix sums of all frames. Returns the area ``(b, ...)``
    (long) and one ``(b, ...)`` sum per prefix table. Cells outside the grid to the left, right or near side count
    in the area and add nothing to the sums.
    """
    H, W = grid.shape
    rows2 = rows[..., None].expand_as(col_lo)
    counted = rows2 >= 0
    area = ((col_hi - col_lo).clamp_min(0) * counted).sum((-1, -2))
    inside = counted & (rows2 < H)
    base = (frame_ids * (H * (W + 1))).reshape((-1,) + (1,) * (rows2.ndim - 1))
    start = base + rows2.clamp(0, H - 1) * (W + 1)
    lo = col_lo.clamp(0, W)
    hi = torch.maximum(col_hi.clamp(0, W), lo)
    flat_lo, flat_hi = (start + lo).flatten(), (start + hi).flatten()
    sums = []
    for table in prefix:
        diff = (table[flat_hi] - table[flat_lo]).reshape(col_lo.shape) * inside
        sums.append(diff.sum((-1, -2)))
    return area, sums


def _paint_spans(rows: Tensor, col_lo: Tensor, col_hi: Tensor, keep: Tensor, grid: BevGrid) -> Tensor:
    """Mask ``(B, H, W)`` of the cells covered by the spans of the elements with ``keep`` (``(B, M)``)."""
    H, W = grid.shape
    B = rows.shape[0]
    rows2 = rows[..., None].expand_as(col_lo)
    lo = col_lo.clamp(0, W)
    hi = col_hi.clamp(0, W)
    use = keep[..., None, None] & (rows2 >= 0) & (rows2 < H) & (hi > lo)
    r = rows2.clamp(0, H - 1)
    dtype = torch.int16 if rows.device.type == "cpu" else torch.int32  # overlap counts are tiny
    diff = torch.zeros(B, H * (W + 1), dtype=dtype, device=rows.device)
    ones = use.to(dtype).reshape(B, -1)
    diff.scatter_add_(1, (r * (W + 1) + lo).reshape(B, -1), ones)
    diff.scatter_add_(1, (r * (W + 1) + hi).reshape(B, -1), -ones)
    return diff.reshape(B, H, W + 1)[..., :W].cumsum(-1) > 0


# ----------------------------------------------------------------------------------------------------------------
# Input checks


def _check_grid_input(x: Tensor, name: str, grid: BevGrid) -> None:
    check_shape(x, name, ("B", grid.rows, grid.cols))


def _prepare_confidence(preds: Tensor, grid: BevGrid, values: bool = True) -> Tensor:
    check_tensor(preds, "preds")
    _check_grid_input(preds, "preds", grid)
    if preds.dtype == torch.uint8:
        return preds.float() / 255.0
    if not preds.is_floating_point():
        raise ValueError(f"`preds` must be a floating confidence map in [0, 1] or uint8 in 0..255, got {preds.dtype}")
    if values and preds.numel():
        low, high = torch.aminmax(preds.detach())
        if not (float(low) >= 0 and float(high) <= 1):  # also catches NaN
            raise ValueError(
                f"`preds` must hold finite confidences in [0, 1] (or uint8 in 0..255), got min {float(low):.4g}, "
                f"max {float(high):.4g}"
            )
    return preds


def _prepare_mask(mask: Tensor | None, name: str, like: Tensor, grid: BevGrid, values: bool = True) -> Tensor:
    if mask is None:
        return torch.ones(like.shape, dtype=torch.bool, device=like.device)
    check_tensor(mask, name)
    _check_grid_input(mask, name, grid)
    if mask.shape[0] != like.shape[0]:
        raise ValueError(f"`{name}` must have batch size {like.shape[0]}, got {mask.shape[0]}")
    if values:
        check_binary(mask, name)
    return mask.to(device=like.device, dtype=torch.bool)


def _check_threshold(threshold: float) -> float:
    if arrays.is_tensor(threshold):
        threshold = float(threshold.item())
    if not (isinstance(threshold, int | float) and 0 < threshold <= 1):
        raise ValueError(f"`threshold` must lie in (0, 1] (the pixel working point), got {threshold!r}")
    return float(threshold)


def _start_pose(config: CorridorConfig, grid: BevGrid) -> tuple[float, float, float]:
    z0 = grid.z_min if config.start_z is None else config.start_z
    if not (grid.x_min <= config.start_x <= grid.x_max and grid.z_min <= z0 < grid.z_max):
        raise ValueError(
            f"the corridor start pose (x={config.start_x}, z={z0}) must lie inside the grid "
            f"(x in [{grid.x_min}, {grid.x_max}], z in [{grid.z_min}, {grid.z_max}))"
        )
    return config.start_x, z0, config.start_heading


def _max_stages(config: CorridorConfig, grid: BevGrid) -> int:
    if config.max_stages is not None:
        return config.max_stages
    shortest = config.stage_length * math.cos(config.curvatures_per_side * config.wheel_angle_step)
    diagonal = math.hypot(grid.x_max - grid.x_min, grid.z_max - grid.z_min)
    return math.ceil(diagonal / shortest) + 1


# ----------------------------------------------------------------------------------------------------------------
# The fit


def fit_driving_corridor(
    preds: Tensor,
    valid: Tensor | None = None,
    *,
    threshold: float,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
    validate_args: bool = True,
) -> CorridorFit:
    """Fit the driving corridor to BEV ego-lane confidence maps by the paper's multi-stage search.

    Args:
        preds: ``(B, H, W)`` confidence in [0, 1] (float) or 0..255 (uint8) on ``grid``.
        valid: optional ``(B, H, W)`` mask of cells seen by the camera; cells outside it count as no detection
            (confidence 0).
        threshold: detection working point in (0, 1]: a cell is a detection when ``confidence >= threshold``.
        grid: the BEV grid (default: KITTI-ROAD, 800 x 400 at 0.05 m).
        config: search parameters (default: the paper's, :class:`CorridorConfig`).
        validate_args: refuse confidences outside [0, 1] (NaN included) and a non-binary ``valid`` (a
            read-back); ``False`` skips those checks (the search itself still syncs once per stage).

    The search, precisely:

    * Stage 1 extends the start pose by the ``2N + 1`` primitives; later stages extend each kept hypothesis by the
      ``2N + 1`` primitives from its end pose and heading, giving up to ``(2N + 1)^2`` candidates.
    * A candidate is *admissible* when its new element has ``detections / area > det_min``. The area counts the
      cells whose center lies in the element, including cells outside the grid to the left, right and near side
      (they hold no detection, so leaving the grid sideways ends the corridor); the part of an element beyond the
      far edge is cut off (the far edge is the end of the evaluated road, not missing detections).
    * The ``2N + 1`` admissible candidates of highest accumulated fitness (sum of confidence over all their cells)
      are kept; ties go to the earlier hypothesis, then to the smaller wheel angle (straight first, then left).
      Inadmissible candidates are dropped.
    * The search of a frame ends when no candidate is admissible (that stage adds nothing: the corridor ends with
      the last admissible element), when the best kept hypothesis's end point reaches the far edge
      (``z >= z_max``; that last element counts), or after ``max_stages`` stages.
    * The result is the kept hypothesis of highest fitness. With no admissible first element the corridor is
      empty (0 stages, length 0, empty mask).

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.functional import fit_driving_corridor
        >>> grid = BevGrid()  # KITTI-ROAD BEV grid, (800, 400) cells of 0.05 m
        >>> lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)  # (B, H, W): a straight 3.5 m ego-lane
        >>> fit = fit_driving_corridor(lane.float(), threshold=0.5)
        >>> fit.mask.shape, fit.length  # the corridor mask and its length, metres
        (torch.Size([1, 800, 400]), tensor([41.9925]))
    """
    grid = grid if grid is not None else BevGrid()
    config = config if config is not None else CorridorConfig()
    conf = _prepare_confidence(preds, grid, validate_args)
    valid_mask = _prepare_mask(valid, "valid", conf, grid, validate_args) if valid is not None else None
    threshold = _check_threshold(threshold)
    dtype = torch.float64 if conf.dtype == torch.float64 else torch.float32
    prefix = _prefix_sums(conf, valid_mask, threshold, grid, dtype)
    primitives = _primitives(config, grid, dtype, conf.device)
    n_max = _max_stages(config, grid)
    beam = _start_beam(conf.shape[0], primitives.angles.numel(), n_max, config, grid, dtype, conf.device)
    for stage in range(n_max):
        if not bool(beam.active.any()):
            break
        _search_stage(stage, beam, primitives, prefix, config, grid)
    return _best_corridor(beam, primitives, n_max, config, grid)


class _Primitives(NamedTuple):
    """The ``K = 2N + 1`` manoeuvres of one stage: wheel angle (radians, ``angles[0] == 0``: straight), curvature
    (1/m), arc length (m), and ``bulge``: how far (m) an element can reach beyond the chord of its end points."""

    angles: Tensor
    curvature: Tensor
    arc: Tensor
    bulge: float


@dataclass
class _Beam:
    """The kept hypotheses of every frame (slot 0 is the best): end pose ``(B, K, 3)``, fitness ``(B, K)``, step
    poses of the path ``(B, K, 1 + n_max * S, 3)``, wheel-angle index per stage ``(B, K, n_max)`` (-1: unused),
    number of stages ``(B,)`` and whether the frame is still searching ``(B,)``."""

    pose: Tensor
    fitness: Tensor
    path: Tensor
    choice: Tensor
    num_stages: Tensor
    active: Tensor


def _prefix_sums(
    conf: Tensor, valid_mask: Tensor | None, threshold: float, grid: BevGrid, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """Row-wise prefix sums, flattened, of the confidence (fitness) and of the detections (admissibility)."""
    detections = conf >= threshold
    weights = conf.to(dtype)
    if valid_mask is not None:
        detections = detections & valid_mask
        weights = torch.where(valid_mask, weights, torch.zeros((), dtype=dtype, device=conf.device))
    prefix_conf = torch.nn.functional.pad(weights.cumsum(-1), (1, 0)).flatten()
    count_dtype = torch.int16 if grid.cols < 2**15 else torch.int32  # row counts are at most W
    counts = detections.to(count_dtype).cumsum(-1, dtype=count_dtype)
    prefix_det = torch.nn.functional.pad(counts, (1, 0)).flatten()
    return prefix_conf, prefix_det


def _primitives(config: CorridorConfig, grid: BevGrid, dtype: torch.dtype, device: torch.device) -> _Primitives:
    """The stage's manoeuvres from the config's wheel angles, speed, step and steps per stage."""
    angles = torch.tensor(config.wheel_angles, dtype=dtype, device=device)  # angles[0] == 0: straight
    curvature = torch.tan(angles) / config.wheelbase
    arc = config.speed * torch.cos(angles) * config.dt * config.steps_per_stage
    turn = curvature.abs() * arc
    bulge = float(((1.0 / curvature.abs().clamp_min(1e-12) + 0.5 * config.width) * (1 - torch.cos(turn / 2))).max())
    return _Primitives(angles, curvature, arc, bulge + 1e-3 * grid.resolution)


def _start_beam(
    batch: int, K: int, n_max: int, config: CorridorConfig, grid: BevGrid, dtype: torch.dtype, device: torch.device
) -> _Beam:
    """Every frame at the start pose, with one live hypothesis of fitness 0."""
    x_start, z_start, h_start = _start_pose(config, grid)
    pose = torch.tensor([x_start, z_start, h_start], dtype=dtype, device=device).expand(batch, K, 3).clone()
    fitness = torch.full((batch, K), -math.inf, dtype=torch.float64, device=device)
    fitness[:, 0] = 0.0
    path = torch.full((batch, K, 1 + n_max * config.steps_per_stage, 3), math.nan, dtype=dtype, device=device)
    path[:, :, 0] = pose
    choice = torch.full((batch, K, n_max), -1, dtype=torch.long, device=device)
    num_stages = torch.zeros(batch, dtype=torch.long, device=device)
    active = torch.ones(batch, dtype=torch.bool, device=device)
    return _Beam(pose, fitness, path, choice, num_stages, active)


def _step_candidates(hyp: Tensor, K: int, primitives: _Primitives, config: CorridorConfig) -> Tensor:
    """Step poses ``(b, nh, K, S, 3)`` of every hypothesis ``hyp`` ``(b, nh, 3)`` extended by every primitive."""
    b, nh = hyp.shape[:2]
    x, z, h = (v[:, :, None].expand(b, nh, K) for v in hyp.unbind(-1))
    steps = []
    for _ in range(config.steps_per_stage):
        x, z, h = single_track_step(x, z, h, config.speed, primitives.angles, config.dt, config.wheelbase)
        steps.append(torch.stack([x, z, h], -1))
    return torch.stack(steps, -2)


def _candidate_sums(
    start: Tensor,
    end: Tensor,
    ids: Tensor,
    primitives: _Primitives,
    prefix: tuple[Tensor, Tensor],
    config: CorridorConfig,
    grid: BevGrid,
) -> tuple[Tensor, Tensor, Tensor]:
    """Area, confidence sum and detection count of every candidate element, each ``(b, nh * K)``."""
    b, nh, K = start.shape[:3]
    first_row, num_rows = _element_rows(start, end, config.width, primitives.bulge, grid)
    parts = []  # the straight primitive and the curved ones are rasterised separately (no wasted work)
    for group in (slice(0, 1), slice(1, K)) if K > 1 else (slice(0, 1),):
        k_group = primitives.curvature[group].expand(b, nh, -1)
        spans = _element_spans(
            start[:, :, group], end[:, :, group], k_group, config.width, grid, first_row[:, :, group], num_rows
        )
        area, (conf_sum, det_sum) = _span_sums(*spans, prefix, ids, grid)
        parts.append(torch.stack([area.double(), conf_sum.double(), det_sum.double()]))
    area, conf_sum, det_sum = (v.flatten(1) for v in torch.cat(parts, -1))
    return area, conf_sum, det_sum


def _search_stage(
    stage: int,
    beam: _Beam,
    primitives: _Primitives,
    prefix: tuple[Tensor, Tensor],
    config: CorridorConfig,
    grid: BevGrid,
) -> None:
    """Extend the kept hypotheses of the frames still searching by one stage and keep the best ``K`` (in place)."""
    K, S = primitives.angles.numel(), config.steps_per_stage
    ids = beam.active.nonzero().flatten()  # frames still searching
    b = ids.numel()
    nh = 1 if stage == 0 else K  # hypotheses to extend (only the start pose at first)
    hyp = beam.pose[ids, :nh]
    steps = _step_candidates(hyp, K, primitives, config)  # (b, nh, K, S, 3)
    end = steps[..., -1, :]
    area, conf_sum, det_sum = _candidate_sums(
        hyp[:, :, None].expand(b, nh, K, 3), end, ids, primitives, prefix, config, grid
    )
    alive = torch.isfinite(beam.fitness[ids, :nh]).repeat_interleave(K, 1)
    admissible = alive & (area > 0) & (det_sum > config.det_min * area)
    progress = admissible.any(1)
    candidate_fitness = torch.where(admissible, beam.fitness[ids, :nh].repeat_interleave(K, 1) + conf_sum, -math.inf)
    order = torch.sort(candidate_fitness, dim=1, descending=True, stable=True).indices[:, :K]
    parent, primitive = order // K, order % K
    rows_b = torch.arange(b, device=ids.device)[:, None]
    new_path = beam.path[ids[:, None], parent]
    new_path[:, :, 1 + stage * S : 1 + (stage + 1) * S] = steps.flatten(1, 2)[rows_b, order]
    new_choice = beam.choice[ids[:, None], parent]
    new_choice[:, :, stage] = primitive
    upd = progress[:, None]
    beam.fitness[ids] = torch.where(upd, torch.gather(candidate_fitness, 1, order), beam.fitness[ids])
    beam.pose[ids] = torch.where(upd[..., None], end.flatten(1, 2)[rows_b, order], beam.pose[ids])
    beam.path[ids] = torch.where(upd[..., None, None], new_path, beam.path[ids])
    beam.choice[ids] = torch.where(upd[..., None], new_choice, beam.choice[ids])
    beam.num_stages[ids] += progress.long()
    reached_far_edge = beam.pose[ids, 0, 1] >= grid.z_max
    beam.active[ids] = progress & ~reached_far_edge


def _best_corridor(
    beam: _Beam, primitives: _Primitives, n_max: int, config: CorridorConfig, grid: BevGrid
) -> CorridorFit:
    """The corridor of the best kept hypothesis (slot 0: candidates are sorted by fitness): mask, borders, ..."""
    S = config.steps_per_stage
    best_path = beam.path[:, 0]
    best_choice = beam.choice[:, 0]
    zero = torch.zeros((), dtype=best_path.dtype, device=best_path.device)
    used = best_choice >= 0
    element_start = torch.nan_to_num(best_path[:, 0 : n_max * S : S])
    element_end = torch.nan_to_num(best_path[:, S::S])
    element_k = torch.where(used, primitives.curvature[best_choice.clamp_min(0)], zero)
    first_row, num_rows = _element_rows(element_start, element_end, config.width, primitives.bulge, grid)
    rows, col_lo, col_hi = _element_spans(
        element_start, element_end, element_k, config.width, grid, first_row, num_rows
    )
    mask = _paint_spans(rows, col_lo, col_hi, used, grid)
    right_dir = torch.stack([torch.cos(best_path[..., 2]), -torch.sin(best_path[..., 2])], -1)
    center = best_path[..., :2]
    left = center - 0.5 * config.width * right_dir
    right = center + 0.5 * config.width * right_dir
    wheel = torch.where(used, primitives.angles[best_choice.clamp_min(0)], torch.full_like(zero, math.nan))
    length = torch.where(used, primitives.arc[best_choice.clamp_min(0)], zero).sum(-1)
    best_fitness = torch.where(beam.num_stages > 0, beam.fitness[:, 0], torch.zeros_like(beam.fitness[:, 0]))
    return CorridorFit(mask, best_path, left, right, wheel, beam.num_stages, length, best_fitness)


# ----------------------------------------------------------------------------------------------------------------
# Scores against the ground-truth ego-lane


def _eval_rows(grid: BevGrid, min_distance: float, device: torch.device | str | None = None) -> Tensor:
    """Grid row indices scored, ordered near to far: rows whose center lies at ``z >= min_distance``."""
    z = grid.z_centers(torch.float64, device)
    rows = torch.nonzero(z >= min_distance).flatten().flip(0)
    if rows.numel() == 0:
        raise ValueError(f"`min_distance` ({min_distance} m) must lie before the grid's far edge ({grid.z_max} m)")
    return rows


def corridor_row_statistics(
    corridor: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    grid: BevGrid | None = None,
    min_distance: float = 9.0,
    min_overlap: float = 2.0,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-row counts of a corridor against the ground-truth ego-lane, summed over the batch.

    Rows are those with center ``z >= min_distance``, ordered near to far (``E`` rows; ``z`` gives their
    distance). Only cells with ``valid`` count (the rest is don't-care). Per row and frame: ``tp_cells`` /
    ``fp_cells`` are corridor cells on / off the ground truth (lateral precision); the row is a longitudinal TP
    when corridor and ground truth overlap by ``>= min_overlap`` metres, an FP when the corridor is present
    without such overlap, an FN when the ground truth is present and the corridor is not. ``hit_rows[e]``
    counts the frames whose rows ``0..e`` are all longitudinal TPs.

    Args:
        corridor: ``(B, H, W)`` bool corridor mask (:attr:`CorridorFit.mask`).
        target: ``(B, H, W)`` binary ground-truth ego-lane; every frame needs at least one valid lane cell.
        valid: optional ``(B, H, W)`` binary mask of evaluated cells.
        validate_args: refuse non-binary ``target`` and ``valid`` masks (a read-back); ``False`` skips it.

    Returns:
        dict of ``E``-long tensors ``z`` (metres), ``tp_cells``, ``fp_cells``, ``row_tp``, ``row_fp``,
        ``row_fn``, ``hit_rows`` (long), and the scalar ``frames``.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.functional import corridor_row_statistics
        >>> grid = BevGrid()  # KITTI-ROAD BEV grid, (800, 400) cells of 0.05 m
        >>> lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)  # (B, H, W): a straight 3.5 m ego-lane
        >>> stats = corridor_row_statistics(lane, lane)  # the ground truth as corridor
        >>> stats["z"].shape, stats["row_tp"].sum(), stats["fp_cells"].sum()
        (torch.Size([740]), tensor(740), tensor(0))
    """
    grid = grid if grid is not None else BevGrid()
    check_tensor(corridor, "corridor")
    _check_grid_input(corridor, "corridor", grid)
    target_mask = _prepare_mask(target, "target", corridor, grid, validate_args)
    valid_mask = _prepare_mask(valid, "valid", corridor, grid, validate_args)
    if not min_overlap > 0:
        raise ValueError(f"`min_overlap` must be > 0 metres, got {min_overlap}")
    gt = target_mask & valid_mask
    empty = ~gt.flatten(1).any(1)
    if bool(empty.any()):
        raise ValueError(
            f"`target` has no (valid) ego-lane cell in frame(s) {empty.nonzero().flatten().tolist()}: "
            "the corridor scores need a ground-truth lane"
        )
    rows = _eval_rows(grid, min_distance, corridor.device)
    corr = (corridor.bool() & valid_mask)[:, rows]
    gt = gt[:, rows]
    corr_cells = corr.sum(-1)
    tp_cells = (corr & gt).sum(-1)
    min_cells = math.ceil(min_overlap / grid.resolution - 1e-6)
    row_tp = tp_cells >= min_cells
    corr_present = corr_cells > 0
    row_fp = corr_present & ~row_tp
    row_fn = gt.any(-1) & ~corr_present
    hit = row_tp.long().cumprod(-1)
    return {
        "z": grid.z_centers(torch.float64, corridor.device)[rows],
        "tp_cells": tp_cells.sum(0),
        "fp_cells": (corr_cells - tp_cells).sum(0),
        "row_tp": row_tp.long().sum(0),
        "row_fp": row_fp.long().sum(0),
        "row_fn": row_fn.long().sum(0),
        "hit_rows": hit.sum(0),
        "frames": torch.tensor(corridor.shape[0], device=corridor.device),
    }


def _ratio(num: Tensor, den: Tensor) -> Tensor:
    """float64 ``num / den``, 0 where ``den`` is 0."""
    return safe_divide(num.double(), den.double())


def corridor_curves(stats: dict[str, Tensor], *, validate_args: bool = True) -> dict[str, Tensor]:
    """Integrated scores as functions of the distance ``d`` (the paper's Fig. 13) from row statistics.

    Returns ``z`` (metres, near to far) and, for ``d = z[e]``, ``precision_lat`` (TP / (TP + FP) of corridor cells
    over ``min_distance <= z <= d``), ``f1_long`` (2 TP / (2 TP + FP + FN) of rows), ``hitrate`` (fraction of
    frames hit up to ``d``). Undefined ratios over scored frames (0 / 0, e.g. no corridor at all) are 0; with no
    frame scored at all every score is NaN (nothing was measured).

    ``validate_args`` checks ``stats``: the keys of :func:`corridor_row_statistics`, rows of one length,
    non-negative counts (a read-back).

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.functional import corridor_curves
        >>> from drivemetrics.functional import corridor_row_statistics
        >>> grid = BevGrid()  # KITTI-ROAD BEV grid, (800, 400) cells of 0.05 m
        >>> lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)  # (B, H, W): a straight 3.5 m ego-lane
        >>> curves = corridor_curves(corridor_row_statistics(lane, lane))
        >>> curves["z"][-1], curves["f1_long"][-1]
        (tensor(45.9750, dtype=torch.float64), tensor(1., dtype=torch.float64))
    """
    if validate_args:
        _check_row_statistics(stats)
    tp, fp = stats["tp_cells"].cumsum(0), stats["fp_cells"].cumsum(0)
    rtp, rfp, rfn = stats["row_tp"].cumsum(0), stats["row_fp"].cumsum(0), stats["row_fn"].cumsum(0)
    frames = stats["frames"].double()
    scores = {
        "precision_lat": _ratio(tp, tp + fp),
        "f1_long": _ratio(2 * rtp, 2 * rtp + rfp + rfn),
        "hitrate": _ratio(stats["hit_rows"], frames.expand_as(stats["z"])),
    }
    none = frames == 0  # a tensor test, no host sync
    return {"z": stats["z"], **{k: torch.where(none, torch.full_like(v, math.nan), v) for k, v in scores.items()}}


_ROW_KEYS = ("z", "tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows")


def _check_row_statistics(stats: dict[str, Tensor]) -> None:
    """``validate_args`` of :func:`corridor_curves`: the keys of :func:`corridor_row_statistics`, ``E``-long rows,
    non-negative counts."""
    missing = [k for k in (*_ROW_KEYS, "frames") if k not in stats]
    if missing:
        raise ValueError(f"`stats` lacks {missing}: pass the dict of corridor_row_statistics")
    rows = stats["z"].shape
    for key in _ROW_KEYS[1:]:
        if stats[key].shape != rows:
            raise ValueError(
                f"`stats['{key}']` must have the shape {tuple(rows)} of `stats['z']`, got {tuple(stats[key].shape)}"
            )
        check_values(stats[key], f"stats['{key}']", low=0, what="counts")
    check_values(stats["frames"], "stats['frames']", low=0, what="counts")


def _scores_at(stats: dict[str, Tensor], distances: Sequence[float], grid: BevGrid) -> dict[str, Tensor]:
    curves = corridor_curves(stats, validate_args=False)
    z = curves["z"]
    out: dict[str, Tensor] = {}
    for name in ("precision_lat", "f1_long", "hitrate"):
        for d in distances:
            if not (d <= grid.z_max and bool((z <= d).any())):
                raise ValueError(
                    f"distance {d} m must lie between the first scored row ({z[0]:.3f} m) and the far edge"
                )
            index = int((z <= d + 1e-9).sum()) - 1
            out[f"{name}_{d:g}m"] = curves[name][index]
    return out


def driving_corridor_scores(
    preds: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    threshold: float,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Fit the corridor to ``preds`` and score it against ``target``, pooled over the batch (Table IV).

    Returns ``precision_lat_{d}m``, ``f1_long_{d}m`` and ``hitrate_{d}m`` for each distance ``d`` of the
    config (e.g. ``precision_lat_20m``). Arguments as in :func:`fit_driving_corridor` and
    :func:`corridor_row_statistics`.

    ``validate_args`` as in :func:`fit_driving_corridor` and :func:`corridor_row_statistics`.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.functional import driving_corridor_scores
        >>> grid = BevGrid()  # KITTI-ROAD BEV grid, (800, 400) cells of 0.05 m
        >>> lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)  # (B, H, W): a straight 3.5 m ego-lane
        >>> scores = driving_corridor_scores(lane.float(), lane, threshold=0.5)
        >>> scores["precision_lat_30m"], scores["hitrate_40m"]
        (tensor(1., dtype=torch.float64), tensor(1., dtype=torch.float64))
    """
    grid = grid if grid is not None else BevGrid()
    config = config if config is not None else CorridorConfig()
    fit = fit_driving_corridor(preds, valid, threshold=threshold, grid=grid, config=config, validate_args=validate_args)
    stats = corridor_row_statistics(
        fit.mask,
        target,
        valid=valid,
        grid=grid,
        min_distance=config.min_distance,
        min_overlap=config.min_overlap,
        validate_args=validate_args,
    )
    return _scores_at(stats, config.distances, grid)


class DrivingCorridorMetrics(MetricFamily):
    """Driving-corridor scores (lateral precision, longitudinal F1, hitrate at distances), pooled over frames.

    ``update(preds, target, valid=None)`` fits the corridor to each ``(B, H, W)`` BEV confidence map and adds its
    per-row counts (sum-reduced counters, so the metric syncs across processes). ``compute()`` returns the dict of
    :func:`driving_corridor_scores`; :meth:`compute_curves` the curves of :func:`corridor_curves`.

    Args:
        threshold: detection working point in (0, 1] (default 0.5).
        grid: BEV grid (default KITTI-ROAD). config: :class:`CorridorConfig` (default: the paper's).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.road import DrivingCorridorMetrics
        >>> grid = BevGrid()  # KITTI-ROAD BEV grid, (800, 400) cells of 0.05 m
        >>> lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)  # (B, H, W): a straight 3.5 m ego-lane
        >>> metric = DrivingCorridorMetrics(threshold=0.5)
        >>> metric.update(lane.float(), lane)
        >>> metric.compute()["hitrate_30m"]
        tensor(1., dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    tp_cells: Tensor
    fp_cells: Tensor
    row_tp: Tensor
    row_fp: Tensor
    row_fn: Tensor
    hit_rows: Tensor
    frames: Tensor
    length_sum: Tensor

    def __init__(
        self,
        threshold: float = 0.5,
        grid: BevGrid | None = None,
        config: CorridorConfig | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        self.threshold = _check_threshold(threshold)
        self.grid = grid if grid is not None else BevGrid()
        self.config = config if config is not None else CorridorConfig()
        self.distances = tuple(self.config.distances)  # where compute() scores (a scalar class: its one distance)
        _start_pose(self.config, self.grid)
        rows = _eval_rows(self.grid, self.config.min_distance)
        num = rows.numel()
        self.register_buffer("z", self.grid.z_centers(torch.float64)[rows], persistent=False)
        for name in ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows"):
            self.add_state(name, torch.zeros(num, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("frames", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("length_sum", torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        add_config_state(self, ("DrivingCorridor", self.threshold, self.grid, self.config))

    def update(self, preds: Tensor, target: Tensor, *, valid: Tensor | None = None) -> None:
        """Fit the corridors of a batch and add their counts (a batch of no frame adds nothing)."""
        if preds.ndim == 3 and preds.shape[0] == 0 and target.shape[0] == 0:
            return  # e.g. no frame with a lane ground truth on this process: every process still syncs in compute
        fit = fit_driving_corridor(
            preds, valid, threshold=self.threshold, grid=self.grid, config=self.config, validate_args=self.validate_args
        )
        stats = corridor_row_statistics(
            fit.mask,
            target,
            valid=valid,
            grid=self.grid,
            min_distance=self.config.min_distance,
            min_overlap=self.config.min_overlap,
            validate_args=self.validate_args,
        )
        for name in ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows"):
            setattr(self, name, getattr(self, name) + stats[name])
        self.frames = self.frames + stats["frames"]
        self.length_sum = self.length_sum + fit.length.double().sum()

    def _stats(self) -> dict[str, Tensor]:
        names = ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows", "frames")
        return {"z": self.z, **{name: getattr(self, name) for name in names}}

    def compute(self) -> dict[str, Tensor]:
        """Scores at the config's distances, plus ``mean_length`` (mean corridor arc length, metres)."""
        out = _scores_at(self._stats(), self.distances, self.grid)
        mean_length = _ratio(self.length_sum, self.frames)
        out["mean_length"] = torch.where(self.frames > 0, mean_length, torch.full_like(mean_length, math.nan))
        return out

    def compute_curves(self) -> dict[str, Tensor]:
        """Synced curves of precision, F1 and hitrate over the distance (see :func:`corridor_curves`)."""
        with self.sync_context():
            return {k: v.clone() for k, v in corridor_curves(self._stats(), validate_args=False).items()}

    def plot(self, val: dict[str, Tensor] | Sequence[dict[str, Tensor]] | None = None, ax: Any = None) -> Any:
        """Plot with matplotlib; returns ``(fig, ax)``.

        ``val=None``: the current curves of precision, F1 and hitrate over the distance (:meth:`compute_curves`).
        Otherwise ``val`` is a dict from :meth:`compute` or a sequence of them (over epochs); ``mean_length``
        (metres) is left out so that the scores share the [0, 1] axis.
        """
        if val is None:
            return _plot_corridor_curves(self.compute_curves(), ax)
        if isinstance(val, dict):
            return plot_metric(self, {k: v for k, v in val.items() if k != "mean_length"}, ax)
        return plot_metric(self, [{k: v for k, v in d.items() if k != "mean_length"} for d in val], ax)


def _plot_corridor_curves(curves: dict[str, Tensor], ax: Any = None) -> tuple[Any, Any]:
    plt = require("plot", "matplotlib.pyplot", "plot()")
    fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
    z = curves["z"].cpu().numpy()
    for name in ("precision_lat", "f1_long", "hitrate"):
        ax.plot(z, curves[name].cpu().numpy(), label=name)
    ax.set_xlabel("distance d (m)")
    ax.set_ylabel("score up to d")
    ax.set_ylim(0, 1.01)
    ax.legend(loc="lower left")
    return fig, ax


def _check_distance(distance: float, z: Tensor, grid: BevGrid) -> float:
    """``distance`` (metres) as a float when it lies between the first scored row ``z[0]`` and the far edge."""
    if not (isinstance(distance, int | float) and bool((z <= distance).any()) and distance <= grid.z_max):
        raise ValueError(
            f"`distance` must lie between the first scored row ({float(z[0]):.3f} m) and the grid's far "
            f"edge ({grid.z_max} m), got {distance!r}"
        )
    return float(distance)


class _DrivingCorridorAtDistance(ScalarMetric, DrivingCorridorMetrics):
    """A corridor score up to one distance ``d``: the family's arguments plus ``distance`` (metres).

    ``distance`` may be any distance between the first scored row and the grid's far edge, not only the config's
    ``distances``. A scalar for ``self.log`` that shares :class:`DrivingCorridorMetrics`' states.
    """

    def __init__(
        self,
        threshold: float = 0.5,
        grid: BevGrid | None = None,
        config: CorridorConfig | None = None,
        *,
        distance: float = 30.0,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(threshold, grid, config, validate_args=validate_args, **kwargs)
        self.distance = _check_distance(distance, self.z, self.grid)
        self.distances = (self.distance,)


class DrivingCorridorLateralPrecision(_DrivingCorridorAtDistance):
    """Lateral precision of the corridor up to ``distance`` (corridor cells on the ego-lane / all corridor cells).

    Arguments: those of :class:`DrivingCorridorMetrics` plus ``distance``, ``d`` in metres (any distance between the
    first scored row and the grid's far edge); the same for the other corridor scalars.

    Examples:
        >>> from drivemetrics.road import DrivingCorridorLateralPrecision, corridor_example_inputs
        >>> DrivingCorridorLateralPrecision(0.5, distance=30.0)(**corridor_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "precision_lat_{distance:g}m"


class DrivingCorridorLongitudinalF1Score(_DrivingCorridorAtDistance):
    """Longitudinal F1 of the corridor rows up to ``distance`` (``2 TP / (2 TP + FP + FN)`` of rows; arguments as
    :class:`DrivingCorridorLateralPrecision`).

    Examples:
        >>> from drivemetrics.road import DrivingCorridorLongitudinalF1Score, corridor_example_inputs
        >>> DrivingCorridorLongitudinalF1Score(0.5, distance=20.0)(**corridor_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "f1_long_{distance:g}m"


class DrivingCorridorHitRate(_DrivingCorridorAtDistance):
    """Fraction of frames whose corridor hits the ego-lane on every scored row up to ``distance`` (default 30 m;
    arguments as :class:`DrivingCorridorLateralPrecision`).

    Examples:
        >>> from drivemetrics.road import DrivingCorridorHitRate, corridor_example_inputs
        >>> DrivingCorridorHitRate(0.5)(**corridor_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "hitrate_{distance:g}m"
