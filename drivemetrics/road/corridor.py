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
lateral lines of the start and end poses. A cell belongs to an element when its *centre* lies in that region
(half-open between consecutive elements, so they never share a cell). Each grid row meets the region in at most two
intervals, computed in closed form; sums over cells then come from per-row prefix sums. The cost is a few
operations per row and element, with no loop over cells, candidates or frames (only over search stages).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import add_config_state, plot_metric
from drivemetrics._validation import check_binary, check_shape, check_tensor
from drivemetrics.configs import config_path
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.vehicle.single_track import single_track_step

__all__ = [
    "CorridorConfig",
    "CorridorFit",
    "DrivingCorridorHitRate",
    "DrivingCorridorLateralPrecision",
    "DrivingCorridorLongitudinalF1Score",
    "DrivingCorridorMetric",
    "corridor_curves",
    "corridor_row_statistics",
    "corridor_table",
    "driving_corridor_scores",
    "fit_driving_corridor",
    "format_corridor_table",
    "kitti_corridor_table",
    "load_corridor_config",
]

#: The shipped defaults (package data ``drivemetrics/configs/corridor.toml``, found in a wheel as in a checkout).
DEFAULT_CONFIG_PATH = config_path("corridor.toml")


@dataclass(frozen=True)
class CorridorConfig:
    """Parameters of the corridor fit and of its scores; the paper's defaults (the shipped ``corridor.toml``).

    Vehicle and search:
        speed: ``v0`` in m/s. wheelbase: ``L`` in metres. dt: step in seconds. steps_per_stage: ``S`` steps per
        manoeuvre. curvatures_per_side: ``N``; the wheel angles are ``k * wheel_angle_step`` for
        ``k = -N..N`` (radians), i.e. ``2N + 1`` primitives. width: corridor width ``W`` in metres. det_min:
        minimum fraction of a new element's area covered by detections for the search to go on.
        start_x / start_z / start_heading: start pose (metres, metres, radians); ``start_z = None`` is the grid's
        near edge. max_stages: cap on the number of stages (``None``: enough to cross the grid's diagonal).
    Scores:
        min_distance: rows nearer than this (metres) are not scored. min_overlap: lateral overlap in metres of
        corridor and ground truth for a row to be a longitudinal hit. distances: the distances ``d`` in metres of
        the table.
    """

    speed: float = 10.0
    wheelbase: float = 2.7
    dt: float = 0.05
    steps_per_stage: int = 6
    curvatures_per_side: int = 2
    wheel_angle_step: float = 0.05
    width: float = 2.2
    det_min: float = 0.5
    start_x: float = 0.0
    start_z: float | None = None
    start_heading: float = 0.0
    max_stages: int | None = None
    min_distance: float = 9.0
    min_overlap: float = 2.0
    distances: tuple[float, ...] = (20.0, 30.0, 40.0)

    def __post_init__(self) -> None:
        positive = ("speed", "wheelbase", "dt", "width", "wheel_angle_step", "min_overlap")
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"`{name}` must be a finite number > 0, got {value!r}")
        for name in ("steps_per_stage", "curvatures_per_side"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name == "steps_per_stage" else 0):
                raise ValueError(
                    f"`{name}` must be an integer >= {1 if name == 'steps_per_stage' else 0}, got {value!r}"
                )
        if self.max_stages is not None and (not isinstance(self.max_stages, int) or self.max_stages < 1):
            raise ValueError(f"`max_stages` must be None or an integer >= 1, got {self.max_stages!r}")
        if not 0 <= self.det_min < 1:
            raise ValueError(f"`det_min` must lie in [0, 1), got {self.det_min}")
        max_angle = self.curvatures_per_side * self.wheel_angle_step
        if max_angle >= math.pi / 2:
            raise ValueError(f"the largest wheel angle N * wheel_angle_step must be < pi / 2 rad, got {max_angle}")
        if max_angle > 0 and self.wheelbase / math.tan(max_angle) <= self.width / 2:
            raise ValueError(
                f"the tightest turn radius L / tan({max_angle:.3g}) = {self.wheelbase / math.tan(max_angle):.3g} m "
                f"must exceed half the corridor width ({self.width / 2} m)"
            )
        if not (math.isfinite(self.min_distance) and self.min_distance >= 0):
            raise ValueError(f"`min_distance` must be a finite number >= 0 metres, got {self.min_distance}")
        object.__setattr__(self, "distances", tuple(float(d) for d in self.distances))
        if not self.distances or any(not d > self.min_distance for d in self.distances):
            raise ValueError(f"`distances` must be non-empty and each > min_distance, got {self.distances}")

    @property
    def wheel_angles(self) -> tuple[float, ...]:
        """The ``2N + 1`` wheel angles (radians) in search priority order: 0, -a, +a, -2a, +2a, ..."""
        angles = [0.0]
        for i in range(1, self.curvatures_per_side + 1):
            angles += [-i * self.wheel_angle_step, i * self.wheel_angle_step]
        return tuple(angles)

    @property
    def stage_length(self) -> float:
        """Arc length in metres of a straight manoeuvre (the longest one), ``v dt S``."""
        return self.speed * self.dt * self.steps_per_stage

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)


def load_corridor_config(path: str | Path | None = None, **overrides: Any) -> CorridorConfig:
    """Read a :class:`CorridorConfig` from a TOML file (default: the shipped ``corridor.toml``), then apply overrides.

    The file's tables (``[vehicle]``, ``[search]``, ``[scores]``) only group the keys; every key must be a field
    of :class:`CorridorConfig`. ``start_z`` / ``max_stages`` may be the string ``"auto"`` (meaning ``None``).
    """
    path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    if not path.is_file():
        raise FileNotFoundError(f"corridor config file not found: {path}")
    try:
        import tomllib
    except ModuleNotFoundError as err:  # Python 3.10
        raise ModuleNotFoundError("reading TOML configs needs Python >= 3.11 (tomllib)") from err
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    known = {f.name for f in fields(CorridorConfig)}
    values: dict[str, Any] = {}
    for section, table in data.items():
        items = table.items() if isinstance(table, dict) else [(section, table)]
        for key, value in items:
            if key not in known:
                raise KeyError(f"{path}: unknown corridor parameter {key!r} (known: {sorted(known)})")
            values[key] = None if value == "auto" else value
    if "distances" in values:
        values["distances"] = tuple(values["distances"])
    return replace(CorridorConfig(**values), **overrides)


class CorridorFit(NamedTuple):
    """The fitted corridor of each frame (``P = 1 + max_stages * steps_per_stage`` step poses; NaN after the end).

    mask: ``B x H x W`` bool, the grid cells of the corridor. path: ``B x P x 3`` centreline poses
    ``(x, z, heading)`` at every step (metres, metres, radians). left / right: ``B x P x 2`` boundary points
    ``(x, z)`` at ``-W/2`` / ``+W/2`` across the heading. wheel_angles: ``B x max_stages`` wheel angle of each
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
    elements). Rows are those whose centre can lie inside; the count is the largest over all elements.
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
        start, end: ``... x 3`` start and end poses ``(x, z, heading)`` of each element.
        curvature: ``...`` signed curvature ``tan(rho) / L`` in 1/m (positive turns right; 0 is straight).
        width: corridor width in metres.
        first_row, num_rows: the rows examined, from :func:`_element_rows`.

    Returns:
        ``rows``: ``... x R`` row indices (may lie outside the grid), ``col_lo`` / ``col_hi``: ``... x R x 2``
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
    ``prefix``: flattened ``B x H x (W + 1)`` row-wise prefix sums of all frames. Returns the area ``b x ...``
    (long) and one ``b x ...`` sum per prefix table. Cells outside the grid to the left, right or near side count
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
    """Mask ``B x H x W`` of the cells covered by the spans of the elements with ``keep`` (``B x M``)."""
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


def _prepare_confidence(preds: Tensor, grid: BevGrid) -> Tensor:
    check_tensor(preds, "preds")
    _check_grid_input(preds, "preds", grid)
    if preds.dtype == torch.uint8:
        return preds.float() / 255.0
    if not preds.is_floating_point():
        raise ValueError(f"`preds` must be a floating confidence map in [0, 1] or uint8 in 0..255, got {preds.dtype}")
    if preds.numel():
        low, high = torch.aminmax(preds.detach())
        if not (float(low) >= 0 and float(high) <= 1):  # also catches NaN
            raise ValueError(
                f"`preds` must hold finite confidences in [0, 1] (or uint8 in 0..255), got min {float(low):.4g}, "
                f"max {float(high):.4g}"
            )
    return preds


def _prepare_mask(mask: Tensor | None, name: str, like: Tensor, grid: BevGrid) -> Tensor:
    if mask is None:
        return torch.ones(like.shape, dtype=torch.bool, device=like.device)
    check_tensor(mask, name)
    _check_grid_input(mask, name, grid)
    if mask.shape[0] != like.shape[0]:
        raise ValueError(f"`{name}` must have batch size {like.shape[0]}, got {mask.shape[0]}")
    check_binary(mask, name)
    return mask.to(device=like.device, dtype=torch.bool)


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, Tensor):
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
) -> CorridorFit:
    """Fit the driving corridor to BEV ego-lane confidence maps by the paper's multi-stage search.

    Args:
        preds: ``B x H x W`` confidence in [0, 1] (float) or 0..255 (uint8) on ``grid``.
        valid: optional ``B x H x W`` mask of cells seen by the camera; cells outside it count as no detection
            (confidence 0).
        threshold: detection working point in (0, 1]: a cell is a detection when ``confidence >= threshold``.
        grid: the BEV grid (default: KITTI-ROAD, 800 x 400 at 0.05 m).
        config: search parameters (default: the paper's, :class:`CorridorConfig`).

    The search, precisely:

    * Stage 1 extends the start pose by the ``2N + 1`` primitives; later stages extend each kept hypothesis by the
      ``2N + 1`` primitives from its end pose and heading, giving up to ``(2N + 1)^2`` candidates.
    * A candidate is *admissible* when its new element has ``detections / area > det_min``. The area counts the
      cells whose centre lies in the element, including cells outside the grid to the left, right and near side
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
    """
    grid = grid if grid is not None else BevGrid()
    config = config if config is not None else CorridorConfig()
    conf = _prepare_confidence(preds, grid)
    valid_mask = _prepare_mask(valid, "valid", conf, grid) if valid is not None else None
    threshold = _check_threshold(threshold)
    x_start, z_start, h_start = _start_pose(config, grid)
    device = conf.device
    dtype = torch.float64 if conf.dtype == torch.float64 else torch.float32
    B = conf.shape[0]
    n_max = _max_stages(config, grid)
    S = config.steps_per_stage

    # row-wise prefix sums of the confidence (fitness) and of the detections (admissibility), flattened
    detections = conf >= threshold
    weights = conf.to(dtype)
    if valid_mask is not None:
        detections = detections & valid_mask
        weights = torch.where(valid_mask, weights, torch.zeros((), dtype=dtype, device=device))
    prefix_conf = torch.nn.functional.pad(weights.cumsum(-1), (1, 0)).flatten()
    count_dtype = torch.int16 if grid.cols < 2**15 else torch.int32  # row counts are at most W
    counts = detections.to(count_dtype).cumsum(-1, dtype=count_dtype)
    prefix_det = torch.nn.functional.pad(counts, (1, 0)).flatten()

    angles = torch.tensor(config.wheel_angles, dtype=dtype, device=device)  # angles[0] == 0: straight
    K = angles.numel()
    curvature = torch.tan(angles) / config.wheelbase
    arc = config.speed * torch.cos(angles) * config.dt * S
    turn = curvature.abs() * arc
    bulge = float(((1.0 / curvature.abs().clamp_min(1e-12) + 0.5 * config.width) * (1 - torch.cos(turn / 2))).max())
    bulge += 1e-3 * grid.resolution

    # kept hypotheses (slot 0 is the best): end pose, fitness, step poses of the path, wheel-angle index per stage
    pose = torch.tensor([x_start, z_start, h_start], dtype=dtype, device=device).expand(B, K, 3).clone()
    fitness = torch.full((B, K), -math.inf, dtype=torch.float64, device=device)
    fitness[:, 0] = 0.0
    path = torch.full((B, K, 1 + n_max * S, 3), math.nan, dtype=dtype, device=device)
    path[:, :, 0] = pose
    choice = torch.full((B, K, n_max), -1, dtype=torch.long, device=device)
    num_stages = torch.zeros(B, dtype=torch.long, device=device)
    active = torch.ones(B, dtype=torch.bool, device=device)

    for stage in range(n_max):
        ids = active.nonzero().flatten()  # frames still searching
        b = ids.numel()
        if b == 0:
            break
        nh = 1 if stage == 0 else K  # hypotheses to extend (only the start pose at first)
        hyp = pose[ids, :nh]
        # candidates: b x nh (hypothesis) x K (primitive), stepped with the single-track model
        x, z, h = (v[:, :, None].expand(b, nh, K) for v in hyp.unbind(-1))
        steps = []
        for _ in range(S):
            x, z, h = single_track_step(x, z, h, config.speed, angles, config.dt, config.wheelbase)
            steps.append(torch.stack([x, z, h], -1))
        steps_t = torch.stack(steps, -2)  # b x nh x K x S x 3
        start = hyp[:, :, None].expand(b, nh, K, 3)
        end = steps_t[..., -1, :]
        first_row, num_rows = _element_rows(start, end, config.width, bulge, grid)
        parts = []  # the straight primitive and the curved ones are rasterised separately (no wasted work)
        for group in (slice(0, 1), slice(1, K)) if K > 1 else (slice(0, 1),):
            k_group = curvature[group].expand(b, nh, -1)
            spans = _element_spans(
                start[:, :, group], end[:, :, group], k_group, config.width, grid, first_row[:, :, group], num_rows
            )
            area, (conf_sum, det_sum) = _span_sums(*spans, (prefix_conf, prefix_det), ids, grid)
            parts.append(torch.stack([area.double(), conf_sum.double(), det_sum.double()]))
        area, conf_sum, det_sum = (v.flatten(1) for v in torch.cat(parts, -1))  # each b x (nh * K)
        alive = torch.isfinite(fitness[ids, :nh]).repeat_interleave(K, 1)
        admissible = alive & (area > 0) & (det_sum > config.det_min * area)
        progress = admissible.any(1)
        candidate_fitness = torch.where(admissible, fitness[ids, :nh].repeat_interleave(K, 1) + conf_sum, -math.inf)
        order = torch.sort(candidate_fitness, dim=1, descending=True, stable=True).indices[:, :K]
        parent, primitive = order // K, order % K
        rows_b = torch.arange(b, device=device)[:, None]
        new_path = path[ids[:, None], parent]
        new_path[:, :, 1 + stage * S : 1 + (stage + 1) * S] = steps_t.flatten(1, 2)[rows_b, order]
        new_choice = choice[ids[:, None], parent]
        new_choice[:, :, stage] = primitive
        upd = progress[:, None]
        fitness[ids] = torch.where(upd, torch.gather(candidate_fitness, 1, order), fitness[ids])
        pose[ids] = torch.where(upd[..., None], end.flatten(1, 2)[rows_b, order], pose[ids])
        path[ids] = torch.where(upd[..., None, None], new_path, path[ids])
        choice[ids] = torch.where(upd[..., None], new_choice, choice[ids])
        num_stages[ids] += progress.long()
        reached_far_edge = pose[ids, 0, 1] >= grid.z_max
        active[ids] = progress & ~reached_far_edge

    # the best kept hypothesis sits in slot 0 (candidates are sorted by fitness)
    best_path = path[:, 0]
    best_choice = choice[:, 0]
    used = best_choice >= 0
    element_start = torch.nan_to_num(best_path[:, 0 : n_max * S : S])
    element_end = torch.nan_to_num(best_path[:, S::S])
    element_k = torch.where(used, curvature[best_choice.clamp_min(0)], torch.zeros((), dtype=dtype, device=device))
    first_row, num_rows = _element_rows(element_start, element_end, config.width, bulge, grid)
    rows, col_lo, col_hi = _element_spans(
        element_start, element_end, element_k, config.width, grid, first_row, num_rows
    )
    mask = _paint_spans(rows, col_lo, col_hi, used, grid)
    right_dir = torch.stack([torch.cos(best_path[..., 2]), -torch.sin(best_path[..., 2])], -1)
    centre = best_path[..., :2]
    left = centre - 0.5 * config.width * right_dir
    right = centre + 0.5 * config.width * right_dir
    wheel = torch.where(used, angles[best_choice.clamp_min(0)], torch.full((), math.nan, dtype=dtype, device=device))
    length = torch.where(used, arc[best_choice.clamp_min(0)], torch.zeros((), dtype=dtype, device=device)).sum(-1)
    best_fitness = torch.where(num_stages > 0, fitness[:, 0], torch.zeros((), dtype=torch.float64, device=device))
    return CorridorFit(mask, best_path, left, right, wheel, num_stages, length, best_fitness)


# ----------------------------------------------------------------------------------------------------------------
# Scores against the ground-truth ego-lane


def _eval_rows(grid: BevGrid, min_distance: float, device: torch.device | str | None = None) -> Tensor:
    """Grid row indices scored, ordered near to far: rows whose centre lies at ``z >= min_distance``."""
    z = grid.z_centers(torch.float64, device)
    rows = torch.nonzero(z >= min_distance).flatten().flip(0)
    if rows.numel() == 0:
        raise ValueError(f"`min_distance` ({min_distance} m) must lie before the grid's far edge ({grid.z_max} m)")
    return rows


def corridor_row_statistics(
    corridor: Tensor,
    target: Tensor,
    valid: Tensor | None = None,
    *,
    grid: BevGrid | None = None,
    min_distance: float = 9.0,
    min_overlap: float = 2.0,
) -> dict[str, Tensor]:
    """Per-row counts of a corridor against the ground-truth ego-lane, summed over the batch.

    Rows are those with centre ``z >= min_distance``, ordered near to far (``E`` rows; ``z`` gives their
    distance). Only cells with ``valid`` count (the rest is don't-care). Per row and frame: ``tp_cells`` /
    ``fp_cells`` are corridor cells on / off the ground truth (lateral precision); the row is a longitudinal TP
    when corridor and ground truth overlap by ``>= min_overlap`` metres, an FP when the corridor is present
    without such overlap, an FN when the ground truth is present and the corridor is not. ``hit_rows[e]``
    counts the frames whose rows ``0..e`` are all longitudinal TPs.

    Args:
        corridor: ``B x H x W`` bool corridor mask (:attr:`CorridorFit.mask`).
        target: ``B x H x W`` binary ground-truth ego-lane; every frame needs at least one valid lane cell.
        valid: optional ``B x H x W`` binary mask of evaluated cells.

    Returns:
        dict of ``E``-long tensors ``z`` (metres), ``tp_cells``, ``fp_cells``, ``row_tp``, ``row_fp``,
        ``row_fn``, ``hit_rows`` (long), and the scalar ``frames``.
    """
    grid = grid if grid is not None else BevGrid()
    check_tensor(corridor, "corridor")
    _check_grid_input(corridor, "corridor", grid)
    target_mask = _prepare_mask(target, "target", corridor, grid)
    valid_mask = _prepare_mask(valid, "valid", corridor, grid)
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


def _safe_ratio(num: Tensor, den: Tensor) -> Tensor:
    num, den = num.double(), den.double()
    return torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num))


def corridor_curves(stats: dict[str, Tensor]) -> dict[str, Tensor]:
    """Integrated scores as functions of the distance ``d`` (the paper's Fig. 13) from row statistics.

    Returns ``z`` (metres, near to far) and, for ``d = z[e]``, ``precision_lat`` (TP / (TP + FP) of corridor cells
    over ``min_distance <= z <= d``), ``f1_long`` (2 TP / (2 TP + FP + FN) of rows), ``hitrate`` (fraction of
    frames hit up to ``d``). Undefined ratios over scored frames (0 / 0, e.g. no corridor at all) are 0; with no
    frame scored at all every score is NaN (nothing was measured).
    """
    tp, fp = stats["tp_cells"].cumsum(0), stats["fp_cells"].cumsum(0)
    rtp, rfp, rfn = stats["row_tp"].cumsum(0), stats["row_fp"].cumsum(0), stats["row_fn"].cumsum(0)
    frames = stats["frames"].double()
    scores = {
        "precision_lat": _safe_ratio(tp, tp + fp),
        "f1_long": _safe_ratio(2 * rtp, 2 * rtp + rfp + rfn),
        "hitrate": _safe_ratio(stats["hit_rows"], frames.expand_as(stats["z"])),
    }
    none = frames == 0  # a tensor test, no host sync
    return {"z": stats["z"], **{k: torch.where(none, torch.full_like(v, math.nan), v) for k, v in scores.items()}}


def _scores_at(stats: dict[str, Tensor], distances: Sequence[float], grid: BevGrid) -> dict[str, Tensor]:
    curves = corridor_curves(stats)
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
    valid: Tensor | None = None,
    *,
    threshold: float,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
) -> dict[str, Tensor]:
    """Fit the corridor to ``preds`` and score it against ``target``, pooled over the batch (Table IV).

    Returns ``precision_lat_{d}m``, ``f1_long_{d}m`` and ``hitrate_{d}m`` for each distance ``d`` of the
    config (e.g. ``precision_lat_20m``). Arguments as in :func:`fit_driving_corridor` and
    :func:`corridor_row_statistics`.
    """
    grid = grid if grid is not None else BevGrid()
    config = config if config is not None else CorridorConfig()
    fit = fit_driving_corridor(preds, valid, threshold=threshold, grid=grid, config=config)
    stats = corridor_row_statistics(
        fit.mask, target, valid, grid=grid, min_distance=config.min_distance, min_overlap=config.min_overlap
    )
    return _scores_at(stats, config.distances, grid)


class DrivingCorridorMetric(Metric):
    """Driving-corridor scores (lateral precision, longitudinal F1, hitrate at distances), pooled over frames.

    ``update(preds, target, valid=None)`` fits the corridor to each ``B x H x W`` BEV confidence map and adds its
    per-row counts (sum-reduced counters, so the metric syncs across processes). ``compute()`` returns the dict of
    :func:`driving_corridor_scores`; :meth:`compute_curves` the curves of :func:`corridor_curves`.

    Args:
        threshold: detection working point in (0, 1].
        grid: BEV grid (default KITTI-ROAD). config: :class:`CorridorConfig` (default: the paper's).

    Example:
        >>> metric = DrivingCorridorMetric(threshold=0.5)
        >>> metric.update(confidence, ego_lane_gt, valid)  # doctest: +SKIP
        >>> metric.compute()["hitrate_30m"]  # doctest: +SKIP
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
        self, threshold: float, grid: BevGrid | None = None, config: CorridorConfig | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.threshold = _check_threshold(threshold)
        self.grid = grid if grid is not None else BevGrid()
        self.config = config if config is not None else CorridorConfig()
        _start_pose(self.config, self.grid)
        rows = _eval_rows(self.grid, self.config.min_distance)
        num = rows.numel()
        self.register_buffer("z", self.grid.z_centers(torch.float64)[rows], persistent=False)
        for name in ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows"):
            self.add_state(name, torch.zeros(num, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("frames", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("length_sum", torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        add_config_state(self, ("DrivingCorridor", self.threshold, self.grid, self.config))

    def update(self, preds: Tensor, target: Tensor, valid: Tensor | None = None) -> None:
        """Fit the corridors of a batch and add their counts (a batch of no frame adds nothing)."""
        if preds.ndim == 3 and preds.shape[0] == 0 and target.shape[0] == 0:
            return  # e.g. no frame with a lane ground truth on this process: every process still syncs in compute
        fit = fit_driving_corridor(preds, valid, threshold=self.threshold, grid=self.grid, config=self.config)
        stats = corridor_row_statistics(
            fit.mask,
            target,
            valid,
            grid=self.grid,
            min_distance=self.config.min_distance,
            min_overlap=self.config.min_overlap,
        )
        for name in ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows"):
            setattr(self, name, getattr(self, name) + stats[name])
        self.frames += stats["frames"]
        self.length_sum += fit.length.double().sum()

    def _stats(self) -> dict[str, Tensor]:
        names = ("tp_cells", "fp_cells", "row_tp", "row_fp", "row_fn", "hit_rows", "frames")
        return {"z": self.z, **{name: getattr(self, name) for name in names}}

    def compute(self) -> dict[str, Tensor]:
        """Scores at the config's distances, plus ``mean_length`` (mean corridor arc length, metres)."""
        out = _scores_at(self._stats(), self.config.distances, self.grid)
        mean_length = _safe_ratio(self.length_sum, self.frames)
        out["mean_length"] = torch.where(self.frames > 0, mean_length, torch.full_like(mean_length, math.nan))
        return out

    def compute_curves(self) -> dict[str, Tensor]:
        """Synced curves of precision, F1 and hitrate over the distance (see :func:`corridor_curves`)."""
        with self.sync_context():
            return {k: v.clone() for k, v in corridor_curves(self._stats()).items()}

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
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as error:  # pragma: no cover - matplotlib is an optional extra
        raise ModuleNotFoundError("plot() needs matplotlib: pip install 'drivemetrics[plot]'") from error
    fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
    z = curves["z"].cpu().numpy()
    for name in ("precision_lat", "f1_long", "hitrate"):
        ax.plot(z, curves[name].cpu().numpy(), label=name)
    ax.set_xlabel("distance d (m)")
    ax.set_ylabel("score up to d")
    ax.set_ylim(0, 1.01)
    ax.legend(loc="lower left")
    return fig, ax


class _CorridorScore(DrivingCorridorMetric):
    """One corridor score at one distance, a scalar for ``self.log`` (shares :class:`DrivingCorridorMetric`'s states).

    Args:
        threshold, grid, config: as :class:`DrivingCorridorMetric`.
        distance: ``d`` in metres (any distance between the first scored row and the grid's far edge, not only
            the config's ``distances``).
    """

    curve: str
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self,
        threshold: float,
        grid: BevGrid | None = None,
        config: CorridorConfig | None = None,
        *,
        distance: float = 30.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(threshold, grid, config, **kwargs)
        if not (isinstance(distance, int | float) and bool((self.z <= distance).any()) and distance <= self.grid.z_max):
            raise ValueError(
                f"`distance` must lie between the first scored row ({float(self.z[0]):.3f} m) and the grid's far "
                f"edge ({self.grid.z_max} m), got {distance!r}"
            )
        self.distance = float(distance)

    def compute(self) -> Tensor:  # type: ignore[override]
        """The score at ``distance`` over all frames seen (float64 scalar)."""
        return _scores_at(self._stats(), [self.distance], self.grid)[f"{self.curve}_{self.distance:g}m"]

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:  # type: ignore[override]
        """Plot a value, or a sequence of values over epochs (default: the current value); ``(fig, ax)``."""
        return plot_metric(self, val, ax)


class DrivingCorridorLateralPrecision(_CorridorScore):
    """Lateral precision of the corridor up to ``distance`` (corridor cells on the ego-lane / all corridor cells)."""

    curve = "precision_lat"


class DrivingCorridorLongitudinalF1Score(_CorridorScore):
    """Longitudinal F1 of the corridor rows up to ``distance`` (``2 TP / (2 TP + FP + FN)`` of rows)."""

    curve = "f1_long"


class DrivingCorridorHitRate(_CorridorScore):
    """Fraction of frames whose corridor hits the ego-lane on every scored row up to ``distance``."""

    curve = "hitrate"


# ----------------------------------------------------------------------------------------------------------------
# Table IV


def corridor_table(
    preds: Tensor | Sequence[Tensor],
    target: Tensor | Sequence[Tensor],
    valid: Tensor | Sequence[Tensor] | None = None,
    *,
    threshold: float,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
    batch_size: int = 32,
) -> dict[str, float]:
    """The paper's Table IV for a set of BEV frames: ``{precision_lat,f1_long,hitrate}_{d}m`` and ``mean_length``.

    Args:
        preds: ``N x H x W`` confidence maps (or a sequence of ``H x W`` maps), float in [0, 1] or uint8.
        target: the ground-truth ego-lanes (``um_lane``), same layout. valid: optional masks of evaluated cells.
        threshold: the working point of the pixel evaluation (e.g. the MaxF threshold), in (0, 1].
        batch_size: frames fitted at once.
    """

    def stack(x: Tensor | Sequence[Tensor] | None, name: str) -> Tensor | None:
        if x is None or isinstance(x, Tensor):
            return x
        if len(x) == 0:
            raise ValueError(f"`{name}` holds no frames")
        return torch.stack([check_tensor(v, name) for v in x])

    preds_t, target_t, valid_t = stack(preds, "preds"), stack(target, "target"), stack(valid, "valid")
    if preds_t is None or target_t is None:
        raise ValueError("`preds` and `target` are required")
    if preds_t.shape[0] != target_t.shape[0] or (valid_t is not None and valid_t.shape[0] != preds_t.shape[0]):
        raise ValueError("`preds`, `target` and `valid` must hold the same number of frames")
    if preds_t.shape[0] == 0:
        raise ValueError("`preds` holds no frames")
    metric = DrivingCorridorMetric(threshold, grid=grid, config=config).to(preds_t.device)
    for i in range(0, preds_t.shape[0], batch_size):
        part = slice(i, i + batch_size)
        metric.update(preds_t[part], target_t[part], None if valid_t is None else valid_t[part])
    return {k: float(v) for k, v in metric.compute().items()}


def kitti_corridor_table(
    data_dir: str | Path,
    results_dir: str | Path,
    *,
    threshold: float,
    category: str = "um_lane",
    crop: bool = False,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
) -> dict[str, float]:
    """Table IV for KITTI-ROAD result PNGs of ``category`` (``um_lane``), in the BEV, like ``road-eval``.

    Ground truth and results are warped to ``grid`` with each frame's calibration by the devkit's lookup (cells
    unseen by the camera become don't-care); the corridor is fitted to each result and scored against the
    ego-lane ground truth, pooled over the frames.

    Args:
        data_dir: folder with ``gt_image_2/`` and ``calib/`` (or ``training/`` with them).
        results_dir: 8-bit confidence PNGs named like the ground truth (``um_lane_000000.png`` ...).
        threshold: the working point, e.g. ``BestThresh`` of the BEV pixel evaluation of the same results;
            a cell is a detection when ``value / 255 >= threshold``.
        crop: crop results larger than their ground truth (top-left) instead of failing.

    Returns:
        The dict of :func:`corridor_table`.
    """
    from drivemetrics.geometry.calib import read_kitti_calib
    from drivemetrics.geometry.homography import image_from_road_calib
    from drivemetrics.geometry.warp import warp_image_to_bev
    from drivemetrics.road.kitti_road import (
        _match_size,
        calib_file_for,
        category_frames,
        find_layout,
        gt_masks,
        read_confidence_png,
        read_gt_png,
    )

    grid = grid if grid is not None else BevGrid()
    layout = find_layout(data_dir, need_calib=True)
    keys = category_frames(layout.gt_dir, category)
    if not keys:
        raise ValueError(f"no {category} ground truth in {layout.gt_dir}")
    results = Path(results_dir)
    missing = [k for k in keys if not (results / f"{k}.png").is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} of {len(keys)} {category} results missing in {results}: {missing[:3]}")
    preds, lanes, valids = [], [], []
    for key in keys:
        gt = read_gt_png(layout.gt_dir / f"{key}.png")
        pred = _match_size(read_confidence_png(results / f"{key}.png"), tuple(gt.shape[1:]), key, crop)
        homography = image_from_road_calib(read_kitti_calib(calib_file_for(layout.calib_dir, key)))
        lane, valid = gt_masks(warp_image_to_bev(gt[None], homography, grid, mode="devkit")[0][0])
        preds.append(warp_image_to_bev(pred[None, None], homography, grid, mode="devkit")[0][0, 0])
        lanes.append(lane)
        valids.append(valid)
    return corridor_table(preds, lanes, valids, threshold=threshold, grid=grid, config=config)


def format_corridor_table(scores: dict[str, float], distances: Sequence[float] = (20.0, 30.0, 40.0)) -> str:
    """Table IV as text: rows Precision_lat, F1_long, Hitrate (percent); columns the distances."""
    head = f"{'':15s}" + "".join(f"{f'{d:g} m':>9s}" for d in distances)
    lines = [head]
    for key, label in (("precision_lat", "Precision_lat"), ("f1_long", "F1_long"), ("hitrate", "Hitrate")):
        lines.append(f"{label:15s}" + "".join(f"{100 * scores[f'{key}_{d:g}m']:8.1f}%" for d in distances))
    return "\n".join(lines)
