import dataclasses

import pytest
import torch

from drivemetrics.attack.drp import (
    DriveClips,
    DRPConfig,
    LaneModel,
    drp_attack,
    evaluate_patch,
    render_drive,
    simulate_drive,
)
from drivemetrics.attack.patch import PatchSpec, project_perturbation
from drivemetrics.lane.e2e import e2e_ld
from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
from drivemetrics.synthetic.lane_detectors import TinyLineDetector

CAMERA = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
SPEC = PatchSpec(width=3.6, length=12.0, start=5.0, cell=0.2)


@pytest.fixture(scope="module")
def clips():
    c = make_lane_clips(batch=2, frames=6, seed=3, camera=CAMERA, max_wander=0.1)
    drive = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples, c.lane_width)
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
        c.center_road,
        speed=c.speed,
        detector=lambda v: model.lanes(model.forward(v)),
        image_from_road=c.image_from_road,
        recorded_poses=c.poses,
        frames=5,
        z_samples=c.z_samples,
        return_details=True,
    )
    assert torch.allclose(poses, details["poses"], atol=1e-9)
    ev = evaluate_patch(drive, model, torch.zeros(2, 1, *SPEC.shape, dtype=torch.float64), config())
    assert torch.allclose(ev.benign_e2e_ld, details["e2e_ld"], atol=1e-9)


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
            lane_center=drive.lane_center[i : i + 1],
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


def nan_model(model):
    """The detector with every output NaN (its lanes then read as missing)."""

    def forward(images):
        maps = model.forward(images)["maps"]
        return {"maps": maps * float("nan")}

    return LaneModel(forward, model.center, model.lanes)


def test_nan_model_output_is_named(clips, model):
    _, drive = clips
    broken = nan_model(model)
    delta = torch.zeros(2, 1, *SPEC.shape, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"model output is not finite \(NaN or inf\) at frame 0 of clip\(s\) \[0, 1\]"):
        simulate_drive(drive, broken, config=config())
    with pytest.raises(ValueError, match="model output is not finite"):
        evaluate_patch(drive, broken, delta, config())
    for scheme in ("trajectory", "backprop"):
        with pytest.raises(ValueError, match="model output is not finite"):
            drp_attack(drive, broken, config(scheme=scheme))


def test_nan_output_of_one_clip_is_named(clips, model):
    _, drive = clips

    def forward(images):
        maps = model.forward(images)["maps"].clone()
        maps[1:] = float("inf") * maps[1:].sign()  # clip 1: +-inf logits -> NaN softmax
        return {"maps": maps}

    with pytest.raises(ValueError, match=r"not finite.*clip\(s\) \[1\]"):
        simulate_drive(drive, LaneModel(forward, model.center, model.lanes), config=config())


def test_perturbation_must_darken_within_budget(clips, model):
    c, drive = clips
    ok = torch.full((2, 1, *SPEC.shape), 0.1, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"darkening within the budget.*\[0, linf = 0.3\]"):
        evaluate_patch(drive, model, -ok, config())  # brightening
    with pytest.raises(ValueError, match="darkening within the budget"):
        simulate_drive(drive, model, 4 * ok, config())  # 0.4 > linf 0.3
    with pytest.raises(ValueError, match="L2 norm"):
        simulate_drive(drive, model, ok, config(l2=1.0))  # sqrt(1080) * 0.1 = 3.3
    with pytest.raises(ValueError, match="top_k = 10 cells"):
        evaluate_patch(drive, model, ok, config(top_k=10))
    with pytest.raises(ValueError, match="darkening within the budget"):
        render_drive(drive, c.poses, -ok, SPEC)
    with pytest.raises(ValueError, match=r"linf = 0.05"):
        render_drive(drive, c.poses, ok, SPEC, linf=0.05)
    assert render_drive(drive, c.poses, ok, SPEC, linf=0.1).shape == drive.images.shape
    # drp_attack's `init` is projected onto the budget, not refused
    result = drp_attack(drive, model, config(iterations=0), init=4 * ok)
    assert float(result.perturbation.max()) <= 0.3


def test_patch_outside_the_view_raises_everywhere(clips, model):
    c, drive = clips
    far = config(patch=dataclasses.replace(SPEC, lateral=80.0))
    delta = torch.zeros(2, 1, *SPEC.shape, dtype=torch.float64)
    with pytest.raises(ValueError, match="outside the camera view"):
        evaluate_patch(drive, model, delta, far)
    with pytest.raises(ValueError, match="outside the camera view"):
        simulate_drive(drive, model, delta, far)
    with pytest.raises(ValueError, match="outside the camera view"):
        render_drive(drive, c.poses, delta, far.patch)


@pytest.mark.parametrize("iterations", [1, 2, 3])
@pytest.mark.parametrize(
    ("linf", "l2", "top_k"),
    [(0.03, None, None), (0.08, 0.5, 300)],
    ids=["linf", "l2-top-k"],  # the L2 scaling would hide a missing L-inf clamp: one binding budget per run
)
def test_every_step_respects_the_budget(clips, model, iterations, linf, l2, top_k):
    _, drive = clips
    one = dataclasses.replace(  # one clip of 4 frames, for speed
        drive,
        images=drive.images[:1, :4],
        speed=drive.speed[:1],
        recorded_poses=drive.recorded_poses[:1, :4],
        lane_center=drive.lane_center[:1, :4],
        lane_width=drive.lane_width[:1],
    )
    cfg = config(linf=linf, l2=l2, top_k=top_k, lr=0.1, iterations=iterations, eot_samples=1)
    result = drp_attack(one, model, cfg)
    delta = result.perturbation
    assert result.iterations == iterations
    assert float(delta.max()) > 0  # the attack moved
    assert float(delta.min()) >= 0  # darken only
    assert float(delta.max()) <= linf
    if l2 is not None:
        assert (delta.flatten(1).norm(dim=1) <= l2 * (1 + 1e-12)).all()
    if top_k is not None:
        assert ((delta.sum(1) > 0).flatten(1).sum(1) <= top_k).all()


@pytest.mark.gpu
def test_cuda_attack_matches_cpu(clips, model):
    _, drive = clips
    cuda = dataclasses.replace(
        drive,
        images=drive.images.cuda(),
        image_from_road=drive.image_from_road.cuda(),
        recorded_poses=drive.recorded_poses.cuda(),
        lane_center=drive.lane_center.cuda(),
        z_samples=drive.z_samples.cuda(),
        speed=torch.as_tensor(drive.speed).cuda(),
        lane_width=drive.lane_width.cuda(),
    )
    cfg = config(linf=0.2, l2=3.0, iterations=2)
    cpu, gpu = drp_attack(drive, model, cfg), drp_attack(cuda, model, cfg)
    assert gpu.perturbation.is_cuda
    assert torch.allclose(gpu.perturbation.cpu(), cpu.perturbation, atol=1e-6)
    assert torch.allclose(gpu.evaluation.attacked_poses.cpu(), cpu.evaluation.attacked_poses, atol=1e-6)
    assert torch.allclose(gpu.history.cpu(), cpu.history, atol=1e-6)


def test_float32_patch_clamped_at_the_budget_is_accepted(clips, model):
    c, drive = clips
    drive32 = dataclasses.replace(drive, images=drive.images.float())
    delta = project_perturbation(torch.ones(2, 1, *SPEC.shape), 0.3)  # float32(0.3) > 0.3 as a double
    assert float(delta.max()) > 0.3
    assert simulate_drive(drive32, model, delta, config()).shape == (2, 6, 3)
    assert render_drive(drive32, c.poses, delta, SPEC, linf=0.3).shape == drive32.images.shape
