"""Device hygiene without a GPU: the tensor kernels do not synchronise with the host once argument checks are off.

A ``TorchFunctionMode`` records every call that forces a device-to-host copy on CUDA (``.item()``, ``.tolist()``,
``bool(tensor)``, ``.cpu()``, ``.numpy()``, ``nonzero`` and other data-dependent shapes). Each kernel runs once
to warm its caches (a Metric decides its counting plan from its threshold buffer once), then again under the
recorder with ``validate_args=False``; the second run must record nothing. Kernels that still synchronise by
design are listed in :data:`KNOWN_SYNCS` and in the README.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import pytest
import torch
from torch.overrides import TorchFunctionMode

from drivemetrics.geometry import BevGrid, warp_bev_to_image, warp_image_to_bev
from drivemetrics.geometry.camera import image_from_road_homography, intrinsic_matrix

SYNCING = {
    "item", "tolist", "__bool__", "cpu", "numpy", "__int__", "__float__", "__index__", "nonzero", "masked_select",
    "unique", "unique_consecutive", "argwhere", "repeat_interleave",
}  # fmt: skip

#: Kernels that synchronise by design (README, "What drivemetrics promises"): why.
KNOWN_SYNCS = {
    "fit_driving_corridor": "multi-stage search whose stopping rule (no new element with enough detections) is "
    "data-dependent: one sync per stage",
    "CULaneMetrics / culane_counts": "Hungarian matching runs in scipy on the CPU",
    "TuSimpleMetrics": "per-image lane matching rules are evaluated on the host",
}


class SyncRecorder(TorchFunctionMode):
    """Records (function, drivemetrics file:line) for every host-synchronising call made inside the mode."""

    names = SYNCING

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name in self.names:
            frames = [f for f in traceback.extract_stack()[:-1] if "/drivemetrics/" in f.filename]
            where = f"{frames[-1].filename.split('/drivemetrics/')[-1]}:{frames[-1].lineno}" if frames else "?"
            self.calls.append((name, where))
        return func(*args, **(kwargs or {}))


def _syncs(run: Callable[[], object]) -> list[tuple[str, str]]:
    run()  # warm-up: caches, lazy buffers
    with SyncRecorder() as recorder:
        run()
    return recorder.calls


def _homography(batch: int) -> torch.Tensor:
    h = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
    return h.float().expand(batch, 3, 3).clone()


def _kernels() -> dict[str, Callable[[], object]]:
    from drivemetrics.functional import psld, soft_f_measure
    from drivemetrics.lane import PSLD, PSLDLoss
    from drivemetrics.road import RoadPixelMaxFScore, RoadPixelMetrics, SoftFMeasureLoss

    g = torch.Generator().manual_seed(0)
    preds = torch.rand(2, 120, 200, generator=g)
    target = torch.rand(2, 120, 200, generator=g) > 0.5
    preds_u8 = (preds * 255).to(torch.uint8)
    image = torch.rand(2, 1, 375, 1242, generator=g)
    bev = torch.rand(2, 1, 800, 400, generator=g)
    grid = BevGrid()
    h = _homography(2)
    center = torch.randn(3, 101, generator=g) * 0.3
    gt_center = torch.randn(3, 101, generator=g) * 0.3
    pixel = RoadPixelMetrics(validate_args=False)
    pixel_bev = RoadPixelMetrics(space="bev", validate_args=False)
    maxf = RoadPixelMaxFScore(validate_args=False)
    bev_preds, bev_target = torch.rand(2, 375, 1242, generator=g), torch.rand(2, 375, 1242, generator=g) > 0.5
    soft_f = SoftFMeasureLoss(validate_args=False)
    psld_loss = PSLDLoss(validate_args=False)
    psld_metric = PSLD(validate_args=False)
    leaf = center.clone().requires_grad_()
    from drivemetrics.attack.patch import PatchSpec, composite_patch, image_from_texture, road_pixel_mask

    spec = PatchSpec()
    warp = image_from_texture(
        h[:1].double(), torch.zeros(2, 3, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64), spec
    ).float()
    frames = torch.rand(2, 3, 375, 1242, generator=g)
    texture = torch.rand(1, 1, *spec.shape, generator=g).mul_(0.2).requires_grad_()
    mask = road_pixel_mask(h[:1].double(), (375, 1242))

    def attack_step() -> None:
        patched, _ = composite_patch(frames, texture, warp, mask, validate_args=False)
        patched.mean().backward()

    return {
        "composite_patch forward + backward (DRP attack)": attack_step,
        "RoadPixelMetrics.update (float)": lambda: pixel.update(preds, target),
        "RoadPixelMetrics.update (uint8)": lambda: pixel.update(preds_u8, target),
        "RoadPixelMetrics.update (bev)": lambda: pixel_bev.update(bev_preds, bev_target, homography=h),
        "RoadPixelMaxFScore.update": lambda: maxf.update(preds, target),
        "soft_f_measure": lambda: soft_f_measure(preds, target, validate_args=False),
        "SoftFMeasureLoss forward + backward": lambda: soft_f(preds.clone().requires_grad_(), target).backward(),
        "warp_image_to_bev (bilinear)": lambda: warp_image_to_bev(image, h, grid, validate_args=False),
        "warp_bev_to_image (bilinear)": lambda: warp_bev_to_image(bev, h, (375, 1242), grid, validate_args=False),
        "psld": lambda: psld(center, gt_center, speed=20.0, validate_args=False),
        "PSLDLoss forward + backward": lambda: psld_loss(leaf, gt_center, speed=20.0).backward(),
        "PSLD.update": lambda: psld_metric.update(center, gt_center, speed=20.0),
    }


@pytest.mark.parametrize("name", list(_kernels()))
def test_kernel_does_not_synchronise_with_the_host(name):
    assert _syncs(_kernels()[name]) == []


#: ``bincount`` sizes its output from the data: on CUDA it reads the min and max back to the host.
SYNCING_OFF_CPU = {"bincount", "histc", "histogram"}


@pytest.mark.parametrize("name", [k for k in _kernels() if "RoadPixelMetrics" in k or "RoadPixelMaxFScore" in k])
def test_pixel_counting_off_the_cpu_path_has_no_data_dependent_sizes(monkeypatch, name):
    """``CPU_BLOCK_PIXELS = 0`` runs the one-pass path other devices take: it must not call bincount."""
    import drivemetrics.road.pixel_counting as pixel

    monkeypatch.setattr(pixel, "CPU_BLOCK_PIXELS", 0)
    monkeypatch.setattr(SyncRecorder, "names", SYNCING | SYNCING_OFF_CPU)
    assert _syncs(_kernels()[name]) == []


def test_the_recorder_sees_a_sync():
    """The check can fail: a kernel that reads a value back is caught, with its location."""
    from drivemetrics.functional import soft_f_measure

    preds, target = torch.rand(1, 8, 8), torch.rand(1, 8, 8) > 0.5
    calls = _syncs(lambda: soft_f_measure(preds, target, validate_args=True))
    assert any(where.startswith("_internal/validation.py") for _, where in calls)
