import dataclasses

import pytest
import torch

from drivemetrics.attack.drp import DriveClips, DRPConfig, LaneModel, drp_attack, evaluate_patch, simulate_drive
from drivemetrics.attack.patch import PatchSpec
from drivemetrics.lane.e2e import e2e_ld
from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
from drivemetrics.synthetic.lane_detectors import TinyLineDetector

CAMERA = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
SPEC = PatchSpec(width=3.6, length=12.0, start=5.0, cell=0.2)


@pytest.fixture(scope="module")
def clips():
    c = make_lane_clips(batch=2, frames=6, seed=3, camera=CAMERA, max_wander=0.1)
    drive = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.centre_road, c.z_samples, c.lane_width)
    return c, drive


@pytest.fixture(scope="module")
def model(clips):
    c, _ = clips
    return TinyLineDetector(c.h_samples, CAMERA.width).lane_model()


def config(**changes):
    base = DRPConfig(patch=SPEC, iterations=3, eot_samples=2, lr=0.05, target_deviation=None)
    return dataclasses.replace(base, **changes)


def test_benign_drive_matches_lane_e2e(clips, model):
    c, drive = clips
    poses = simulate_drive(drive, model, config=config())
    details = e2e_ld(
        drive.images,
        c.centre_road,
        c.speed,
        lambda v: model.lanes(model.forward(v)),
        c.image_from_road,
        c.poses,
        frames=5,
        z_samples=c.z_samples,
        return_details=True,
    )
    assert torch.allclose(poses, details.poses, atol=1e-9)
    ev = evaluate_patch(drive, model, torch.zeros(2, 1, *SPEC.shape, dtype=torch.float64), config())
    assert torch.allclose(ev.benign_e2e_ld, details.value, atol=1e-9)


def test_zero_budget_changes_nothing(clips, model):
    _, drive = clips
    result = drp_attack(drive, model, config(linf=0.0))
    ev = result.evaluation
    assert result.iterations == 0
    assert torch.equal(result.perturbation, torch.zeros_like(result.perturbation))
    assert torch.equal(ev.attacked_poses, ev.benign_poses)


def test_batched_equals_per_clip(clips, model):
    _, drive = clips
    gen = torch.Generator().manual_seed(0)
    delta = 0.2 * torch.rand(2, 1, *SPEC.shape, generator=gen, dtype=torch.float64)
    both = simulate_drive(drive, model, delta, config())
    for i in range(2):
        one = dataclasses.replace(
            drive,
            images=drive.images[i : i + 1],
            speed=drive.speed[i : i + 1],
            recorded_poses=drive.recorded_poses[i : i + 1],
            lane_centre=drive.lane_centre[i : i + 1],
            lane_width=drive.lane_width[i : i + 1],
        )
        assert torch.allclose(simulate_drive(one, model, delta[i : i + 1], config()), both[i : i + 1], atol=1e-9)


@pytest.mark.parametrize(
    ("scheme", "optimizer"), [("trajectory", "adam"), pytest.param("backprop", "sign", marks=pytest.mark.slow)]
)
def test_attack_pushes_the_car_and_respects_the_budget(clips, model, scheme, optimizer):
    _, drive = clips
    cfg = config(linf=0.2, l2=3.0, top_k=400, scheme=scheme, optimizer=optimizer, iterations=4)
    result = drp_attack(drive, model, cfg)
    delta = result.perturbation
    assert delta.min() >= 0
    assert delta.max() <= 0.2
    assert (delta.flatten(1).norm(dim=1) <= 3.0 + 1e-9).all()
    assert ((delta.sum(1) > 0).flatten(1).sum(1) <= 400).all()
    ev = result.evaluation
    pushed = (ev.attacked_offsets - ev.benign_offsets).amax(1)  # towards +X (right)
    assert (pushed > 0.01).all(), pushed
    assert result.history.shape[1] == 2


def test_bad_inputs(clips, model):
    _c, drive = clips
    with pytest.raises(ValueError, match="linf"):
        config(linf=-0.1)
    with pytest.raises(ValueError, match="outside the camera view"):
        drp_attack(drive, model, config(patch=dataclasses.replace(SPEC, lateral=80.0)))
    with pytest.raises(ValueError, match="image size"):
        simulate_drive(dataclasses.replace(drive, images=drive.images[..., :32, :48]), model)

    def nan_center(output):
        return torch.full((output["maps"].shape[0],), float("nan"), dtype=torch.float64)

    broken = LaneModel(model.forward, nan_center, model.lanes)
    with pytest.raises(ValueError, match="not finite"):
        drp_attack(drive, broken, config())
    with pytest.raises(ValueError, match="perturbation"):
        simulate_drive(drive, model, torch.zeros(2, 1, 3, 3), config())
