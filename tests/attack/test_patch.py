import math

import pytest
import torch

from drivemetrics.attack.patch import (
    PatchSpec,
    check_image_size,
    composite_patch,
    image_from_texture,
    project_perturbation,
    road_pixel_mask,
)
from drivemetrics.geometry.camera import image_from_road_homography, intrinsic_matrix, road_to_image

H, W = 96, 160


def camera() -> torch.Tensor:
    k = intrinsic_matrix(120.0, 120.0, 79.5, 40.0).double()
    return image_from_road_homography(k, 1.5, 0.05)


def world_to_vehicle(point_xz, pose):
    """Written out independently of drivemetrics.geometry.pose."""
    x, z, h = pose
    dx, dz = point_xz[0] - x, point_xz[1] - z
    return [math.cos(h) * dx - math.sin(h) * dz, math.sin(h) * dx + math.cos(h) * dz]


@pytest.mark.parametrize(
    "pose", [(0.0, 0.0, 0.0), (0.6, 3.0, 0.03), (-0.8, 5.0, -0.04), (0.2, 9.0, 0.0)], ids=["origin", "r", "l", "far"]
)
def test_marker_lands_at_projected_pixel(pose):
    spec = PatchSpec(width=2.0, length=10.0, start=8.0, lateral=0.5, cell=0.5)
    rows, cols = spec.shape
    delta = torch.zeros(1, 1, rows, cols, dtype=torch.float64)
    r, c = 5, 1  # cell center: X = 0.5 - 1 + 0.75 = 0.25, Z = 8 + 10 - 2.75 = 15.25 in the anchor frame
    delta[0, 0, r, c] = 0.5
    anchor = torch.tensor([0.0, 0.0, 0.0], dtype=torch.float64)  # the patch is given in the world frame here
    pose_t = torch.tensor(pose, dtype=torch.float64)
    hom = camera()
    warp = image_from_texture(hom, pose_t[None], anchor[None], spec)
    image = torch.full((1, 1, H, W), 0.6, dtype=torch.float64)
    out, coverage = composite_patch(image, delta, warp, road_pixel_mask(hom, (H, W)))
    darkening = (image - out)[0, 0]
    assert darkening.max() > 0.05
    v, u = torch.meshgrid(torch.arange(H, dtype=torch.float64), torch.arange(W, dtype=torch.float64), indexing="ij")
    centroid = torch.stack([(darkening * u).sum(), (darkening * v).sum()]) / darkening.sum()
    vehicle = torch.tensor(world_to_vehicle((0.25, 15.25), pose), dtype=torch.float64)
    expected = road_to_image(hom, vehicle[None])[0]
    assert torch.allclose(centroid, expected, atol=0.6), (centroid, expected)
    # coverage: the whole rectangle, whose projected corners bound the touched pixels
    corners = torch.stack([torch.tensor(world_to_vehicle(p, pose)) for p in spec.corners().tolist()]).double()
    uv = road_to_image(hom, corners)
    touched = torch.nonzero(coverage[0, 0] > 0.5)
    ahead = torch.isfinite(uv).all(-1)
    assert touched[:, 0].min() >= uv[ahead, 1].min() - 1  # the far edge is always in front
    if not ahead.all():  # the near edge is behind the camera: the patch reaches the image bottom
        assert touched[:, 0].max() == H - 1
        return
    assert touched[:, 0].min() >= uv[:, 1].min() - 1
    assert touched[:, 0].max() <= uv[:, 1].max() + 1
    assert touched[:, 1].min() >= uv[:, 0].min() - 1
    assert touched[:, 1].max() <= uv[:, 0].max() + 1


def test_zero_perturbation_is_bit_identical():
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(3, 3, H, W, generator=gen)
    hom = camera()
    poses = torch.tensor([[0.0, 0.0, 0.0], [0.3, 2.0, 0.01], [-0.2, 6.0, -0.02]], dtype=torch.float64)
    warp = image_from_texture(hom, poses, torch.zeros(3, 3, dtype=torch.float64), PatchSpec())
    out, coverage = composite_patch(images, torch.zeros(3, 1, *PatchSpec().shape), warp, road_pixel_mask(hom, (H, W)))
    assert coverage.sum() > 100
    assert torch.equal(out, images)


def test_patch_never_touches_the_sky():
    # the patch starts behind the camera: points behind it must not be mirrored above the horizon
    spec = PatchSpec(start=-10.0, length=30.0, cell=0.2)
    hom = camera()
    warp = image_from_texture(hom, torch.zeros(1, 3, dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64), spec)
    mask = road_pixel_mask(hom, (H, W))
    out, coverage = composite_patch(torch.ones(1, 1, H, W), torch.full((1, 1, *spec.shape), 0.5), warp, mask)
    assert coverage[0, 0][~mask].abs().max() == 0
    assert (out[0, 0][~mask] == 1).all()
    assert coverage[0, 0][mask].max() > 0.99


def test_gradients_reach_the_texture():
    spec = PatchSpec(width=1.0, length=3.0, start=6.0, cell=0.5)
    images = torch.rand(2, 1, 48, 80, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 1.0
    k = intrinsic_matrix(60.0, 60.0, 39.5, 20.0).double()
    hom_small = image_from_road_homography(k, 1.5, 0.05)
    warp = image_from_texture(hom_small, torch.zeros(2, 3).double(), torch.zeros(2, 3).double(), spec)
    delta = torch.full((2, 1, *spec.shape), 0.1, dtype=torch.float64, requires_grad=True)

    weights = torch.rand(3, 48, 80, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    def fn(d):  # a few random projections of the output keep gradcheck fast
        out = composite_patch(images, d, warp, road_pixel_mask(hom_small, (48, 80)))[0]
        return torch.einsum("nchw,khw->nck", out, weights)

    assert torch.autograd.gradcheck(fn, (delta,))
    # at exactly zero the gradient is not blocked (the attack starts there)
    zero = torch.zeros_like(delta, requires_grad=True)
    (grad,) = torch.autograd.grad(fn(zero).sum(), zero)
    assert (grad < 0).sum() >= 4


def test_batched_equals_per_sample():
    gen = torch.Generator().manual_seed(2)
    images = torch.rand(4, 1, H, W, generator=gen)
    spec = PatchSpec(cell=0.1)
    delta = torch.rand(4, 1, *spec.shape, generator=gen) * 0.3
    poses = torch.randn(4, 3, generator=gen, dtype=torch.float64) * torch.tensor([0.5, 3.0, 0.02]).double()
    anchors = torch.zeros(4, 3, dtype=torch.float64)
    shift = torch.randn(4, 2, generator=gen, dtype=torch.float64) * 0.3
    hom = camera()
    mask = road_pixel_mask(hom, (H, W))
    batched, _ = composite_patch(images, delta, image_from_texture(hom, poses, anchors, spec, shift), mask)
    for i in range(4):
        warp = image_from_texture(hom, poses[i : i + 1], anchors[i : i + 1], spec, shift[i : i + 1])
        single, _ = composite_patch(images[i : i + 1], delta[i : i + 1], warp, mask)
        assert torch.allclose(batched[i : i + 1], single, atol=1e-6)


@pytest.mark.gpu
def test_cuda_composite_matches_cpu():
    gen = torch.Generator().manual_seed(4)
    images = torch.rand(4, 3, H, W, generator=gen, dtype=torch.float64)
    spec = PatchSpec(cell=0.1)
    delta = torch.rand(4, 1, *spec.shape, generator=gen, dtype=torch.float64) * 0.3
    poses = torch.randn(4, 3, generator=gen, dtype=torch.float64) * torch.tensor([0.5, 3.0, 0.02]).double()
    anchors = torch.zeros(4, 3, dtype=torch.float64)
    hom = camera()
    cpu = composite_patch(images, delta, image_from_texture(hom, poses, anchors, spec), road_pixel_mask(hom, (H, W)))
    hom_g = hom.cuda()
    warp_g = image_from_texture(hom_g, poses.cuda(), anchors.cuda(), spec)
    gpu = composite_patch(images.cuda(), delta.cuda(), warp_g, road_pixel_mask(hom_g, (H, W)))
    for a, b in zip(cpu, gpu, strict=True):
        assert b.is_cuda
        assert torch.allclose(b.cpu(), a, atol=1e-9)


@pytest.mark.parametrize(("l2", "top_k"), [(None, None), (2.0, None), (None, 50), (1.0, 20)])
def test_projection_satisfies_every_constraint(l2, top_k):
    gen = torch.Generator().manual_seed(3)
    delta = torch.randn(3, 2, 20, 12, generator=gen)
    out = project_perturbation(delta, 0.25, l2, top_k)
    assert out.min() >= 0
    assert out.max() <= 0.25
    if l2 is not None:
        assert (out.flatten(1).norm(dim=1) <= l2 * (1 + 1e-6)).all()
    if top_k is not None:
        assert ((out.sum(1) > 0).flatten(1).sum(1) <= top_k).all()
    assert torch.equal(project_perturbation(out, 0.25, l2, top_k), out)  # a projection: idempotent


def test_bad_inputs():
    with pytest.raises(ValueError, match="linf"):
        project_perturbation(torch.zeros(1, 1, 2, 2), -0.1)
    with pytest.raises(ValueError, match="l2"):
        project_perturbation(torch.zeros(1, 1, 2, 2), 0.1, l2=-1.0)
    with pytest.raises(ValueError, match="width"):
        PatchSpec(width=0.0)
    with pytest.raises(ValueError, match="image size 48 x 64"):
        check_image_size(camera(), (48, 64))  # the camera was made for 96 x 160
    check_image_size(camera(), (H, W))
