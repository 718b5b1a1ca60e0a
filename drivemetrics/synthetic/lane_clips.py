"""Synthetic lane clips: curved roads with painted lane lines seen by a forward camera, with exact GT lanes.

A clip is a vehicle driving along a road at about 25 m/s for ``T`` frames at 20 Hz. Road frame of each frame: X
right, Z forward, metres, origin on the road below the camera, Z along the vehicle heading. The road centerline is
a clothoid (curvature ``k0 + k1 s`` along its arc length ``s``); ``L`` lane lines (default 4: outer-left,
ego-left, ego-right, outer-right) run at fixed lateral offsets from the ego lane center. The vehicle follows the
ego lane with a smooth lateral wander (and the matching heading error). The camera (default 256 x 128 px, focal
200 px, 1.5 m high, pitched 0.06 rad down) renders grayscale or RGB frames through the road-plane homography of
:mod:`drivemetrics.geometry.camera`: sky above the horizon, asphalt, grass beyond the outer lines, anti-aliased
lines 0.15 m wide.

Ground truth per frame: lane x (pixels) at fixed rows ``h_samples`` (TuSimple-like, NaN when not visible), and
lateral position X (metres) of every line at fixed distances ``z_samples`` (road frame). Detector noise models
(:class:`LaneNoise`: lateral bias, heading and curvature error, jitter, missing far points) perturb road-frame
lanes to make "detections"; :class:`PaintedLineDetector` finds the ego lines in the rendered images row by row
(an image -> lanes detector for closed-loop E2E-LD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_shape, check_tensor
from drivemetrics.geometry.camera import image_from_road_homography, image_to_road, intrinsic_matrix, road_to_image

__all__ = [
    "EGO_LANE_INDICES",
    "FRAME_RATE_HZ",
    "NOISE_MODELS",
    "LaneCamera",
    "LaneClips",
    "LaneNoise",
    "NoisyLaneDetector",
    "PaintedLineDetector",
    "detections_from_gt",
    "make_lane_clips",
    "perturb_road_lanes",
    "road_lanes_to_image",
]

FRAME_RATE_HZ = 20.0
EGO_LANE_INDICES = (1, 2)
"""Indices of the ego-left and ego-right line in the default 4-line layout."""


@dataclass(frozen=True)
class LaneCamera:
    """Forward camera of the synthetic clips (pixels, metres, radians).

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> camera.width, camera.height, camera.camera_height
        (128, 64, 1.5)
    """

    width: int = 256
    height: int = 128
    focal: float = 200.0
    cx: float = 127.5
    cy: float = 52.0
    camera_height: float = 1.5
    pitch: float = 0.06

    def image_from_road(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The ``(3, 3)`` road -> image homography."""
        k = intrinsic_matrix(self.focal, self.focal, self.cx, self.cy).to(dtype=dtype, device=device)
        return image_from_road_homography(k, self.camera_height, self.pitch)

    def default_h_samples(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """Rows from 6 px below the horizon to the bottom, every 4 px (pixels)."""
        horizon = self.cy - self.focal * math.tan(self.pitch)
        start = math.ceil(horizon + 6)
        return torch.arange(start, self.height, 4, dtype=dtype, device=device)


@dataclass
class LaneClips:
    """A batch of synthetic clips.

    Attributes:
        images: ``(B, T, C, H, W)`` float frames in [0, 1].
        lanes_image: ``(B, T, L, N)`` lane x (pixels) at the rows ``h_samples``; NaN when not visible.
        h_samples: ``N`` rows (pixels).
        lanes_road: ``(B, T, L, M)`` lateral position X (metres) of every line at ``z_samples``, road frame of
            each frame.
        z_samples: ``M`` longitudinal distances (metres).
        poses: ``(B, T, 3)`` world pose of the camera (x, z metres; heading radians from +z towards +x).
        lateral_offset: ``(B, T)`` offset of the vehicle from the ego lane center (metres, right positive).
        speed: ``B`` speeds (m/s), constant per clip.
        curvature: ``(B, 2)`` clothoid coefficients ``(k0 [1/m], k1 [1/m^2])`` of the road.
        lane_width: ``B`` lane widths (metres).
        image_from_road: ``(3, 3)`` homography of the camera.
        dt: frame period (s).
        ego_lanes: indices of the ego-left and ego-right line along ``L``.

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_clips import LaneClips
        >>> isinstance(clips, LaneClips), tuple(clips.poses.shape), tuple(clips.lanes_road.shape)
        (True, (1, 3, 3), (1, 3, 4, 59))
    """

    images: Tensor
    lanes_image: Tensor
    h_samples: Tensor
    lanes_road: Tensor
    z_samples: Tensor
    poses: Tensor
    lateral_offset: Tensor
    speed: Tensor
    curvature: Tensor
    lane_width: Tensor
    image_from_road: Tensor
    dt: float
    ego_lanes: tuple[int, int] = EGO_LANE_INDICES

    @property
    def center_road(self) -> Tensor:
        """``(B, T, M)`` lateral position of the ego lane center at ``z_samples`` (metres)."""
        left, right = self.ego_lanes
        return 0.5 * (self.lanes_road[:, :, left] + self.lanes_road[:, :, right])


def _interp_sorted(xq: Tensor, xp: Tensor, fp: Tensor) -> Tensor:
    """Batched linear interpolation: ``xp`` ``(..., K)`` non-decreasing, ``fp`` same shape, ``xq`` ``(..., Q)``.

    Outside ``[xp[0], xp[-1]]`` the result is NaN; NaN in ``fp`` propagates.
    """
    k = xp.shape[-1]
    idx = torch.searchsorted(xp.contiguous(), xq.contiguous()).clamp(1, k - 1)
    x0, x1 = xp.gather(-1, idx - 1), xp.gather(-1, idx)
    f0, f1 = fp.gather(-1, idx - 1), fp.gather(-1, idx)
    span = x1 - x0
    w = torch.where(span > 0, (xq - x0) / torch.where(span > 0, span, 1.0), 0.0)
    out = f0 + w * (f1 - f0)
    inside = (xq >= xp[..., :1]) & (xq <= xp[..., -1:])
    return torch.where(inside, out, torch.nan)


def road_lanes_to_image(
    lanes_road: Tensor, z_samples: Tensor, image_from_road: Tensor, h_samples: Tensor, width: int
) -> Tensor:
    """Project road-frame lane profiles into the image and sample their x at fixed rows.

    Args:
        lanes_road: ``(..., L, M)`` lateral X (metres) at ``z_samples``; NaN = missing (e.g. beyond the range).
        z_samples: ``M`` increasing distances (metres), all in front of the camera.
        image_from_road: ``(3, 3)`` homography.
        h_samples: ``N`` rows (pixels).
        width: image width; points outside ``[0, width - 1]`` become NaN.

    Returns:
        ``(..., L, N)`` lane x (pixels), NaN where the lane is not visible at that row.

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_clips import road_lanes_to_image
        >>> lanes = clips.lanes_road[:, 0]  # (B, L, M) lateral X at clips.z_samples, first frame
        >>> x = road_lanes_to_image(lanes, clips.z_samples, clips.image_from_road, clips.h_samples, 128)
        >>> tuple(x.shape)  # (B, L, N) x at the rows h_samples
        (1, 4, 10)
    """
    check_shape(z_samples, "z_samples", ("M",))
    if lanes_road.shape[-1] != z_samples.shape[0]:
        raise ValueError(f"`lanes_road` must end in {z_samples.shape[0]} samples, got {tuple(lanes_road.shape)}")
    z = z_samples.to(lanes_road).expand_as(lanes_road)
    uv = road_to_image(image_from_road.to(lanes_road), torch.stack([lanes_road, z], dim=-1))
    u, v = uv[..., 0].flip(-1), uv[..., 1].flip(-1)  # far first, so v increases (flat road, no roll)
    v_sorted = torch.where(torch.isnan(v), -torch.inf, v).cummax(dim=-1).values
    rows = h_samples.to(lanes_road).expand(*lanes_road.shape[:-1], -1)
    u_at_rows = _interp_sorted(rows, v_sorted, u)
    return torch.where((u_at_rows >= 0) & (u_at_rows <= width - 1), u_at_rows, torch.nan)


def make_lane_clips(
    batch: int = 4,
    frames: int = 20,
    seed: int = 0,
    camera: LaneCamera | None = None,
    channels: int = 1,
    speed_range: tuple[float, float] = (22.0, 28.0),
    max_curvature: float = 1 / 500,
    lane_width_range: tuple[float, float] = (3.3, 3.9),
    max_wander: float = 0.4,
    z_samples: Tensor | None = None,
    h_samples: Tensor | None = None,
    max_label_distance: float = 60.0,
    device: torch.device | str | None = None,
) -> LaneClips:
    """Generate ``batch`` seeded clips of ``frames`` frames (20 Hz).

    Args:
        batch, frames: ``B`` clips of ``T`` frames.
        seed: seed of the ``torch.Generator`` (same seed, same clips).
        camera: :class:`LaneCamera` (default 256 x 128).
        channels: 1 (grayscale) or 3 (RGB).
        speed_range: speeds drawn uniformly (m/s).
        max_curvature: ``|k0| <= max_curvature`` (1/m); ``|k1| <= max_curvature / 200`` (1/m^2).
        lane_width_range: lane widths drawn uniformly (metres).
        max_wander: largest lateral offset from the ego lane center (metres).
        z_samples: road-frame sample distances (default 2, 3, ..., 60 m).
        h_samples: image rows (default :meth:`LaneCamera.default_h_samples`).
        max_label_distance: GT image lanes stop at this distance (metres), like TuSimple labels near the horizon.
        device: device of the tensors.

    Returns:
        :class:`LaneClips` (float32 images, float64 geometry).

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> tuple(clips.images.shape), tuple(clips.lanes_image.shape), clips.ego_lanes  # (B, T, C, H, W), (B, T, L, N)
        ((1, 3, 1, 64, 128), (1, 3, 4, 10), (1, 2))
    """
    if batch < 1 or frames < 1:
        raise ValueError(f"`batch` and `frames` must be >= 1, got {batch}, {frames}")
    if channels not in (1, 3):
        raise ValueError(f"`channels` must be 1 or 3, got {channels}")
    camera = camera or LaneCamera()
    gen = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    params = _draw_clip_params(gen, batch, speed_range, max_curvature, lane_width_range, max_wander)
    texture = torch.rand(batch, frames, 1, camera.height, camera.width, generator=gen)
    dt = 1.0 / FRAME_RATE_HZ
    t = torch.arange(frames, dtype=f64) * dt  # T
    s, cx, cz, theta = _centerline(params, float(params.speed.max()) * frames * dt + 140.0)
    # Lane lines in the world: B x L x K.
    offsets = torch.tensor([-1.5, -0.5, 0.5, 1.5], dtype=f64)[None, :] * params.lane_width[:, None]  # B x L
    lines_x = cx[:, None, :] + offsets[..., None] * torch.cos(theta)[:, None, :]
    lines_z = cz[:, None, :] - offsets[..., None] * torch.sin(theta)[:, None, :]
    poses, lateral = _vehicle_poses(params, t, s, cx, cz)
    local_x, local_z = _lines_in_vehicle_frames(lines_x, lines_z, poses)

    if z_samples is None:
        z_samples = torch.arange(2.0, 61.0, 1.0, dtype=f64)
    z_samples = z_samples.to(f64)
    lanes_road = _interp_sorted(z_samples.expand(*local_z.shape[:-1], -1), local_z, local_x)
    hom = camera.image_from_road(f64)
    if h_samples is None:
        h_samples = camera.default_h_samples(f64)
    h_samples = h_samples.to(f64)
    label_z = torch.arange(1.0, max_label_distance + 0.25, 0.25, dtype=f64)
    label_x = _interp_sorted(label_z.expand(*local_z.shape[:-1], -1), local_z, local_x)
    lanes_image = road_lanes_to_image(label_x, label_z, hom, h_samples, camera.width)
    images = _render_clips(camera, hom, local_x, local_z, texture, channels)

    out = LaneClips(
        images=images,
        lanes_image=lanes_image,
        h_samples=h_samples,
        lanes_road=lanes_road,
        z_samples=z_samples,
        poses=poses,
        lateral_offset=lateral,
        speed=params.speed,
        curvature=torch.stack([params.k0, params.k1], dim=-1),
        lane_width=params.lane_width,
        image_from_road=hom,
        dt=dt,
    )
    if device is not None:
        for name in ("images", "lanes_image", "h_samples", "lanes_road", "z_samples", "poses", "lateral_offset"):
            setattr(out, name, getattr(out, name).to(device))
        for name in ("speed", "curvature", "lane_width", "image_from_road"):
            setattr(out, name, getattr(out, name).to(device))
    return out


class _ClipParams(NamedTuple):
    """Per-clip random parameters, each ``(B,)`` float64: speed (m/s), curvature ``k0`` (1/m) and its rate ``k1``
    (1/m^2), lane width (m), and the sinusoidal wander of the vehicle in its lane (mean, amplitude in m, period in
    s, phase in radians)."""

    speed: Tensor
    k0: Tensor
    k1: Tensor
    lane_width: Tensor
    wander_mean: Tensor
    wander_amp: Tensor
    wander_period: Tensor
    wander_phase: Tensor


def _draw_clip_params(
    gen: torch.Generator,
    batch: int,
    speed_range: tuple[float, float],
    max_curvature: float,
    lane_width_range: tuple[float, float],
    max_wander: float,
) -> _ClipParams:
    """Draw the clips' parameters from ``gen`` (in this order, so that a seed keeps giving the same clips)."""

    def uniform(lo: float, hi: float) -> Tensor:
        return lo + (hi - lo) * torch.rand(batch, generator=gen, dtype=torch.float64)

    speed = uniform(*speed_range)
    k0 = uniform(-max_curvature, max_curvature)
    k1 = uniform(-max_curvature / 200, max_curvature / 200)
    lane_width = uniform(*lane_width_range)
    wander_mean = uniform(-0.5, 0.5) * max_wander
    wander_amp = uniform(0.0, 0.5) * max_wander
    wander_period = uniform(1.5, 4.0)
    wander_phase = uniform(0.0, 2 * math.pi)
    return _ClipParams(speed, k0, k1, lane_width, wander_mean, wander_amp, wander_period, wander_phase)


def _centerline(params: _ClipParams, s_end: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Road centerline on an arc-length grid ``s`` (``(K,)``, 0.5 m steps, ``s = 0`` at the first frame's position):
    ``(s, x, z, heading)``, the last three ``(B, K)`` (metres, radians)."""
    f64 = torch.float64
    ds = 0.5
    s = torch.arange(-10.0, s_end + ds, ds, dtype=f64)  # K
    theta = params.k0[:, None] * s + 0.5 * params.k1[:, None] * s * s  # B x K
    sin_t, cos_t = torch.sin(theta), torch.cos(theta)
    cx_ = torch.cumsum(0.5 * (sin_t[:, 1:] + sin_t[:, :-1]) * ds, dim=1)
    cz_ = torch.cumsum(0.5 * (cos_t[:, 1:] + cos_t[:, :-1]) * ds, dim=1)
    zero_idx = round(10.0 / ds)
    batch = theta.shape[0]
    cx = torch.cat([torch.zeros(batch, 1, dtype=f64), cx_], 1)
    cz = torch.cat([torch.zeros(batch, 1, dtype=f64), cz_], 1)
    return s, cx - cx[:, zero_idx : zero_idx + 1], cz - cz[:, zero_idx : zero_idx + 1], theta


def _vehicle_poses(params: _ClipParams, t: Tensor, s: Tensor, cx: Tensor, cz: Tensor) -> tuple[Tensor, Tensor]:
    """Vehicle poses ``(B, T, 3)`` ``(x, z, heading)`` wandering around the centerline, and the lateral offset
    ``(B, T)`` in metres."""
    batch = cx.shape[0]
    s_v = params.speed[:, None] * t  # B x T
    omega = 2 * math.pi / params.wander_period[:, None]
    phase = omega * t + params.wander_phase[:, None]
    lateral = params.wander_mean[:, None] + params.wander_amp[:, None] * torch.sin(phase)
    lateral_rate = params.wander_amp[:, None] * omega * torch.cos(phase)
    theta_v = params.k0[:, None] * s_v + 0.5 * params.k1[:, None] * s_v * s_v
    center_x = _interp_sorted(s_v, s.expand(batch, -1), cx)
    center_z = _interp_sorted(s_v, s.expand(batch, -1), cz)
    pos_x = center_x + lateral * torch.cos(theta_v)
    pos_z = center_z - lateral * torch.sin(theta_v)
    heading = theta_v + torch.atan(lateral_rate / params.speed[:, None])
    return torch.stack([pos_x, pos_z, heading], dim=-1), lateral


def _lines_in_vehicle_frames(lines_x: Tensor, lines_z: Tensor, poses: Tensor) -> tuple[Tensor, Tensor]:
    """World lines ``(B, L, K)`` in each frame's road frame: ``(x, z)``, each ``(B, T, L, K)`` (``z`` increasing)."""
    pos_x, pos_z, heading = poses.unbind(-1)
    rel_x = lines_x[:, None] - pos_x[..., None, None]
    rel_z = lines_z[:, None] - pos_z[..., None, None]
    ch, sh = torch.cos(heading)[..., None, None], torch.sin(heading)[..., None, None]
    local_x = rel_x * ch - rel_z * sh
    local_z = rel_x * sh + rel_z * ch
    return local_x, local_z.cummax(dim=-1).values  # guard against tiny non-monotonicity behind the camera


def _line_cover(
    camera: LaneCamera, hom: Tensor, local_x: Tensor, local_z: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Back-project every pixel to the road and compare with the lines' X at the pixel's Z: ``(cover, on_asphalt,
    visible, v)`` with the painted fraction ``(B, T, P)`` float32, the asphalt mask ``(B, T, P)``, the pixels seeing
    the road ``(P,)`` and the pixel rows ``(H, W)``."""
    f64 = torch.float64
    batch, frames = local_x.shape[:2]
    v, u = torch.meshgrid(torch.arange(camera.height, dtype=f64), torch.arange(camera.width, dtype=f64), indexing="ij")
    pix = torch.stack([u, v], -1).reshape(-1, 2)
    road_xz, on_road = image_to_road(hom, pix)
    grid_dz = 0.25
    grid_z = torch.arange(0.0, 150.0 + grid_dz, grid_dz, dtype=f64)
    grid_x = _interp_sorted(grid_z.expand(*local_z.shape[:-1], -1), local_z, local_x)  # B x T x L x G
    grid_x = grid_x.to(torch.float32)  # per-pixel work in float32 (millimetre accuracy is plenty)
    pz_all, px_all = road_xz[:, 1].to(torch.float32), road_xz[:, 0].to(torch.float32)
    visible = on_road & (pz_all > 0.5) & (pz_all < 150.0)  # P
    pz, px = pz_all[visible], px_all[visible]  # only road pixels are shaded
    gidx = (pz / grid_dz).clamp(0, grid_z.numel() - 2)
    g0 = gidx.floor().long()
    frac = gidx - g0
    x0 = grid_x[..., g0]
    line_x = x0 + frac * (grid_x[..., g0 + 1] - x0)  # B x T x L x P_road
    footprint = pz / camera.focal  # metres per pixel, laterally
    cover_road = ((0.075 - (px - line_x).abs()) / footprint + 0.5).clamp(0, 1)
    cover_road = torch.nan_to_num(cover_road, nan=0.0).amax(dim=2)  # B x T x P_road
    asphalt_road = (px > line_x[:, :, 0] - 1.0) & (px < line_x[:, :, -1] + 1.0)
    n_pix = camera.height * camera.width
    cover = torch.zeros(batch, frames, n_pix, dtype=torch.float32)
    cover[:, :, visible] = cover_road
    on_asphalt = torch.zeros(batch, frames, n_pix, dtype=torch.bool)
    on_asphalt[:, :, visible] = asphalt_road
    return cover, on_asphalt, visible, v


def _render_clips(
    camera: LaneCamera, hom: Tensor, local_x: Tensor, local_z: Tensor, texture: Tensor, channels: int
) -> Tensor:
    """Images ``(B, T, C, H, W)`` in [0, 1]: asphalt, grass and sky shades, textured, with white painted lines."""
    batch, frames = local_x.shape[:2]
    shape = (batch, frames, 1, camera.height, camera.width)
    cover, on_asphalt, visible, v = _line_cover(camera, hom, local_x, local_z)
    base = torch.where(on_asphalt, 0.32, 0.18)
    base = torch.where(visible, base, 0.7 - 0.3 * v.reshape(-1).to(torch.float32) / camera.height)
    gray = base.reshape(shape).to(torch.float32)
    gray = gray + 0.04 * (texture - 0.5) * visible.reshape(1, 1, 1, camera.height, camera.width)
    cover_img = cover.reshape(shape).to(torch.float32)
    paint = 0.95
    gray = gray * (1 - cover_img) + paint * cover_img
    if channels == 1:
        return gray.clamp(0, 1)
    tint = torch.tensor([1.0, 1.0, 1.0])
    sky = torch.tensor([0.85, 0.95, 1.15])
    grass = torch.tensor([0.8, 1.2, 0.7])
    vis = visible.reshape(1, 1, 1, camera.height, camera.width)
    asph = on_asphalt.reshape(shape)
    colour = torch.where(~vis, sky[:, None, None], torch.where(asph, tint[:, None, None], grass[:, None, None]))
    colour = colour * (1 - cover_img) + cover_img  # lines stay white
    return (gray * colour).clamp(0, 1)


@dataclass(frozen=True)
class LaneNoise:
    """A detector error model applied to road-frame lanes (metres, radians, 1/m).

    ``X'(z) = X(z) + lateral_bias + tan(heading_error) z + curvature_error z^2 / 2 + jitter * N(0, 1)``, and
    points farther than ``max_range`` metres become missing (NaN). Every field may also be a tensor broadcasting
    against ``(B, T)`` (one value per clip / frame).

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneNoise
        >>> noise = LaneNoise(lateral_bias=0.5, max_range=40.0)
        >>> noise.lateral_bias, noise.jitter
        (0.5, 0.0)
    """

    lateral_bias: float | Tensor = 0.0
    heading_error: float | Tensor = 0.0
    curvature_error: float | Tensor = 0.0
    jitter: float | Tensor = 0.0
    max_range: float | Tensor | None = None


NOISE_MODELS: dict[str, LaneNoise] = {
    "accurate": LaneNoise(jitter=0.02),
    "lateral bias 0.3 m": LaneNoise(lateral_bias=0.3, jitter=0.02),
    "curvature error 1/300": LaneNoise(curvature_error=1 / 300, jitter=0.02),
    "heading error 1 deg": LaneNoise(heading_error=math.radians(1.0), jitter=0.02),
    "short range 15 m": LaneNoise(max_range=15.0, jitter=0.05),
}
"""Named noise models used by the lane demo."""


def perturb_road_lanes(
    lanes_road: Tensor, z_samples: Tensor, noise: LaneNoise, generator: torch.Generator | None = None
) -> Tensor:
    """Apply a :class:`LaneNoise` to ``(B, T, L, M)`` road-frame lanes (X metres at ``z_samples``).

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic.lane_clips import LaneNoise, perturb_road_lanes
        >>> lanes = torch.zeros(1, 1, 2, 3)  # (B, T, L, M): X = 0 m at three distances
        >>> z = torch.tensor([10.0, 20.0, 30.0])
        >>> perturb_road_lanes(lanes, z, LaneNoise(lateral_bias=0.5))[0, 0, 0].tolist()
        [0.5, 0.5, 0.5]
    """
    check_tensor(lanes_road, "lanes_road")
    check_shape(lanes_road, "lanes_road", ("B", "T", "L", z_samples.shape[0]))
    z = z_samples.to(lanes_road)

    def field(value: float | Tensor) -> Tensor:
        value = torch.as_tensor(value, dtype=lanes_road.dtype, device=lanes_road.device)
        return value.reshape(*value.shape, *([1] * (4 - value.ndim))) if value.ndim <= 2 else value

    out = lanes_road + field(noise.lateral_bias)
    out = out + torch.tan(field(noise.heading_error)) * z + field(noise.curvature_error) * z * z / 2
    jitter = field(noise.jitter)
    if bool((jitter != 0).any()):
        eps = torch.randn(lanes_road.shape, generator=generator, dtype=lanes_road.dtype)
        out = out + jitter * eps.to(lanes_road.device)
    if noise.max_range is not None:
        out = torch.where(z <= field(noise.max_range), out, torch.nan)
    return out


def detections_from_gt(
    clips: LaneClips, noise: LaneNoise, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """Synthetic detections: the clips' GT road-frame lanes with a :class:`LaneNoise` applied.

    Returns:
        ``(lanes_road, lanes_image)``: ``(B, T, L, M)`` perturbed X (metres) at ``clips.z_samples`` and the same
        lanes projected to ``(B, T, L, N)`` x (pixels) at ``clips.h_samples`` (NaN where missing or off-image).

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_clips import LaneNoise, detections_from_gt
        >>> lanes_road, lanes_image = detections_from_gt(clips, LaneNoise(lateral_bias=0.5))
        >>> tuple(lanes_road.shape), tuple(lanes_image.shape)
        ((1, 3, 4, 59), (1, 3, 4, 10))
        >>> round((lanes_road - clips.lanes_road).nan_to_num(0.0).abs().max().item(), 3)  # every line moved 0.5 m
        0.5
    """
    road = perturb_road_lanes(clips.lanes_road, clips.z_samples, noise, generator)
    width = clips.images.shape[-1]
    image = road_lanes_to_image(road, clips.z_samples, clips.image_from_road, clips.h_samples, width)
    return road, image


class PaintedLineDetector:
    """A simple image -> lanes detector for the synthetic clips: finds the ego lines row by row.

    On each row of ``h_samples`` it thresholds the brightness (mean over channels) and takes, on each side of a
    divider column, the bright run nearest to the divider; the lane x is the run's midpoint. The divider starts at
    the image center and is refined twice with a quadratic fit (in the row) of the found lane centers, so it follows
    curves. Rows where no run is found give NaN.

    Args:
        h_samples: ``N`` rows (pixels) to read.
        threshold: brightness above which a pixel is paint.

    Call:
        ``detector(images)`` with ``images`` ``(B, C, H, W)`` returns ``(B, 2, N, 2)`` lane points ``(u, v)``
        (pixels) of the ego-left and ego-right line, NaN where absent (the detector format of
        :func:`drivemetrics.lane.e2e.e2e_ld`); :meth:`detect_x` returns only the x, ``(B, 2, N)``.

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_clips import PaintedLineDetector
        >>> tuple(PaintedLineDetector(clips.h_samples)(clips.images[:, 0]).shape)  # (N, 2, R, 2) ego lines (x, y)
        (1, 2, 10, 2)
    """

    def __init__(self, h_samples: Tensor, threshold: float = 0.6) -> None:
        check_shape(h_samples, "h_samples", ("N",))
        self.h_samples = h_samples
        self.threshold = threshold

    def _find(self, bright: Tensor, divider: Tensor) -> tuple[Tensor, Tensor]:
        width = bright.shape[-1]
        col = torch.arange(width, device=bright.device, dtype=divider.dtype)
        left_zone = col < divider[..., None]
        right_zone = ~left_zone
        neg = torch.tensor(-1.0, dtype=col.dtype, device=col.device)
        big = torch.tensor(float(width), dtype=col.dtype, device=col.device)
        # left: nearest bright column left of the divider, then the start of its run
        inner_l = torch.where(bright & left_zone, col, neg).amax(-1)
        start_l = torch.where(~bright & (col < inner_l[..., None]), col, neg).amax(-1) + 1
        left = torch.where(inner_l >= 0, 0.5 * (inner_l + start_l), torch.nan)
        inner_r = torch.where(bright & right_zone, col, big).amin(-1)
        end_r = torch.where(~bright & (col > inner_r[..., None]), col, big).amin(-1) - 1
        right = torch.where(inner_r < width, 0.5 * (inner_r + end_r), torch.nan)
        return left, right

    def __call__(self, images: Tensor) -> Tensor:
        x = self.detect_x(images)
        rows = self.h_samples.to(x).expand_as(x)
        return torch.stack([x, torch.where(torch.isnan(x), torch.nan, rows)], dim=-1)

    def detect_x(self, images: Tensor) -> Tensor:
        """Ego-left / ego-right x (pixels) at ``h_samples``: ``(B, 2, N)``, NaN where not found."""
        check_shape(images, "images", ("B", "C", "H", "W"))
        rows = self.h_samples.to(images.device).round().long()
        if bool((rows < 0).any()) or bool((rows >= images.shape[-2]).any()):
            raise ValueError("`h_samples` rows must lie inside the images")
        gray = images.mean(dim=1)[:, rows]  # B x N x W
        bright = gray > self.threshold
        v = self.h_samples.to(device=images.device, dtype=torch.float64)
        divider = torch.full(bright.shape[:2], (images.shape[-1] - 1) / 2, dtype=torch.float64, device=images.device)
        near = v >= torch.quantile(v, 0.5)  # first pass trusts the lower half of the rows
        for trusted in (near, torch.ones_like(near)):
            left, right = self._find(bright, divider)
            mid = 0.5 * (left + right)
            ok = ~torch.isnan(mid) & trusted
            design = torch.stack([torch.ones_like(v), v, v * v], dim=-1) / torch.tensor([1.0, 100.0, 1e4]).to(v)
            w = ok.to(torch.float64)
            a = torch.einsum("bn,ni,nj->bij", w, design, design) + 1e-6 * torch.eye(3, dtype=torch.float64).to(v)
            rhs = torch.einsum("bn,ni,bn->bi", w, design, torch.nan_to_num(mid))
            coef = torch.linalg.solve(a, rhs)
            fitted = coef @ design.T
            enough = ok.sum(-1, keepdim=True) >= 3
            divider = torch.where(enough, fitted, divider)
        left, right = self._find(bright, divider)
        return torch.stack([left, right], dim=1).to(images.dtype)


class NoisyLaneDetector:
    """Wrap an image -> lanes detector and apply a :class:`LaneNoise` to its output in the road frame.

    Detected points ``(u, v)`` are back-projected to the road plane, moved laterally by the noise model
    (``X += bias + tan(heading) Z + curvature Z^2 / 2 + jitter N(0, 1)``), dropped beyond ``max_range``, and
    projected back. Noise fields may be tensors of shape ``B`` (one value per image of the batch the detector is
    called with), so one call can score several noise levels at once.

    Args:
        detector: callable ``B x C x H x W -> B x 2 x N x 2`` (e.g. :class:`PaintedLineDetector`).
        noise: the error model.
        image_from_road: ``(3, 3)`` homography of the camera.
        seed: seed of the jitter (each call draws new jitter from one generator).

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_clips import LaneNoise, NoisyLaneDetector, PaintedLineDetector
        >>> painted = PaintedLineDetector(clips.h_samples)
        >>> detector = NoisyLaneDetector(painted, LaneNoise(lateral_bias=0.5), clips.image_from_road)
        >>> tuple(detector(clips.images[:, 0]).shape)
        (1, 2, 10, 2)
    """

    def __init__(self, detector: PaintedLineDetector, noise: LaneNoise, image_from_road: Tensor, seed: int = 0) -> None:
        self.detector = detector
        self.noise = noise
        self.image_from_road = image_from_road
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, images: Tensor) -> Tensor:
        lanes = self.detector(images).to(torch.float64)  # B x 2 x N x 2
        hom = self.image_from_road.to(lanes)
        present = ~torch.isnan(lanes).any(-1)
        xz, on_road = image_to_road(hom, torch.nan_to_num(lanes))
        x, z = xz[..., 0], xz[..., 1]

        def field(value: float | Tensor) -> Tensor:
            value = torch.as_tensor(value, dtype=lanes.dtype, device=lanes.device)
            return value.reshape(-1, 1, 1) if value.ndim == 1 else value

        x = x + field(self.noise.lateral_bias) + torch.tan(field(self.noise.heading_error)) * z
        x = x + field(self.noise.curvature_error) * z * z / 2
        jitter = field(self.noise.jitter)
        if bool((jitter != 0).any()):
            x = x + jitter * torch.randn(x.shape, generator=self.generator, dtype=x.dtype).to(x.device)
        keep = present & on_road
        if self.noise.max_range is not None:
            keep = keep & (z <= field(self.noise.max_range))
        uv = road_to_image(hom, torch.stack([x, z], dim=-1))
        return torch.where(keep[..., None], uv, torch.nan).to(images.dtype)
