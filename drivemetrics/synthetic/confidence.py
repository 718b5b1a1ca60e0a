"""Detector-like confidence maps for synthetic road scenes, with realistic error models.

A synthetic detector's confidence is a function of the road-plane point (x, z) of a pixel or BEV cell, so the
same scene and detector give consistent maps in perspective and in BEV. Its ingredients:

- a soft boundary: ``sigmoid(clamp(margin / softness, -saturation, saturation) + noise)`` where ``margin`` is the
  signed lateral distance (metres) to the target's (road or ego lane) boundary, plus ``boundary_bias`` (positive:
  the detection bleeds outwards); the clamp keeps the noise visible deep inside and far outside the target, so
  confidences spread like a real detector's instead of saturating;
- far-range blur: ``softness = edge_softness + blur_growth * max(z - blur_start, 0)``, so boundaries get less sharp
  with distance; and far-range fade: beyond ``fade_start`` the confidence decays towards ``fade_level``;
- texture noise: a smooth random field (a sum of plane waves with 1-6 m wavelengths) added to the logit;
- shadows: soft discs on the road where confidence drops by ``shadow_strength``;
- false positives: ``sidewalk_fp`` on sidewalks, ``off_target_fp`` on road outside the ego lane (lane detectors);
- pot-holes: small discs inside the target where the confidence collapses (holes in the map).

Random parts are drawn once per scene by :func:`sample_detector` from a seeded ``torch.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from drivemetrics.synthetic.road_scene import RoadCoordinates, RoadGeometry

__all__ = ["DETECTOR_PRESETS", "DetectorModel", "SyntheticDetector", "sample_detector"]


@dataclass(frozen=True)
class DetectorModel:
    """Hyper-parameters of a synthetic detector (metres unless stated).

    Attributes:
        target: ``"road"`` or ``"lane"`` (ego lane).
        edge_softness: logistic scale of the boundary at near range.
        blur_start, blur_growth: softness grows by ``blur_growth`` per metre of Z beyond ``blur_start``.
        fade_start, fade_length, fade_level: beyond ``fade_start`` the confidence relaxes towards ``fade_level``
            with e-folding distance ``fade_length`` (``fade_start = inf`` disables it).
        saturation: bound (logit units) of the boundary term, so that noise keeps acting inside / outside.
        high, low: the confidence range: ``p = low + (high - low) * sigmoid(logit)``.
        boundary_bias: shifts the detected boundary outwards (positive) or inwards (negative).
        noise: amplitude (logit units) of the smooth texture noise.
        shadows: shadows per scene; shadow_radius: (min, max) radius; shadow_strength: relative confidence drop.
        sidewalk_fp: confidence on sidewalks (0 disables).
        off_target_fp: confidence on road outside the ego lane (``target="lane"`` only; 0 disables).
        potholes: holes per scene inside the target; pothole_radius: (min, max) radius.

    Examples:
        >>> from drivemetrics.synthetic import DETECTOR_PRESETS, DetectorModel
        >>> DetectorModel(noise=0.0).target, isinstance(DETECTOR_PRESETS["good"], DetectorModel)
        ('road', True)
    """

    target: str = "road"
    edge_softness: float = 0.12
    blur_start: float = 15.0
    blur_growth: float = 0.0
    fade_start: float = math.inf
    fade_length: float = 20.0
    fade_level: float = 0.5
    saturation: float = 3.5
    high: float = 1.0
    low: float = 0.0
    boundary_bias: float = 0.0
    noise: float = 0.6
    shadows: int = 0
    shadow_radius: tuple[float, float] = (1.0, 3.5)
    shadow_strength: float = 0.5
    sidewalk_fp: float = 0.0
    off_target_fp: float = 0.0
    potholes: int = 0
    pothole_radius: tuple[float, float] = (0.4, 1.0)

    def __post_init__(self) -> None:
        if self.target not in ("road", "lane"):
            raise ValueError(f"`target` must be 'road' or 'lane', got {self.target!r}")
        if not self.edge_softness > 0 or self.blur_growth < 0 or not self.fade_length > 0:
            raise ValueError("`edge_softness` and `fade_length` must be > 0 and `blur_growth` >= 0")
        if not self.saturation > 0:
            raise ValueError(f"`saturation` must be > 0 (logit units), got {self.saturation}")
        for name in ("high", "low", "fade_level", "shadow_strength", "sidewalk_fp", "off_target_fp"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"`{name}` must be in [0, 1], got {getattr(self, name)}")
        if not self.low < self.high:
            raise ValueError("need `low` < `high`")
        if self.shadows < 0 or self.potholes < 0 or self.noise < 0:
            raise ValueError("`shadows`, `potholes` and `noise` must be >= 0")
        for name in ("shadow_radius", "pothole_radius"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"`{name}` must be (min, max) with 0 < min <= max, got {(lo, hi)}")


DETECTOR_PRESETS: dict[str, DetectorModel] = {
    "good": DetectorModel(edge_softness=0.1, noise=0.5, shadows=2, shadow_strength=0.2),
    "blurry_far": DetectorModel(blur_start=12.0, blur_growth=0.12, fade_start=25.0, fade_length=25.0, fade_level=0.4),
    "sidewalk_happy": DetectorModel(sidewalk_fp=0.9, boundary_bias=0.2),
    "shadowed": DetectorModel(shadows=8, shadow_strength=0.7, shadow_radius=(1.5, 4.0)),
    "lane_good": DetectorModel(target="lane", edge_softness=0.1, noise=0.5),
    "lane_potholes": DetectorModel(target="lane", noise=0.5, potholes=4, pothole_radius=(0.5, 1.2)),
    "lane_blurry": DetectorModel(target="lane", blur_start=10.0, blur_growth=0.08, fade_start=30.0, off_target_fp=0.3),
}


@dataclass(frozen=True)
class SyntheticDetector:
    """A detector model with its per-scene random parts (``B`` scenes).

    Attributes:
        model: the hyper-parameters.
        shadows: ``(B, M, 3)`` shadow discs ``(x, z, radius)``, metres.
        potholes: ``(B, P, 3)`` pot-hole discs ``(x, z, radius)``, metres.
        waves: ``(B, Q, 4)`` texture plane waves ``(k_x, k_z, phase, amplitude)`` (rad/m, rad, logit units).

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import SyntheticDetector, sample_detector, sample_road_geometry
        >>> detector = sample_detector("good", sample_road_geometry(2, torch.Generator().manual_seed(0)))
        >>> isinstance(detector, SyntheticDetector), detector.model.target
        (True, 'road')
    """

    model: DetectorModel
    shadows: Tensor
    potholes: Tensor
    waves: Tensor

    def texture(self, x: Tensor, z: Tensor) -> Tensor:
        """The smooth noise field at road points ``x, z`` (``(B, ...)``), roughly unit variance."""
        out = torch.zeros_like(x)
        waves = self.waves.to(x)
        extra = (1,) * (x.ndim - 1)
        for q in range(waves.shape[1]):  # a handful of waves, not a loop over points
            kx, kz, phase, amp = (waves[:, q, i].reshape(-1, *extra) for i in range(4))
            out = out + amp * torch.sin(kx * x + kz * z + phase)
        return out

    @staticmethod
    def _discs(discs: Tensor, x: Tensor, z: Tensor, edge: float) -> Tensor:
        """Soft union (max) of discs ``(B, M, 3)`` at points ``x, z``; 1 inside, 0 outside, ``edge`` metres wide."""
        out = torch.zeros_like(x)
        discs = discs.to(x)
        extra = (1,) * (x.ndim - 1)
        for m in range(discs.shape[1]):  # a handful of discs, not a loop over points
            cx, cz, r = (discs[:, m, i].reshape(-1, *extra) for i in range(3))
            dist = torch.sqrt((x - cx) ** 2 + (z - cz) ** 2)
            out = torch.maximum(out, torch.sigmoid((r - dist) / edge))
        return out

    def confidence(
        self, geometry: RoadGeometry, coords: RoadCoordinates, x: Tensor, z: Tensor, on_ground: Tensor
    ) -> Tensor:
        """Confidence in [0, 1] at road points (all arguments ``(B, ...)``, as produced by the renderers)."""
        m = self.model
        margin = geometry.edge_distance(coords, m.target) + m.boundary_bias
        softness = m.edge_softness + m.blur_growth * (z - m.blur_start).clamp_min(0)
        texture = self.texture(x, z)
        logit = (margin / softness).clamp(-m.saturation, m.saturation) + m.noise * texture
        p = m.low + (m.high - m.low) * torch.sigmoid(logit)
        if m.off_target_fp > 0 and m.target == "lane":
            road = torch.sigmoid(geometry.edge_distance(coords, "road") / softness)
            p = torch.maximum(p, m.off_target_fp * road * (0.85 + 0.15 * torch.tanh(texture)))
        if m.sidewalk_fp > 0:
            sidewalk = geometry.sidewalk_mask(coords).to(p)
            p = torch.maximum(p, m.sidewalk_fp * sidewalk * (0.85 + 0.15 * torch.tanh(texture)))
        if self.shadows.shape[1]:
            p = p * (1 - m.shadow_strength * self._discs(self.shadows, x, z, edge=0.3))
        if self.potholes.shape[1]:
            p = p * (1 - 0.97 * self._discs(self.potholes, x, z, edge=0.05))
        if math.isfinite(m.fade_start):
            keep = torch.exp(-(z - m.fade_start).clamp_min(0) / m.fade_length)
            p = m.fade_level + (p - m.fade_level) * keep
        p = torch.where(on_ground, p, torch.full_like(p, m.low))
        return p.clamp(0, 1)

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> SyntheticDetector:
        """A copy on another device / dtype."""
        return replace(
            self,
            shadows=self.shadows.to(device=device, dtype=dtype),
            potholes=self.potholes.to(device=device, dtype=dtype),
            waves=self.waves.to(device=device, dtype=dtype),
        )


def sample_detector(
    model: DetectorModel | str,
    geometry: RoadGeometry,
    generator: torch.Generator | None = None,
    num_waves: int = 8,
) -> SyntheticDetector:
    """Draw the random parts of a detector for each scene of ``geometry`` (seeded by ``generator``).

    Args:
        model: a :class:`DetectorModel` or the name of one of :data:`DETECTOR_PRESETS`.
        geometry: ``B`` roads; shadows fall on the road between 5 and 45 m of arc length, pot-holes inside the
            target (road or ego lane) between 8 and 40 m.
        generator: the random source (its device is used for drawing; results go to the geometry's device).
        num_waves: plane waves of the texture noise.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic import sample_detector, sample_road_geometry
        >>> roads = sample_road_geometry(3, torch.Generator().manual_seed(0))
        >>> detector = sample_detector("good", roads, torch.Generator().manual_seed(0))
        >>> type(detector).__name__, detector.shadows.shape[0]
        ('SyntheticDetector', 3)
    """
    if isinstance(model, str):
        if model not in DETECTOR_PRESETS:
            raise ValueError(f"unknown detector preset {model!r}; choose from {sorted(DETECTOR_PRESETS)}")
        model = DETECTOR_PRESETS[model]
    b = geometry.batch_size
    gdev = generator.device if generator is not None else torch.device("cpu")
    kw = {"generator": generator, "device": gdev, "dtype": torch.float64}
    geo = geometry.to(device=gdev, dtype=torch.float64)

    def discs(count: int, s_range: tuple[float, float], radius: tuple[float, float], kind: str) -> Tensor:
        if count == 0:
            return torch.zeros(b, 0, 3, dtype=torch.float64, device=gdev)
        s = s_range[0] + (s_range[1] - s_range[0]) * torch.rand(b, count, **kw)
        r = radius[0] + (radius[1] - radius[0]) * torch.rand(b, count, **kw)
        if kind == "road":
            left, right = geo.road_left(s), geo.road_right(s)
        else:
            left = torch.maximum(geo.lane_left(s), geo.road_left(s))
            right = torch.minimum(geo.lane_right(s), geo.road_right(s))
        # pot-holes stay inside the target; shadows may reach beyond the edges
        inset = r.minimum(0.45 * (right - left)) if kind != "road" else torch.zeros_like(r)
        d = left + inset + (right - left - 2 * inset) * torch.rand(b, count, **kw)
        x, z = geo.points_at(s, d)
        return torch.stack([x, z, r], -1)

    shadows = discs(model.shadows, (5.0, 45.0), model.shadow_radius, "road")
    potholes = discs(model.potholes, (8.0, 40.0), model.pothole_radius, model.target)
    wavelength = 1.0 + 5.0 * torch.rand(b, num_waves, **kw)
    angle = 2 * math.pi * torch.rand(b, num_waves, **kw)
    phase = 2 * math.pi * torch.rand(b, num_waves, **kw)
    k = 2 * math.pi / wavelength
    amp = torch.full_like(k, math.sqrt(2.0 / num_waves))
    waves = torch.stack([k * torch.sin(angle), k * torch.cos(angle), phase, amp], -1)
    return SyntheticDetector(model, shadows, potholes, waves).to(device=geometry.device, dtype=geometry.dtype)
