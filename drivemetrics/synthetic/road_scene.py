"""Synthetic road scenes: road geometry in the road plane, and GT masks in BEV and in perspective.

Road frame (KITTI-ROAD convention): X right, Z forward, metres, the road is the plane Y = 0. A road is a
*centerline* defined by its curvature along the arc length ``s`` (piecewise-linear curvature segments, so straight
roads, circular arcs, clothoids and S-curves), plus lateral offsets that may vary with ``s``: the road edges, the
ego-lane boundaries and a sidewalk on each side. Lateral offsets ``d`` are signed, metres, positive to the right of
the centerline (seen in the driving direction).

Everything is batched over ``B`` scenes and vectorised over query points; nothing loops over pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics.geometry.bev import BevGrid

__all__ = [
    "KITTI_IMAGE_SIZE",
    "KITTI_UM_000000_IMAGE_FROM_ROAD",
    "SCENE_KINDS",
    "Centerline",
    "Profile",
    "RenderedScene",
    "RoadCoordinates",
    "RoadGeometry",
    "baseline_prior",
    "default_image_from_road",
    "kitti_gt_image",
    "make_road",
    "mean_gt_prior",
    "render_bev",
    "render_perspective",
    "road_points_from_pixels",
    "sample_road_geometry",
]

# KITTI-ROAD training frame um_000000: image_from_road = (P2 R0_rect inv(Tr_cam_to_road))[:, [0, 2, 3]], the
# homography mapping road points (X, Z, 1) to homogeneous image points (u w, v w, w); u = column, v = row, 0-based
# pixel coordinates with pixel centers at integers.
KITTI_UM_000000_IMAGE_FROM_ROAD: tuple[tuple[float, float, float], ...] = (
    (721.407369, 609.673644, -120.951608),
    (-11.0854977, 177.699737, 1101.14431),
    (-7.4394341e-05, 0.999977409, -0.28684557),
)
KITTI_IMAGE_SIZE: tuple[int, int] = (375, 1242)  # (height, width) of um_000000


def default_image_from_road(dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The embedded KITTI-ROAD camera (um_000000 road homography), ``(3, 3)``, columns X, Z, 1.

    Examples:
        >>> from drivemetrics.synthetic import default_image_from_road
        >>> H = default_image_from_road()
        >>> tuple(H.shape), H.dtype
        ((3, 3), torch.float64)
    """
    return torch.tensor(KITTI_UM_000000_IMAGE_FROM_ROAD, dtype=dtype, device=device)


def _batch_tensor(value: Tensor | float | Sequence[float], batch_size: int, name: str, **kw: object) -> Tensor:
    """``value`` as a ``(batch_size,)`` tensor (scalars are repeated)."""
    t = torch.as_tensor(value, **kw)
    if t.ndim == 0:
        t = t.expand(batch_size)
    if t.shape != (batch_size,):
        raise ValueError(f"`{name}` must be a scalar or have shape ({batch_size},), got {tuple(t.shape)}")
    return t.clone()


# ---------------------------------------------------------------------------------------------------------------
# Profiles: piecewise-linear functions of the arc length
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A piecewise-linear function of arc length ``s`` (metres), one per scene; constant beyond the end knots.

    ``knots`` is ``(B, K)`` (non-decreasing, metres) and ``values`` is ``(B, K)``. Two equal knots make a step.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import Profile
        >>> profile = Profile(knots=torch.tensor([[0.0, 10.0]]), values=torch.tensor([[1.0, 2.0]]))
        >>> profile.batch_size
        1
    """

    knots: Tensor
    values: Tensor

    def __post_init__(self) -> None:
        if self.knots.ndim != 2 or self.knots.shape != self.values.shape or self.knots.shape[1] < 1:
            raise ValueError(
                f"profile `knots` and `values` must both have shape B x K with K >= 1, got "
                f"{tuple(self.knots.shape)} and {tuple(self.values.shape)}"
            )
        if not (bool(torch.isfinite(self.knots).all()) and bool(torch.isfinite(self.values).all())):
            raise ValueError("profile `knots` and `values` must be finite (no NaN or infinity)")
        if self.knots.shape[1] > 1 and bool((self.knots.diff(dim=1) < 0).any()):
            raise ValueError("profile `knots` must be non-decreasing along each row")

    @classmethod
    def constant(
        cls,
        value: Tensor | float | Sequence[float],
        batch_size: int = 1,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> Profile:
        """The same value at every ``s`` (``value`` scalar or one per scene)."""
        v = _batch_tensor(value, batch_size, "value", dtype=dtype, device=device)
        return cls(torch.zeros_like(v)[:, None], v[:, None])

    @classmethod
    def ramp(
        cls,
        start: Tensor | float,
        end: Tensor | float,
        value_before: Tensor | float,
        value_after: Tensor | float,
        batch_size: int = 1,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> Profile:
        """``value_before`` until ``s = start``, linear to ``value_after`` at ``s = end``, constant after."""
        kw = {"dtype": dtype, "device": device}
        s0 = _batch_tensor(start, batch_size, "start", **kw)
        s1 = _batch_tensor(end, batch_size, "end", **kw)
        v0 = _batch_tensor(value_before, batch_size, "value_before", **kw)
        v1 = _batch_tensor(value_after, batch_size, "value_after", **kw)
        return cls(torch.stack([s0, s1], 1), torch.stack([v0, v1], 1))

    @property
    def batch_size(self) -> int:
        """Number of scenes ``B``."""
        return self.knots.shape[0]

    def __call__(self, s: Tensor) -> Tensor:
        """Evaluate at arc lengths ``s`` of shape ``(B, ...)``; returns the same shape."""
        shape = s.shape
        flat = s.reshape(shape[0], -1)
        knots = self.knots.to(flat)
        values = self.values.to(flat)
        if knots.shape[1] == 1:
            return values.expand_as(flat).reshape(shape)
        idx = torch.searchsorted(knots.contiguous(), flat.contiguous(), right=True).clamp(1, knots.shape[1] - 1)
        s0, s1 = knots.gather(1, idx - 1), knots.gather(1, idx)
        v0, v1 = values.gather(1, idx - 1), values.gather(1, idx)
        span = s1 - s0
        t = torch.where(span > 0, ((flat - s0) / span.clamp_min(1e-12)).clamp(0, 1), (flat >= s1).to(flat))
        return (v0 + t * (v1 - v0)).reshape(shape)

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> Profile:
        """A copy on another device / dtype."""
        return Profile(self.knots.to(device=device, dtype=dtype), self.values.to(device=device, dtype=dtype))


def _pad_columns(t: Tensor, k: int, mode: str) -> Tensor:
    """Pad ``(B, K0)`` to ``(B, k)`` with zeros (``mode="zero"``) or by repeating the last column."""
    extra = k - t.shape[1]
    if extra <= 0:
        return t
    pad = torch.zeros_like(t[:, :1]) if mode == "zero" else t[:, -1:]
    return torch.cat([t, pad.expand(-1, extra)], 1)


def _cat_profiles(profiles: Sequence[Profile]) -> Profile:
    k = max(p.knots.shape[1] for p in profiles)
    return Profile(
        torch.cat([_pad_columns(p.knots, k, "last") for p in profiles]),
        torch.cat([_pad_columns(p.values, k, "last") for p in profiles]),
    )


# ---------------------------------------------------------------------------------------------------------------
# Centerline
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Centerline:
    """A plane curve given by its start pose and piecewise-linear curvature along the arc length.

    Attributes (``B`` scenes, ``K`` segments):
        start_x, start_z: ``(B,)`` start point, metres.
        start_heading: ``(B,)`` radians from +Z towards +X (0 drives along +Z; positive curvature turns right).
        segment_lengths: ``(B, K)`` metres (zero-length segments are allowed, e.g. as padding).
        curvature_start, curvature_end: ``(B, K)`` curvature (1/m) at the start and end of each segment; it varies
            linearly inside a segment (equal values: a circular arc; 0 and 0: straight; different: a clothoid).

    Beyond its length the curve continues straight (used only to project points; they are not on the road).

    Examples:
        >>> from drivemetrics.synthetic import Centerline, make_road
        >>> centerline = make_road(((40.0, 0.0, 0.0),)).centerline
        >>> isinstance(centerline, Centerline), centerline.segment_lengths.tolist()
        (True, [[40.0]])
    """

    start_x: Tensor
    start_z: Tensor
    start_heading: Tensor
    segment_lengths: Tensor
    curvature_start: Tensor
    curvature_end: Tensor

    def __post_init__(self) -> None:
        b = self.start_x.shape
        if len(b) != 1 or self.start_z.shape != b or self.start_heading.shape != b:
            raise ValueError("centerline `start_x`, `start_z`, `start_heading` must all have shape (B,)")
        k_shape = self.segment_lengths.shape
        if len(k_shape) != 2 or k_shape[0] != b[0]:
            raise ValueError(f"`segment_lengths` must have shape B x K with B = {b[0]}, got {tuple(k_shape)}")
        if self.curvature_start.shape != k_shape or self.curvature_end.shape != k_shape:
            raise ValueError("`curvature_start` and `curvature_end` must have the shape of `segment_lengths`")
        if bool((self.segment_lengths < 0).any()):
            raise ValueError("`segment_lengths` must be >= 0 metres")
        for name in ("start_x", "start_z", "start_heading", "segment_lengths", "curvature_start", "curvature_end"):
            if not bool(torch.isfinite(getattr(self, name)).all()):
                raise ValueError(f"centerline `{name}` contains NaN or infinite values")

    @classmethod
    def from_segments(
        cls,
        segments: Sequence[tuple[float, float, float]],
        start_x: float = 0.0,
        start_z: float = 0.0,
        start_heading: float = 0.0,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> Centerline:
        """One centerline (``B = 1``) from ``(length, curvature_start, curvature_end)`` segments."""
        if not segments:
            raise ValueError("`segments` must hold at least one (length, curvature_start, curvature_end) tuple")
        seg = torch.tensor([list(s) for s in segments], dtype=dtype, device=device)
        if seg.ndim != 2 or seg.shape[1] != 3:
            raise ValueError("each segment must be a (length, curvature_start, curvature_end) tuple")

        def one(v: float) -> Tensor:
            return torch.tensor([v], dtype=dtype, device=device)

        return cls(one(start_x), one(start_z), one(start_heading), seg[None, :, 0], seg[None, :, 1], seg[None, :, 2])

    @property
    def batch_size(self) -> int:
        """Number of scenes ``B``."""
        return self.start_x.shape[0]

    @property
    def length(self) -> Tensor:
        """Total arc length ``(B,)``, metres."""
        return self.segment_lengths.sum(1)

    def _segment_index(self, s: Tensor) -> tuple[Tensor, Tensor]:
        """For ``s`` (``(B, P)``): segment index and the arc length from that segment's start (clamped to it)."""
        ends = self.segment_lengths.cumsum(1).to(s)
        idx = torch.searchsorted(ends.contiguous(), s.contiguous(), right=True).clamp_max(ends.shape[1] - 1)
        start = ends.gather(1, idx) - self.segment_lengths.to(s).gather(1, idx)
        local = (s - start).clamp_min(0).minimum(self.segment_lengths.to(s).gather(1, idx))
        return idx, local

    def curvature(self, s: Tensor) -> Tensor:
        """Curvature (1/m) at arc lengths ``s`` (``(B, ...)``); 0 outside ``[0, length]``."""
        shape = s.shape
        flat = s.reshape(shape[0], -1)
        idx, local = self._segment_index(flat)
        lengths = self.segment_lengths.to(flat).gather(1, idx)
        k0 = self.curvature_start.to(flat).gather(1, idx)
        k1 = self.curvature_end.to(flat).gather(1, idx)
        kappa = k0 + (k1 - k0) * local / lengths.clamp_min(1e-12)
        inside = (flat >= 0) & (flat <= self.length.to(flat)[:, None])
        return torch.where(inside, kappa, torch.zeros_like(kappa)).reshape(shape)

    def heading(self, s: Tensor) -> Tensor:
        """Heading (radians) at arc lengths ``s`` (``(B, ...)``), exact; constant before 0 and after the end."""
        shape = s.shape
        flat = s.reshape(shape[0], -1)
        lengths = self.segment_lengths.to(flat)
        k0, k1 = self.curvature_start.to(flat), self.curvature_end.to(flat)
        turn = 0.5 * (k0 + k1) * lengths  # heading change over each segment
        start_heading = self.start_heading.to(flat)[:, None] + torch.cat(
            [torch.zeros_like(turn[:, :1]), turn.cumsum(1)[:, :-1]], 1
        )
        idx, local = self._segment_index(flat)
        seg_len = lengths.gather(1, idx)
        a, b = k0.gather(1, idx), k1.gather(1, idx)
        theta = start_heading.gather(1, idx) + a * local + (b - a) * local**2 / (2 * seg_len.clamp_min(1e-12))
        return theta.reshape(shape)

    def table(self, step: float = 0.25, extra: float = 40.0) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """Samples of the curve every ``step`` metres from ``s = 0`` to ``max(length) + extra``.

        Returns ``(s, x, z, heading, curvature)``: ``s`` is ``(N,)``, the others ``(B, N)``; ``heading`` is exact,
        ``curvature`` is the mean curvature of the cell starting at each sample (heading change / step), and the
        positions chain exact circular arcs of that curvature between samples (exact for circles and straights,
        second-order accurate for clothoids and at curvature jumps).
        """
        dtype, device = self.start_x.dtype, self.start_x.device
        n = math.ceil((float(self.length.max()) + extra) / step) + 1
        s = torch.arange(n, dtype=torch.float64, device=device) * step
        s_b = s.expand(self.batch_size, n)
        c64 = Centerline(*(getattr(self, f.name).double() for f in fields(self)))
        theta = c64.heading(s_b)
        dtheta = theta.diff(dim=1)
        # mean curvature of each cell [s_i, s_i + step]: evaluating with it keeps the curve continuous
        kappa = torch.cat([dtheta, dtheta[:, -1:]], 1) / step
        mid = theta[:, :-1] + 0.5 * dtheta
        chord = step * torch.sinc(dtheta / (2 * torch.pi))
        dx = torch.cat([torch.zeros_like(s_b[:, :1]), chord * torch.sin(mid)], 1).cumsum(1)
        dz = torch.cat([torch.zeros_like(s_b[:, :1]), chord * torch.cos(mid)], 1).cumsum(1)
        x = c64.start_x[:, None] + dx
        z = c64.start_z[:, None] + dz
        return s.to(dtype), x.to(dtype), z.to(dtype), theta.to(dtype), kappa.to(dtype)

    def points(self, s: Tensor, step: float = 0.25) -> tuple[Tensor, Tensor, Tensor]:
        """Points ``(x, z, heading)`` of the curve at arc lengths ``s`` (``(B, ...)``, metres)."""
        table = self.table(step, extra=max(0.0, float(s.max()) - float(self.length.min())) + 1.0)
        return _eval_table(table, s, step)[:3]

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> Centerline:
        """A copy on another device / dtype."""
        return Centerline(*(getattr(self, f.name).to(device=device, dtype=dtype) for f in fields(self)))


def _eval_table(table: tuple[Tensor, ...], s: Tensor, step: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Centerline ``(x, z, heading, curvature)`` at arc lengths ``s`` (``(B, ...)``): an arc step from the sample
    below (exact for constant curvature)."""
    s_tab, x_tab, z_tab, th_tab, k_tab = table
    shape = s.shape
    flat = s.reshape(shape[0], -1)
    i = (flat / step).floor().clamp(0, s_tab.shape[0] - 2).long()
    delta = flat - i.to(flat) * step
    th0, k0 = th_tab.gather(1, i), k_tab.gather(1, i)
    turn = k0 * delta
    chord = delta * torch.sinc(turn / (2 * torch.pi))
    mid = th0 + 0.5 * turn
    x = x_tab.gather(1, i) + chord * torch.sin(mid)
    z = z_tab.gather(1, i) + chord * torch.cos(mid)
    return x.reshape(shape), z.reshape(shape), (th0 + turn).reshape(shape), k0.reshape(shape)


# ---------------------------------------------------------------------------------------------------------------
# Road geometry
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoadCoordinates:
    """Road points expressed relative to the centerline (all ``(B, ...)``).

    Attributes:
        s: arc length of the foot point on the centerline, metres.
        d: signed lateral offset from the centerline, metres, positive to the right.
        on_centerline: True where the point projects perpendicularly onto the centerline inside
            ``[0, length]`` (points behind the start, beyond the end or not on the ground plane are False).

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import RoadCoordinates, make_road, render_bev
        >>> coords = render_bev(make_road(), grid).coords
        >>> isinstance(coords, RoadCoordinates), tuple(coords.d.shape)
        (True, (1, 8, 8))
    """

    s: Tensor
    d: Tensor
    on_centerline: Tensor


@dataclass(frozen=True)
class RoadGeometry:
    """A batch of roads: a centerline plus lateral offset profiles (signed, metres, + right of the centerline).

    Attributes:
        centerline: the reference curve.
        road_left, road_right: offsets of the left and right road edges (``road_left < road_right``).
        lane_left, lane_right: offsets of the ego lane's left and right boundaries.
        sidewalk_width: width of the sidewalk beyond each road edge, :class:`Profile` (metres).

    Examples:
        >>> from drivemetrics.synthetic import RoadGeometry, make_road
        >>> road = make_road(lanes_left=2)
        >>> isinstance(road, RoadGeometry), road.batch_size
        (True, 1)
    """

    centerline: Centerline
    road_left: Profile
    road_right: Profile
    lane_left: Profile
    lane_right: Profile
    sidewalk_width: Profile

    def __post_init__(self) -> None:
        b = self.centerline.batch_size
        for f in fields(self)[1:]:
            p = getattr(self, f.name)
            if p.batch_size != b:
                raise ValueError(f"`{f.name}` profile has {p.batch_size} scenes, the centerline has {b}")

    @property
    def batch_size(self) -> int:
        """Number of scenes ``B``."""
        return self.centerline.batch_size

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the geometry."""
        return self.centerline.start_x.dtype

    @property
    def device(self) -> torch.device:
        """Device of the geometry."""
        return self.centerline.start_x.device

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> RoadGeometry:
        """A copy on another device / dtype."""
        return RoadGeometry(*(getattr(self, f.name).to(device=device, dtype=dtype) for f in fields(self)))

    def __getitem__(self, index: int | slice | Tensor) -> RoadGeometry:
        """A sub-batch (an int keeps the batch dimension)."""
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
        c = self.centerline
        return RoadGeometry(
            Centerline(*(getattr(c, f.name)[index] for f in fields(c))),
            *(
                Profile(getattr(self, f.name).knots[index], getattr(self, f.name).values[index])
                for f in fields(self)[1:]
            ),
        )

    @staticmethod
    def cat(roads: Sequence[RoadGeometry]) -> RoadGeometry:
        """Concatenate batches (segment and knot counts are padded as needed)."""
        if not roads:
            raise ValueError("`roads` must not be empty")
        k = max(r.centerline.segment_lengths.shape[1] for r in roads)
        cs = [r.centerline for r in roads]
        centerline = Centerline(
            torch.cat([c.start_x for c in cs]),
            torch.cat([c.start_z for c in cs]),
            torch.cat([c.start_heading for c in cs]),
            torch.cat([_pad_columns(c.segment_lengths, k, "zero") for c in cs]),
            torch.cat([_pad_columns(c.curvature_start, k, "zero") for c in cs]),
            torch.cat([_pad_columns(c.curvature_end, k, "zero") for c in cs]),
        )
        return RoadGeometry(
            centerline, *(_cat_profiles([getattr(r, f.name) for r in roads]) for f in fields(RoadGeometry)[1:])
        )

    def coordinates(self, x: Tensor, z: Tensor, iterations: int = 6, table_step: float = 0.25) -> RoadCoordinates:
        """Project road points onto the centerline (vectorised, safeguarded Newton iterations).

        Args:
            x, z: road points, metres, shape ``(B, ...)`` or ``...`` (shared by every scene).
            iterations: solver steps on the foot-point condition ``(p - c(s)) . t(s) = 0``.
            table_step: spacing of the centerline samples, metres.

        The start value comes from the point's Z (the centerline must keep ``|heading| < 90 deg`` over its length,
        i.e. keep going forward; checked). A point whose perpendicular foot lies outside ``[0, length]`` or which
        is farther from the centerline than its radius of curvature gets ``on_centerline = False``.
        """
        x, z = torch.broadcast_tensors(x, z)
        b = self.batch_size
        if x.ndim == 0 or x.shape[0] != b:
            x, z = x.expand(b, *x.shape), z.expand(b, *z.shape)
        shape = x.shape
        dtype = self.dtype
        px = x.reshape(b, -1).to(dtype)
        pz = z.reshape(b, -1).to(dtype)
        table = self.centerline.table(table_step)
        s_tab, _, z_tab, _, _ = table
        if bool((z_tab.diff(dim=1) <= 0).any()):
            raise ValueError(
                "the centerline must keep going forward (|heading| < 90 deg) so that road points can be projected"
            )
        s_max = float(s_tab[-1])
        # start: the centerline sample with the same Z
        j = torch.searchsorted(z_tab.contiguous(), pz.contiguous()).clamp(1, s_tab.shape[0] - 1)
        z0, z1 = z_tab.gather(1, j - 1), z_tab.gather(1, j)
        frac = ((pz - z0) / (z1 - z0)).clamp(0, 1)
        s = (j - 1 + frac).to(dtype) * table_step
        # Safeguarded Newton on f(s) = (p - c(s)) . t(s), which decreases with slope -(1 - kappa d): Newton steps
        # until the root is bracketed, then regula falsi with the Illinois rule (Newton alone can cycle at
        # curvature jumps, e.g. the inflection of an S-curve).
        lo, hi = torch.zeros_like(s), torch.full_like(s, s_max)
        f_lo, f_hi = torch.zeros_like(s), torch.zeros_like(s)
        has_lo, has_hi = torch.zeros_like(s, dtype=torch.bool), torch.zeros_like(s, dtype=torch.bool)
        last_pos = torch.zeros_like(has_lo)
        for it in range(iterations):
            cx, cz, th, kappa = _eval_table(table, s, table_step)
            tx, tz = torch.sin(th), torch.cos(th)
            along = (px - cx) * tx + (pz - cz) * tz
            d = (px - cx) * tz - (pz - cz) * tx
            pos = along > 0
            if it > 0:  # Illinois: the end kept twice in a row has its value halved
                same = pos == last_pos
                f_lo = torch.where(same & ~pos, 0.5 * f_lo, f_lo)
                f_hi = torch.where(same & pos, 0.5 * f_hi, f_hi)
            lo, f_lo, has_lo = torch.where(pos, s, lo), torch.where(pos, along, f_lo), has_lo | pos
            hi, f_hi, has_hi = torch.where(pos, hi, s), torch.where(pos, f_hi, along), has_hi | ~pos
            last_pos = pos
            newton = s + along / (1 - kappa * d).clamp_min(0.25)
            bracketed = has_lo & has_hi
            denom = torch.where(bracketed, f_lo - f_hi, torch.ones_like(s))
            falsi = (lo * (-f_hi) + hi * f_lo) / denom
            s = torch.where(bracketed, falsi, newton).clamp(0, s_max)
        cx, cz, th, _ = _eval_table(table, s, table_step)
        tx, tz = torch.sin(th), torch.cos(th)
        along = (px - cx) * tx + (pz - cz) * tz
        d = (px - cx) * tz - (pz - cz) * tx
        tol = 1e-3 if dtype == torch.float64 else 1e-2
        length = self.centerline.length.to(dtype)[:, None]
        on = (along.abs() < tol) & (s <= length) & torch.isfinite(px) & torch.isfinite(pz)
        return RoadCoordinates(s.reshape(shape), d.reshape(shape), on.reshape(shape))

    def points_at(self, s: Tensor, d: Tensor | float = 0.0) -> tuple[Tensor, Tensor]:
        """Road points ``(x, z)`` at arc lengths ``s`` and signed lateral offsets ``d`` (``(B, ...)``, metres).

        E.g. the ego lane's right boundary as a polyline: ``points_at(s, geometry.lane_right(s))``.
        """
        cx, cz, heading = self.centerline.points(s)
        d = torch.as_tensor(d, dtype=cx.dtype, device=cx.device)
        return cx + d * torch.cos(heading), cz - d * torch.sin(heading)

    def lateral_offset(self, x: Tensor, z: Tensor) -> Tensor:
        """Signed lateral offset (metres, + right) of road points from the centerline; NaN where off the curve."""
        c = self.coordinates(x, z)
        return torch.where(c.on_centerline, c.d, torch.full_like(c.d, float("nan")))

    def road_mask(self, coords: RoadCoordinates) -> Tensor:
        """True for points on the road surface (between the road edges)."""
        return coords.on_centerline & (coords.d >= self.road_left(coords.s)) & (coords.d <= self.road_right(coords.s))

    def lane_mask(self, coords: RoadCoordinates) -> Tensor:
        """True for points in the ego lane (between its boundaries, and on the road)."""
        inside = (coords.d >= self.lane_left(coords.s)) & (coords.d <= self.lane_right(coords.s))
        return inside & self.road_mask(coords)

    def sidewalk_mask(self, coords: RoadCoordinates) -> Tensor:
        """True for points on a sidewalk (within ``sidewalk_width`` beyond either road edge, off the road)."""
        left, right, width = self.road_left(coords.s), self.road_right(coords.s), self.sidewalk_width(coords.s)
        beside = ((coords.d < left) & (coords.d >= left - width)) | ((coords.d > right) & (coords.d <= right + width))
        return coords.on_centerline & beside

    def edge_distance(self, coords: RoadCoordinates, target: str = "road") -> Tensor:
        """Signed distance (metres) to the nearest boundary of the road or ego lane, positive inside.

        Measured laterally (along ``d``); off-centerline points get ``-inf``.
        """
        if target == "road":
            left, right = self.road_left(coords.s), self.road_right(coords.s)
        elif target == "lane":
            left = torch.maximum(self.lane_left(coords.s), self.road_left(coords.s))
            right = torch.minimum(self.lane_right(coords.s), self.road_right(coords.s))
        else:
            raise ValueError(f"`target` must be 'road' or 'lane', got {target!r}")
        margin = torch.minimum(coords.d - left, right - coords.d)
        return torch.where(coords.on_centerline, margin, torch.full_like(margin, -math.inf))


def make_road(
    segments: Sequence[tuple[float, float, float]] = ((100.0, 0.0, 0.0),),
    *,
    lane_width: float = 3.5,
    lanes_left: int = 1,
    lanes_right: int = 0,
    shoulder: float = 0.25,
    sidewalk_width: float = 2.0,
    start_x: float = 0.0,
    start_heading: float = 0.0,
    narrowing: tuple[float, float, float] | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> RoadGeometry:
    """One road (``B = 1``) whose centerline is the ego lane's center line.

    Args:
        segments: ``(length, curvature_start, curvature_end)`` per segment (metres, 1/m; + curves right).
        lane_width: width of every lane, metres.
        lanes_left, lanes_right: number of further lanes left / right of the ego lane.
        shoulder: extra road surface beyond the outermost lanes, metres.
        sidewalk_width: sidewalk width beyond each road edge, metres.
        start_x, start_heading: centerline start at ``(start_x, z = 0)``, heading in radians.
        narrowing: ``(s_start, s_end, new_width)``: the ego lane (and the road with it) narrows from its right
            boundary linearly from ``lane_width`` to ``new_width`` between the two arc lengths.

    Lane ``k`` boundaries are at ``d = +-lane_width / 2 + ...``; the road spans
    ``[-(lanes_left + 1/2) lane_width - shoulder, (lanes_right + 1/2) lane_width + shoulder]``.

    Examples:
        >>> from drivemetrics.synthetic import make_road
        >>> road = make_road(((50.0, 0.0, 0.0), (50.0, 0.0, 0.02)), lane_width=3.5)  # straight, then a right curve
        >>> road.batch_size, road.centerline.segment_lengths.tolist()
        (1, [[50.0, 50.0]])
    """
    if lane_width <= 0 or shoulder < 0 or sidewalk_width < 0 or lanes_left < 0 or lanes_right < 0:
        raise ValueError("`lane_width` must be > 0 and `shoulder`, `sidewalk_width`, lane counts >= 0")
    kw = {"dtype": dtype, "device": device}
    centerline = Centerline.from_segments(segments, start_x=start_x, start_heading=start_heading, **kw)
    half = lane_width / 2
    lane_left = Profile.constant(-half, **kw)
    road_left = Profile.constant(-half - lanes_left * lane_width - shoulder, **kw)
    right_outer = lanes_right * lane_width + shoulder
    if narrowing is None:
        lane_right = Profile.constant(half, **kw)
        road_right = Profile.constant(half + right_outer, **kw)
    else:
        s0, s1, new_width = narrowing
        if not (new_width > 0 and s1 >= s0):
            raise ValueError("`narrowing` must be (s_start, s_end, new_width) with s_end >= s_start and new_width > 0")
        new_right = new_width - half
        lane_right = Profile.ramp(s0, s1, half, new_right, **kw)
        road_right = Profile.ramp(s0, s1, half + right_outer, new_right + right_outer, **kw)
    return RoadGeometry(
        centerline, road_left, road_right, lane_left, lane_right, Profile.constant(sidewalk_width, **kw)
    )


SCENE_KINDS = ("straight", "curve", "clothoid", "s_curve")


def sample_road_geometry(
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    kinds: Sequence[str] = SCENE_KINDS,
    narrowing_probability: float = 0.3,
    max_curvature: float = 1 / 60,
    min_curvature: float = 1 / 400,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> RoadGeometry:
    """Random roads with an ego lane, seeded by ``generator`` (drawn on the generator's device).

    Each centerline has 4 segments of 0-20, 10-25, 15-30 and 50-90 m. Each scene picks one of ``kinds``:
    ``straight``; ``curve`` (straight, clothoid entry, circular arc, clothoid exit); ``clothoid`` (curvature
    growing linearly over two segments, then relaxing to 0); ``s_curve`` (straight, an arc one way, an arc the
    other way, straight). The curvature magnitude is drawn log-uniformly in ``[min_curvature, max_curvature]``
    (1/m) with a random sign, and scaled down where needed so that the heading stays within 1.2 rad (~70 deg).
    The centerline is the ego lane's center, starting near ``x = 0, z = 0``; lane width 2.8-3.8 m,
    0-2 lanes on the left, 0-1 on the right, shoulder 0-0.5 m, sidewalk 1.5-3 m. With probability
    ``narrowing_probability`` the ego lane narrows by 0.4-1.2 m over 10-20 m somewhere between 10 and 35 m.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import sample_road_geometry
        >>> roads = sample_road_geometry(3, torch.Generator().manual_seed(0))
        >>> roads.batch_size, tuple(roads.centerline.segment_lengths.shape)  # 4 segments per road
        (3, (3, 4))
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be >= 1, got {batch_size}")
    unknown = set(kinds) - set(SCENE_KINDS)
    if not kinds or unknown:
        raise ValueError(f"`kinds` must be a non-empty subset of {SCENE_KINDS}, got {list(kinds)}")
    if not 0 < min_curvature <= max_curvature:
        raise ValueError("need 0 < `min_curvature` <= `max_curvature` (1/m)")
    gdev = generator.device if generator is not None else torch.device("cpu")

    def uniform(lo: float, hi: float) -> Tensor:
        return lo + (hi - lo) * torch.rand(batch_size, generator=generator, device=gdev, dtype=torch.float64)

    b = batch_size
    kind_idx = torch.randint(len(kinds), (b,), generator=generator, device=gdev)
    kind_code = torch.tensor([SCENE_KINDS.index(k) for k in kinds], device=gdev)[kind_idx]
    sign = torch.where(torch.rand(b, generator=generator, device=gdev) < 0.5, -1.0, 1.0).double()
    log_k = uniform(math.log(min_curvature), math.log(max_curvature))
    kappa = sign * log_k.exp()
    zero = torch.zeros(b, dtype=torch.float64, device=gdev)
    half_k = kappa / 2
    # (curvature_start, curvature_end) of the 4 segments, per kind: K x B x 4 each
    k_start = torch.stack(
        [
            torch.stack([zero, zero, zero, zero], 1),  # straight
            torch.stack([zero, zero, kappa, kappa], 1),  # curve: straight, clothoid entry, arc, clothoid exit
            torch.stack([zero, zero, half_k, kappa], 1),  # clothoid: curvature grows linearly, then relaxes
            torch.stack([zero, kappa, -kappa, zero], 1),  # s_curve: straight, arc, opposite arc, straight
        ]
    )
    k_end = torch.stack(
        [
            torch.stack([zero, zero, zero, zero], 1),
            torch.stack([zero, kappa, kappa, zero], 1),
            torch.stack([zero, half_k, kappa, zero], 1),
            torch.stack([zero, kappa, -kappa, zero], 1),
        ]
    )
    rows = torch.arange(b, device=gdev)
    k_start, k_end = k_start[kind_code, rows], k_end[kind_code, rows]
    lengths = torch.stack([uniform(0, 20), uniform(10, 25), uniform(15, 30), uniform(50, 90)], 1)
    # keep the heading within ~70 deg of the start heading
    turn = (0.5 * (k_start + k_end) * lengths).cumsum(1).abs().amax(1)
    scale = (1.2 / turn.clamp_min(1e-9)).clamp(max=1.0)
    k_start, k_end = k_start * scale[:, None], k_end * scale[:, None]

    start_x, start_heading = uniform(-0.3, 0.3), uniform(-0.04, 0.04)
    lane_width = uniform(2.8, 3.8)
    lanes_left = torch.randint(3, (b,), generator=generator, device=gdev).double()
    lanes_right = torch.randint(2, (b,), generator=generator, device=gdev).double()
    shoulder, sidewalk = uniform(0.0, 0.5), uniform(1.5, 3.0)
    narrow = torch.rand(b, generator=generator, device=gdev) < narrowing_probability
    n_start, n_len, n_amount = uniform(10, 35), uniform(10, 20), uniform(0.4, 1.2)
    n_amount = torch.where(narrow, n_amount, zero)

    half = lane_width / 2
    right_outer = lanes_right * lane_width + shoulder

    def ramp(before: Tensor, after: Tensor) -> Profile:
        return Profile(torch.stack([n_start, n_start + n_len], 1), torch.stack([before, after], 1))

    out = RoadGeometry(
        Centerline(start_x, zero.clone(), start_heading, lengths, k_start, k_end),
        Profile(zero[:, None].clone(), (-half - lanes_left * lane_width - shoulder)[:, None]),
        ramp(half + right_outer, half - n_amount + right_outer),
        Profile(zero[:, None].clone(), -half[:, None]),
        ramp(half, half - n_amount),
        Profile(zero[:, None].clone(), sidewalk[:, None]),
    )
    return out.to(device=device, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderedScene:
    """Masks of a batch of scenes on a pixel / cell raster, all ``(B, H, W)``.

    Attributes:
        road, lane, sidewalk: bool masks of the road surface, the ego lane and the sidewalks.
        valid: bool, False where the KITTI GT is "don't care" (BEV cells outside the camera view, the optional
            boundary band); pixels above the horizon are valid non-road, as in KITTI.
        x, z: road-plane point of each pixel / cell center, metres (0 where ``on_ground`` is False).
        on_ground: False for image pixels at or above the horizon.
        coords: the points' :class:`RoadCoordinates`.
        confidence: detector confidence in [0, 1] when a detector was given, else None.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import RenderedScene, make_road, render_bev
        >>> scene = render_bev(make_road(), grid)
        >>> isinstance(scene, RenderedScene), tuple(scene.valid.shape), scene.confidence is None  # no detector given
        (True, (1, 8, 8), True)
    """

    road: Tensor
    lane: Tensor
    sidewalk: Tensor
    valid: Tensor
    x: Tensor
    z: Tensor
    on_ground: Tensor
    coords: RoadCoordinates
    confidence: Tensor | None = None

    def target(self, kind: str = "road") -> Tensor:
        """The GT mask for ``kind`` (``"road"`` or ``"lane"``), ``(B, H, W)`` bool."""
        if kind not in ("road", "lane"):
            raise ValueError(f"`kind` must be 'road' or 'lane', got {kind!r}")
        return self.road if kind == "road" else self.lane


def _homographies(image_from_road: Tensor | None, batch_size: int, device: torch.device) -> Tensor:
    h = default_image_from_road(device=device) if image_from_road is None else image_from_road
    if not arrays.is_tensor(h):
        raise TypeError(f"`image_from_road` must be a torch.Tensor, got {type(h).__name__}")
    if h.shape == (3, 3):
        h = h.expand(batch_size, 3, 3)
    if h.shape != (batch_size, 3, 3):
        raise ValueError(f"`image_from_road` must have shape 3 x 3 or {batch_size} x 3 x 3, got {tuple(h.shape)}")
    if not bool(torch.isfinite(h).all()):
        raise ValueError("`image_from_road` contains NaN or infinite values")
    return h.to(device=device, dtype=torch.float64)


def _check_image_size(image_size: tuple[int, int]) -> tuple[int, int]:
    if len(image_size) != 2 or any(int(v) != v or v < 1 for v in image_size):
        raise ValueError(f"`image_size` must be (height, width) with positive integers, got {image_size}")
    return int(image_size[0]), int(image_size[1])


def _finish(
    geometry: RoadGeometry,
    x: Tensor,
    z: Tensor,
    on_ground: Tensor,
    valid: Tensor,
    boundary_dont_care: float,
    detector: object | None,
    target: str,
) -> RenderedScene:
    coords = geometry.coordinates(x, z)
    coords = RoadCoordinates(coords.s, coords.d, coords.on_centerline & on_ground)
    road, lane, sidewalk = geometry.road_mask(coords), geometry.lane_mask(coords), geometry.sidewalk_mask(coords)
    if boundary_dont_care > 0:
        margin = geometry.edge_distance(coords, target)
        valid = valid & ~(margin.abs() < boundary_dont_care)
    confidence = None
    if detector is not None:
        confidence = detector.confidence(geometry, coords, x, z, on_ground)  # type: ignore[attr-defined]
    return RenderedScene(road, lane, sidewalk, valid, x, z, on_ground, coords, confidence)


def render_bev(
    geometry: RoadGeometry,
    grid: BevGrid | None = None,
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] | None = KITTI_IMAGE_SIZE,
    *,
    detector: object | None = None,
    boundary_dont_care: float = 0.0,
    target: str = "road",
) -> RenderedScene:
    """Render GT masks (and a detector's confidence) on a BEV grid by testing every cell center.

    Args:
        geometry: ``B`` roads.
        grid: the BEV grid (default: the KITTI-ROAD 800 x 400 grid).
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)`` camera homography (default: the embedded KITTI um_000000 one);
            cells whose center projects outside the image (``-0.5 <= u < W - 0.5``, ``-0.5 <= v < H - 0.5``, in
            front of the camera) are not valid, like the black (don't-care) area of the devkit's BEV GT.
        image_size: ``(H, W)`` of the camera image; ``None`` makes every cell valid (no camera).
        detector: a :class:`~drivemetrics.synthetic.confidence.SyntheticDetector` to render a confidence map.
        boundary_dont_care: width (metres) of a don't-care band on each side of the ``target`` boundary.
        target: ``"road"`` or ``"lane"``, the class the don't-care band follows.

    Returns:
        A :class:`RenderedScene` with ``(B, rows, cols)`` masks.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import make_road, render_bev
        >>> scene = render_bev(make_road(), grid)
        >>> tuple(scene.road.shape), scene.lane[0, -1, 3:5].tolist()  # the ego lane straight ahead
        ((1, 8, 8), [True, True])
    """
    grid = BevGrid() if grid is None else grid
    b, device = geometry.batch_size, geometry.device
    x, z = grid.cell_centers(torch.float64, device)
    x, z = x.expand(b, *x.shape), z.expand(b, *z.shape)
    if image_size is None:
        valid = torch.ones_like(x, dtype=torch.bool)
    else:
        height, width = _check_image_size(image_size)
        h = _homographies(image_from_road, b, device)
        pts = torch.stack([x, z, torch.ones_like(x)], -1).reshape(b, -1, 3)
        uvw = pts @ h.transpose(1, 2)
        w = uvw[..., 2]
        u = uvw[..., 0] / w
        v = uvw[..., 1] / w
        valid = (w > 0) & (u >= -0.5) & (u < width - 0.5) & (v >= -0.5) & (v < height - 0.5)
        valid = valid.reshape(x.shape)
    dtype = geometry.dtype
    on_ground = torch.ones_like(valid)
    return _finish(geometry, x.to(dtype), z.to(dtype), on_ground, valid, boundary_dont_care, detector, target)


def road_points_from_pixels(
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] = KITTI_IMAGE_SIZE,
    batch_size: int = 1,
    device: torch.device | str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Road-plane point of every pixel center (``u`` = column, ``v`` = row, 0-based) through the inverse homography.

    Returns ``(x, z, on_ground)``, each ``(B, H, W)`` (float64 metres; bool). Pixels whose ray does not hit the
    road plane in front of the camera (at or above the horizon) have ``on_ground = False`` and ``x = z = 0``.

    Examples:
        >>> from drivemetrics.synthetic import road_points_from_pixels
        >>> x, z, on_ground = road_points_from_pixels(image_size=(375, 1242))
        >>> tuple(x.shape), on_ground[0, 0, 0].item(), on_ground[0, -1, 620].item()
        ((1, 375, 1242), False, True)
    """
    height, width = _check_image_size(image_size)
    device = torch.device("cpu") if device is None else torch.device(device)
    h = _homographies(image_from_road, batch_size, device)
    road_from_image = torch.linalg.inv(h)
    v, u = torch.meshgrid(
        torch.arange(height, dtype=torch.float64, device=device),
        torch.arange(width, dtype=torch.float64, device=device),
        indexing="ij",
    )
    pix = torch.stack([u, v, torch.ones_like(u)], -1).reshape(-1, 3)
    xzw = pix @ road_from_image.transpose(1, 2)  # B x HW x 3
    w = xzw[..., 2]
    on_ground = w > 1e-9 * xzw[..., :2].abs().amax(-1).clamp_min(1.0)
    safe_w = torch.where(on_ground, w, torch.ones_like(w))
    x = torch.where(on_ground, xzw[..., 0] / safe_w, torch.zeros_like(w))
    z = torch.where(on_ground, xzw[..., 1] / safe_w, torch.zeros_like(w))
    shape = (batch_size, height, width)
    return x.reshape(shape), z.reshape(shape), on_ground.reshape(shape)


def render_perspective(
    geometry: RoadGeometry,
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] = KITTI_IMAGE_SIZE,
    *,
    detector: object | None = None,
    boundary_dont_care: float = 0.0,
    target: str = "road",
) -> RenderedScene:
    """Render GT masks (and a detector's confidence) in the camera image by mapping every pixel to the road plane.

    Args:
        geometry: ``B`` roads.
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)`` homography (default: the embedded KITTI um_000000 camera).
        image_size: ``(H, W)``, default ``(375, 1242)``.
        detector, boundary_dont_care, target: as in :func:`render_bev`.

    Pixels at or above the horizon are valid non-road (KITTI marks the sky red).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> from drivemetrics.synthetic import make_road, render_perspective
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> scene = render_perspective(make_road(), H, image_size=(64, 128))
        >>> tuple(scene.road.shape), scene.road[0, -1, 64].item(), scene.road[0, 0, 64].item()  # bottom: road; top: sky
        ((1, 64, 128), True, False)
    """
    x, z, on_ground = road_points_from_pixels(image_from_road, image_size, geometry.batch_size, geometry.device)
    dtype = geometry.dtype
    x, z = x.to(dtype), z.to(dtype)
    # only rows that see the ground in some scene need the projection (about half of a KITTI image is sky)
    rows = torch.nonzero(on_ground.any(2).any(0)).flatten()
    first = on_ground.shape[1] if rows.numel() == 0 else int(rows[0])
    crop = _finish(
        geometry,
        x[:, first:],
        z[:, first:],
        on_ground[:, first:],
        torch.ones_like(on_ground[:, first:]),
        boundary_dont_care,
        detector,
        target,
    )
    if first == 0:
        return crop

    def pad(t: Tensor, value: float | bool) -> Tensor:
        top = torch.full((t.shape[0], first, t.shape[2]), value, dtype=t.dtype, device=t.device)
        return torch.cat([top, t], 1)

    coords = RoadCoordinates(pad(crop.coords.s, 0.0), pad(crop.coords.d, 0.0), pad(crop.coords.on_centerline, False))
    confidence = None
    if crop.confidence is not None:
        confidence = pad(crop.confidence, float(detector.model.low))  # type: ignore[attr-defined]
    return RenderedScene(
        pad(crop.road, False),
        pad(crop.lane, False),
        pad(crop.sidewalk, False),
        pad(crop.valid, True),
        x,
        z,
        on_ground,
        coords,
        confidence,
    )


def kitti_gt_image(target: Tensor, valid: Tensor | None = None) -> Tensor:
    """KITTI-ROAD GT colours, ``(B, 3, H, W)`` uint8 RGB: magenta road, red valid non-road, black don't care.

    Args:
        target: ``(B, H, W)`` bool road (or ego-lane) mask.
        valid: ``(B, H, W)`` bool evaluation area (default: everything).

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import kitti_gt_image
        >>> colours = kitti_gt_image(torch.tensor([[[True, False]]]))  # one road pixel, one non-road pixel
        >>> tuple(colours.shape), colours[0, :, 0, 0].tolist(), colours[0, :, 0, 1].tolist()  # magenta, red
        ((1, 3, 1, 2), [255, 0, 255], [255, 0, 0])
    """
    if target.ndim != 3:
        raise ValueError(f"`target` must have shape B x H x W, got {tuple(target.shape)}")
    valid = torch.ones_like(target, dtype=torch.bool) if valid is None else valid.bool()
    if valid.shape != target.shape:
        raise ValueError(f"`valid` must have the shape of `target` {tuple(target.shape)}, got {tuple(valid.shape)}")
    red = valid.to(torch.uint8) * 255
    blue = (valid & target.bool()).to(torch.uint8) * 255
    return torch.stack([red, torch.zeros_like(red), blue], 1)


def mean_gt_prior(masks: Tensor, valid: Tensor | None = None) -> Tensor:
    """The KITTI-ROAD baseline "location potential": per-pixel mean of GT masks over many frames.

    Args:
        masks: ``(N, H, W)`` bool / {0, 1} GT masks.
        valid: optional ``(N, H, W)`` valid masks; the mean is then over the frames where the pixel is valid
            (0 where it never is).

    Returns:
        ``(H, W)`` float32 frequency in [0, 1].

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import mean_gt_prior
        >>> mean_gt_prior(torch.tensor([[[1, 0]], [[1, 1]]])).tolist()
        [[1.0, 0.5]]
    """
    if masks.ndim != 3 or masks.shape[0] < 1:
        raise ValueError(f"`masks` must have shape N x H x W with N >= 1, got {tuple(masks.shape)}")
    m = masks.to(torch.float32)
    if valid is None:
        return m.mean(0)
    if valid.shape != masks.shape:
        raise ValueError(f"`valid` must have the shape of `masks` {tuple(masks.shape)}, got {tuple(valid.shape)}")
    v = valid.to(torch.float32)
    return (m * v).sum(0) / v.sum(0).clamp_min(1)


def baseline_prior(
    num_scenes: int = 200,
    generator: torch.Generator | None = None,
    *,
    target: str = "lane",
    space: str = "bev",
    grid: BevGrid | None = None,
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] = KITTI_IMAGE_SIZE,
    chunk: int = 32,
    device: torch.device | str | None = None,
    **sample_kwargs: object,
) -> Tensor:
    """Mean of the GT masks of ``num_scenes`` random scenes (:func:`sample_road_geometry`), in BEV or perspective.

    This is the synthetic counterpart of the KITTI-ROAD baseline prior (``computeBaseline``): a confidence map
    that is high where the road / ego lane usually is. The BEV mean is taken over the raster (cells outside the
    camera view included), ``(H, W)`` float32.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import baseline_prior
        >>> prior = baseline_prior(4, torch.Generator().manual_seed(0), grid=grid)
        >>> tuple(prior.shape), bool(((prior >= 0) & (prior <= 1)).all())
        ((8, 8), True)
    """
    if num_scenes < 1:
        raise ValueError(f"`num_scenes` must be >= 1, got {num_scenes}")
    if space not in ("bev", "perspective"):
        raise ValueError(f"`space` must be 'bev' or 'perspective', got {space!r}")
    total = None
    done = 0
    while done < num_scenes:
        n = min(chunk, num_scenes - done)
        geo = sample_road_geometry(n, generator, device=device, **sample_kwargs)  # type: ignore[arg-type]
        if space == "bev":
            scene = render_bev(geo, grid, image_from_road, image_size)
        else:
            scene = render_perspective(geo, image_from_road, image_size)
        part = scene.target(target).to(torch.float32).sum(0)
        total = part if total is None else total + part
        done += n
    assert total is not None
    return total / num_scenes
