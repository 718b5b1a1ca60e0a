"""Small lane detectors of the four families attacked by DRP, for the synthetic lane clips (CPU, minutes to train).

Every detector maps ``images (N, C, H, W)`` (the :class:`~drivemetrics.synthetic.lane_clips.LaneCamera` frames,
default 128 x 256) to a dict of outputs and provides :meth:`center` (the family's differentiable expected road
center, :mod:`drivemetrics.lane.road_center`) and :meth:`lanes` (ego-left / ego-right points ``(N, 2, R, 2)`` in
pixels at the rows ``h_samples``, what the car steers by); :meth:`lane_model` packs them as an
:class:`drivemetrics.attack.LaneModel`.

* ``segmentation`` (SCNN-like): a 2-channel map (ego-left, ego-right) at the pooled resolution, trained with a
  row-wise softmax over columns; lanes = per-row soft-argmax.
* ``rowwise`` (UltraFast-like): per lane and row anchor, a classification over ``cells`` grid cells (the
  column-pooled scores of a local lane-score map) plus a "no lane" cell (from global features).
* ``polynomial`` (PolyLaneNet-like): per lane a cubic ``x(y)`` (normalised coordinates) and a confidence.
* ``anchor`` (LaneATT-like): straight anchors through the vanishing point; the lane-score map is pooled along every
  anchor and one shared linear layer gives its class (none / ego-left / ego-right) and x offsets at the rows.

The segmentation, row-wise and anchor heads read local lane evidence, so a patch darkening the road near a marking
moves their lanes. :class:`TinyLineDetector` is a parameter-free differentiable detector (a soft-argmax of the
brightness per row) for tests. Backbone: three 3 x 3 convolutions (8, 16, 16 channels, two 2 x 2 max-pools) on the
grey image average-pooled to about 32 rows (32 x 64 for 128 x 256 frames), so that training and attacking stay
fast on a CPU.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
)

__all__ = ["FAMILIES", "LaneDetector", "TinyLineDetector", "make_detector", "train_detector"]

FAMILIES = ("segmentation", "rowwise", "polynomial", "anchor")


class TinyLineDetector:
    """Parameter-free differentiable detector: per row, the soft-argmax of brightness left / right of a divider.

    Output ``{"maps": (N, 2, R, W)}`` logits (``sharpness`` x grey level, the other half of the row masked with a
    large negative value); center = :func:`expected_center_from_maps`; lanes = per-row expected column.

    Examples:
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> clips = make_lane_clips(batch=1, frames=3, seed=0, camera=camera)
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> detector = TinyLineDetector(clips.h_samples, camera.width)
        >>> tuple(detector(clips.images[:, 0])["maps"].shape)  # (N, 2, R, W) logits
        (1, 2, 10, 128)
    """

    def __init__(self, h_samples: Tensor, width: int, divider: float | None = None, sharpness: float = 40.0) -> None:
        self.rows = h_samples.round().long()
        self.width = width
        self.divider = (width - 1) / 2 if divider is None else divider
        self.sharpness = sharpness

    def __call__(self, images: Tensor) -> dict[str, Tensor]:
        grey = images.mean(1)[:, self.rows.to(images.device)]  # N x R x W
        col = torch.arange(self.width, device=images.device, dtype=images.dtype)
        left = (col < self.divider).to(images.dtype)
        logits = self.sharpness * grey
        maps = torch.stack([logits - 1e4 * (1 - left), logits - 1e4 * left], 1)
        return {"maps": maps}

    def center(self, output: dict[str, Tensor]) -> Tensor:
        return expected_center_from_maps(output["maps"])

    def lanes(self, output: dict[str, Tensor]) -> Tensor:
        maps = output["maps"]
        col = torch.arange(maps.shape[-1], device=maps.device, dtype=maps.dtype)
        u = (torch.softmax(maps, -1) * col).sum(-1)
        v = self.rows.to(u).expand_as(u)
        return torch.stack([u, v], -1)

    def lane_model(self, name: str = "tiny"):  # noqa: ANN201 (drivemetrics.attack.LaneModel, imported lazily)
        from drivemetrics.attack.drp import LaneModel

        return LaneModel(self, self.center, self.lanes, name)


class LaneDetector(nn.Module):
    """One small detector of a family (module docstring).

    Args:
        family: one of :data:`FAMILIES`.
        h_samples: ``R`` image rows (pixels) at which lanes are predicted.
        image_size: ``(H, W)`` of the input frames.
        vanishing_point: ``(u, v)`` pixels, for the anchor family's anchors.
        cells: grid cells of the row-wise family; anchors of the anchor family.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic.lane_detectors import FAMILIES, LaneDetector
        >>> _ = torch.manual_seed(0)
        >>> detector = LaneDetector("rowwise", torch.linspace(30.0, 60.0, 4), image_size=(64, 128))
        >>> FAMILIES, detector.family
        (('segmentation', 'rowwise', 'polynomial', 'anchor'), 'rowwise')
    """

    def __init__(
        self,
        family: str,
        h_samples: Tensor,
        image_size: tuple[int, int] = (128, 256),
        vanishing_point: tuple[float, float] = (127.5, 40.0),
        cells: int = 32,
    ) -> None:
        super().__init__()
        if family not in FAMILIES:
            raise ValueError(f"`family` must be one of {FAMILIES}, got {family!r}")
        self.family = family
        self.height, self.width = image_size
        self.pool = max(1, self.height // 32)  # input average-pooled to about 32 rows
        self.register_buffer("h_samples", h_samples.to(torch.float32).clone())
        r = h_samples.numel()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
        )
        feat = 16 * 4 * 8
        self.cells = cells
        if family in ("segmentation", "rowwise", "anchor"):
            # local head at the pooled resolution: lane evidence where the markings are
            self.head = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 1))
        if family == "rowwise":
            self.no_lane = nn.Linear(feat, 2 * r)
        elif family == "polynomial":
            self.head = nn.Linear(feat, 2 * 5)
        elif family == "anchor":
            self.anchor_head = nn.Linear(2 * r, 3 + r)
            bottom = torch.linspace(-0.5 * self.width, 1.5 * self.width, cells)
            u0, v0 = vanishing_point
            frac = (self.h_samples - v0) / (self.height - 1 - v0)  # R
            self.register_buffer("anchor_x", u0 + (bottom[:, None] - u0) * frac[None, :])  # A x R pixels

    def _maps(self, x: Tensor) -> Tensor:
        """``(N, 2, R, W / pool)`` ego-left / ego-right lane scores at the rows ``h_samples``, pooled columns."""
        maps = F.interpolate(self.head(x), scale_factor=4, mode="bilinear", align_corners=False)
        rows = ((self.h_samples + 0.5) / self.pool - 0.5).round().long().clamp(0, maps.shape[-2] - 1)
        return maps[:, :, rows]

    def forward(self, images: Tensor) -> dict[str, Tensor]:
        x = F.avg_pool2d(images.mean(1, keepdim=True), self.pool)  # N x 1 x H/pool x W/pool
        x = self.backbone(x - 0.35)  # N x 16 x H/(4 pool) x W/(4 pool)
        n, r = x.shape[0], self.h_samples.numel()
        if self.family == "segmentation":
            return {"maps": self._maps(x)}
        if self.family == "rowwise":
            maps = self._maps(x)  # cells: columns averaged in groups
            cells = F.adaptive_avg_pool2d(maps, (r, self.cells))
            no_lane = self.no_lane(F.adaptive_avg_pool2d(x, (4, 8)).flatten(1)).reshape(n, 2, r, 1)
            return {"logits": torch.cat([cells, no_lane], -1)}
        if self.family == "polynomial":
            out = self.head(F.adaptive_avg_pool2d(x, (4, 8)).flatten(1)).reshape(n, 2, 5)
            base = torch.tensor([[0.0, 0.0, 0.0, 0.4], [0.0, 0.0, 0.0, 0.6]], device=out.device, dtype=out.dtype)
            return {"coefficients": out[..., :4] + base, "confidence": out[..., 4]}
        # anchor (LaneATT-like): lane scores pooled along every anchor, then one linear layer shared by the anchors
        maps = F.interpolate(self.head(x), scale_factor=4, mode="bilinear", align_corners=False)  # N x 2 x h x w
        gx = (self.anchor_x + 0.5) / self.width * 2 - 1  # A x R, grid_sample coordinates (align_corners=False)
        gy = ((self.h_samples + 0.5) / self.height * 2 - 1).expand_as(gx)
        grid = torch.stack([gx, gy], -1).to(maps.dtype).expand(n, -1, -1, -1)
        along = F.grid_sample(maps, grid, align_corners=False)  # N x 2 x A x R
        out = self.anchor_head(along.permute(0, 2, 1, 3).flatten(2))  # N x A x (3 + R)
        return {"classes": out[..., :3], "offsets": out[..., 3:] * 10.0}

    def center(self, output: dict[str, Tensor]) -> Tensor:
        """``(N,)`` expected road center of the family (differentiable)."""
        if self.family == "segmentation":
            return expected_center_from_maps(output["maps"])
        if self.family == "rowwise":
            return expected_center_from_maps(output["logits"], no_lane_cell=True)
        if self.family == "polynomial":
            conf = torch.sigmoid(output["confidence"])
            return expected_center_from_polynomials(output["coefficients"], conf, y=self.h_samples / self.height)
        p = torch.softmax(output["classes"], -1)
        xs = self.anchor_x.expand(p.shape[0], -1, -1)
        return expected_center_from_anchors(xs, 1 - p[..., 0], image_width=self.width, offsets=output["offsets"])

    def lane_x(self, output: dict[str, Tensor]) -> Tensor:
        """``(N, 2, R)`` ego-left / ego-right x (pixels) at ``h_samples`` (differentiable)."""
        if self.family == "segmentation":
            maps = output["maps"]
            col = torch.arange(maps.shape[-1], device=maps.device, dtype=maps.dtype)
            return self.pool * ((torch.softmax(maps, -1) * col).sum(-1) + 0.5) - 0.5
        if self.family == "rowwise":
            prob = torch.softmax(output["logits"][..., :-1], -1)
            col = (torch.arange(self.cells, device=prob.device, dtype=prob.dtype) + 0.5) * self.width / self.cells
            return (prob * col).sum(-1) - 0.5
        if self.family == "polynomial":
            y = self.h_samples / self.height
            powers = y[:, None] ** torch.arange(3, -1, -1, device=y.device, dtype=y.dtype)
            return (output["coefficients"] @ powers.T) * self.width
        p = torch.softmax(output["classes"], -1)  # N x A x 3
        xs = self.anchor_x + output["offsets"]  # N x A x R
        pick = torch.softmax(p[..., 1:].transpose(1, 2) * 50.0, -1)  # N x 2 x A, nearly the most likely anchor
        return pick @ xs

    def lanes(self, output: dict[str, Tensor]) -> Tensor:
        """``(N, 2, R, 2)`` lane points ``(u, v)`` in pixels."""
        u = self.lane_x(output)
        return torch.stack([u, self.h_samples.to(u).expand_as(u)], -1)

    def loss(self, output: dict[str, Tensor], target_x: Tensor) -> Tensor:
        """Training loss against ego-lane x ``(N, 2, R)`` pixels (NaN = not visible)."""
        present = torch.isfinite(target_x)
        tx = torch.nan_to_num(target_x)
        if self.family == "segmentation":
            maps = output["maps"]
            col = ((tx + 0.5) / self.pool - 0.5).round().long().clamp(0, maps.shape[-1] - 1)
            ce = F.cross_entropy(maps.permute(0, 3, 1, 2), col, reduction="none")
            return (ce * present).sum() / present.sum().clamp_min(1)
        if self.family == "rowwise":
            logits = output["logits"]
            cell = (tx * self.cells / self.width).floor().long().clamp(0, self.cells - 1)
            cell = torch.where(present, cell, torch.full_like(cell, self.cells))
            return F.cross_entropy(logits.permute(0, 3, 1, 2), cell)
        if self.family == "polynomial":
            x = self.lane_x(output)
            l1 = ((x - tx).abs() / self.width * present).sum() / present.sum().clamp_min(1)
            conf = F.binary_cross_entropy_with_logits(output["confidence"], present.any(-1).to(x.dtype))
            return 10 * l1 + 0.1 * conf
        # anchor: each ego lane -> its closest anchor (mean |dx| over visible rows)
        dist = ((self.anchor_x[None, None] - tx[:, :, None]).abs() * present[:, :, None]).sum(-1)  # N x 2 x A
        best = dist.argmin(-1)  # N x 2
        labels = torch.zeros(tx.shape[0], self.cells, dtype=torch.long, device=tx.device)
        labels.scatter_(1, best[:, :1], 1)
        labels.scatter_(1, best[:, 1:], 2)
        ce = F.cross_entropy(output["classes"].permute(0, 2, 1), labels)
        xs = self.anchor_x[best] + output["offsets"].gather(1, best[..., None].expand(-1, -1, tx.shape[-1]))
        l1 = ((xs - tx).abs() / self.width * present).sum() / present.sum().clamp_min(1)
        return ce + 10 * l1

    def lane_model(self):  # noqa: ANN201 (drivemetrics.attack.LaneModel, imported lazily)
        """This detector as a :class:`drivemetrics.attack.LaneModel` (in eval mode)."""
        from drivemetrics.attack.drp import LaneModel

        self.eval()
        return LaneModel(self, self.center, self.lanes, self.family)


def make_detector(
    family: str,
    h_samples: Tensor,
    image_size: tuple[int, int] = (128, 256),
    vanishing_point: tuple[float, float] | None = None,
) -> LaneDetector:
    """A fresh :class:`LaneDetector` (seeded by the caller's ``torch.manual_seed``); the vanishing point defaults to
    that of the default :class:`~drivemetrics.synthetic.lane_clips.LaneCamera` scaled to ``image_size``.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic.lane_detectors import make_detector
        >>> _ = torch.manual_seed(0)
        >>> detector = make_detector("polynomial", torch.linspace(30.0, 60.0, 4), image_size=(64, 128))
        >>> type(detector).__name__, detector.family
        ('LaneDetector', 'polynomial')
    """
    if vanishing_point is None:
        vanishing_point = (127.5 * image_size[1] / 256, 40.0 * image_size[0] / 128)
    return LaneDetector(family, h_samples, image_size, vanishing_point)


def train_detector(
    detector: LaneDetector,
    images: Tensor,
    target_x: Tensor,
    steps: int = 300,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Train on frames ``(N, C, H, W)`` with ego-lane x ``(N, 2, R)`` (pixels, NaN = absent); returns losses.

    Adam with a cosine learning-rate decay; mini-batches drawn with a seeded generator.

    Examples:
        >>> import torch
        >>> from drivemetrics.synthetic.lane_detectors import make_detector, train_detector
        >>> _ = torch.manual_seed(0)
        >>> detector = make_detector("rowwise", torch.linspace(30.0, 60.0, 4), image_size=(64, 128))
        >>> images, target_x = torch.rand(2, 1, 64, 128), torch.full((2, 2, 4), 50.0)  # (N, 2, R) ego-lane x
        >>> losses = train_detector(detector, images, target_x, steps=1, batch_size=2)
        >>> len(losses)
        1
    """
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(detector.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5 * (1 + math.cos(math.pi * i / max(steps, 1))))
    detector.train()
    losses = []
    for _ in range(steps):
        idx = torch.randint(images.shape[0], (batch_size,), generator=gen)
        loss = detector.loss(detector(images[idx]), target_x[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    detector.eval()
    return losses
