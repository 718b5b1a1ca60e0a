"""DRP-style closed-loop attack: optimise a dirt patch on the road so a lane-centering car leaves its lane.

Sato et al. (USENIX Security 2021, "Dirty Road Can Attack") and Sato & Chen (CVPR 2022). Inputs are recorded
clips (:class:`DriveClips`: frames, recorded poses, speed, camera homography, optionally the ground-truth lane
center), a differentiable lane detector (:class:`LaneModel`: ``images -> output``, the family's expected road center
and the ego lanes used for steering) and a :class:`DRPConfig`.

Closed loop (:func:`simulate_drive`): at each frame the view from the *simulated* pose is synthesised from the
recorded frame (:func:`drivemetrics.geometry.camera.synthesize_shifted_view`, as E2E-LD does), the patch is
composited at that pose (:mod:`drivemetrics.attack.patch`), the detector's ego lanes become a lane-center path,
the controller (:class:`drivemetrics.lane.control.LinearMPC` by default) turns it into a steering command and the
kinematic bicycle advances one frame; later frames see the deviation that earlier frames caused. Clips (and EOT
samples) run as one batch; the only Python loop is over time steps.

Attack (:func:`drp_attack`), one iteration:

1. simulate the attacked drive without gradient (this also gives the deviation used for early stop and for
   keeping the best patch);
2. ``scheme="trajectory"`` (the papers'): render every frame at the simulated poses, for ``eot_samples`` seeded
   draws of pose noise (lateral, yaw), patch position and brightness -- clips x EOT x frames as one batch --, run
   the detector, and minimise ``road_center_attack_loss`` of the family's expected road center (pushed right or
   left), i.e. its sum over frames; ``scheme="backprop"``: roll the differentiable loop out with gradient (EOT
   samples as extra batch rows) and maximise the signed lateral offset of the car summed over frames;
3. one Adam (or sign-gradient) step on the darkening, then projection onto the budget
   (:func:`drivemetrics.attack.patch.project_perturbation`).

The patch is fixed in the world (its texture does not depend on the pose) and one patch is optimised per clip.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_finite, check_shape, check_tensor
from drivemetrics.attack.patch import (
    PatchSpec,
    check_budget,
    check_image_size,
    composite_patch,
    image_from_texture,
    project_perturbation,
    road_pixel_mask,
)
from drivemetrics.geometry.camera import synthesize_shifted_view, view_road_mask
from drivemetrics.geometry.pose import compose_pose, relative_pose
from drivemetrics.lane.control import LateralController, LinearMPC, VehiclePath, sample_profile
from drivemetrics.lane.geometry import DEFAULT_LANE_WIDTH, center_from_image_lanes
from drivemetrics.lane.road_center import road_center_attack_loss
from drivemetrics.vehicle.bicycle import KinematicBicycle

__all__ = [
    "DRPConfig",
    "DRPEvaluation",
    "DRPResult",
    "DriveClips",
    "EOTNoise",
    "LaneModel",
    "drp_attack",
    "evaluate_patch",
    "lane_offsets",
    "render_drive",
    "simulate_drive",
]


@dataclass(frozen=True)
class LaneModel:
    """A lane detector under attack.

    Attributes:
        forward: differentiable ``images (N, C, H, W) -> output`` (any structure).
        center: ``output -> (N,)`` expected road center in [0, 1] (e.g. a ``drivemetrics.lane.road_center``
            ``expected_center_*`` function applied to the right fields of the output).
        lanes: ``output -> (N, 2, P, 2)`` ego-left / ego-right lane points ``(u, v)`` in pixels (NaN = absent),
            what the car steers by.
        name: label for tables.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import LaneModel
        >>> isinstance(model, LaneModel), tuple(model.center(model.forward(clips.images[:, 0])).shape)
        (True, (1,))
    """

    forward: Callable[[Tensor], Any]
    center: Callable[[Any], Tensor]
    lanes: Callable[[Any], Tensor]
    name: str = "model"


@dataclass(frozen=True)
class EOTNoise:
    """Standard deviations of the Expectation-over-Transformation noise (seeded normal draws).

    Attributes:
        lateral: camera pose lateral offset, metres.
        yaw: camera pose yaw, radians.
        patch_lateral, patch_longitudinal: patch position in the world, metres.
        brightness: relative frame brightness (factor ``1 + N(0, brightness)``).

    Examples:
        >>> from drivemetrics.attack import DRPConfig, EOTNoise
        >>> DRPConfig(eot=EOTNoise(lateral=0.0, brightness=0.0)).eot.yaw
        0.005
    """

    lateral: float = 0.1
    yaw: float = 0.005
    patch_lateral: float = 0.1
    patch_longitudinal: float = 0.5
    brightness: float = 0.05


@dataclass(frozen=True)
class DRPConfig:
    """Attack settings (defaults in parentheses).

    Attributes:
        patch: patch geometry (3.6 m x 24 m, 7 m ahead, 0.05 m cells).
        linf: L-infinity darkening budget in image units (0.3; 0 = no attack, frames bit-identical).
        l2: optional L2 budget of each patch's darkening (image units x cells).
        top_k: optional number of cells allowed to be dirty.
        channels: darkening channels (1: grey dirt, the same on every image channel).
        direction: push the car ``"right"`` or ``"left"``.
        iterations: maximum attack iterations (200).
        lr: step size (Adam learning rate, or the sign-gradient step) in image units (0.01).
        optimizer: ``"adam"`` or ``"sign"``.
        eot_samples: EOT samples per clip (8).
        eot: EOT noise levels.
        scheme: ``"trajectory"`` (the papers' alternation) or ``"backprop"`` (through the differentiable loop).
        target_deviation: stop when every clip's attacked drive deviates this far (metres) towards ``direction``
            from its benign drive (0.5, as DRP); None: run all iterations.
        lane_width: metres, for steering when one line is missing (:func:`lane_center`) and for ``success`` when
            the clips carry no lane widths.
        car_width: metres; success = a side of the car crosses a line of the ego lane.
        seed: seed of the EOT noise.

    Examples:
        >>> from drivemetrics.attack import DRPConfig, PatchSpec
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, cell=0.2), linf=0.2, iterations=10)
        >>> config.patch.shape, config.linf, config.direction
        ((60, 18), 0.2, 'right')
    """

    patch: PatchSpec = field(default_factory=PatchSpec)
    linf: float = 0.3
    l2: float | None = None
    top_k: int | None = None
    channels: int = 1
    direction: Literal["right", "left"] = "right"
    iterations: int = 200
    lr: float = 0.01
    optimizer: Literal["adam", "sign"] = "adam"
    eot_samples: int = 8
    eot: EOTNoise = field(default_factory=EOTNoise)
    scheme: Literal["trajectory", "backprop"] = "trajectory"
    target_deviation: float | None = 0.5
    lane_width: float = DEFAULT_LANE_WIDTH
    car_width: float = 1.8
    seed: int = 0

    def __post_init__(self) -> None:
        check_budget(self.linf, self.l2, self.top_k)
        if self.direction not in ("right", "left"):
            raise ValueError(f"`direction` must be 'right' or 'left', got {self.direction!r}")
        if self.optimizer not in ("adam", "sign"):
            raise ValueError(f"`optimizer` must be 'adam' or 'sign', got {self.optimizer!r}")
        if self.scheme not in ("trajectory", "backprop"):
            raise ValueError(f"`scheme` must be 'trajectory' or 'backprop', got {self.scheme!r}")
        for key in ("iterations", "eot_samples", "channels"):
            value = getattr(self, key)
            if int(value) != value or value < (0 if key == "iterations" else 1):
                raise ValueError(f"`{key}` must be a {'non-negative' if key == 'iterations' else 'positive'} integer")
        if not self.lr > 0:
            raise ValueError(f"`lr` must be > 0, got {self.lr}")
        if not (self.lane_width > 0 and self.car_width > 0):
            raise ValueError(
                f"`lane_width` and `car_width` must be > 0 metres, got {self.lane_width}, {self.car_width}"
            )

    @property
    def sign(self) -> float:
        """+1 to push right (+X), -1 to push left."""
        return 1.0 if self.direction == "right" else -1.0


@dataclass
class DriveClips:
    """Recorded clips to attack.

    Attributes:
        images: ``(B, T, C, H, W)`` float frames.
        speed: float or ``(B,)`` m/s (constant per clip, > 0).
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)`` camera homography (road frame below the camera).
        recorded_poses: ``(B, T, 3)`` world poses ``(x, z, heading)`` of the recording; default straight along +Z.
        lane_center: optional ``(B, T, M)`` ground-truth ego-lane center X at ``z_samples`` in each recorded
            frame's road frame (metres); needed for offsets from the lane center, success and E2E-LD.
        z_samples: ``(M,)`` metres, distances of the controller's path samples and of ``lane_center``
            (default 0..100 m every metre).
        lane_width: optional ``(B,)`` true lane widths, metres (success); default the config's.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> tuple(clips.images.shape)  # (B, T, C, H, W)
        (1, 4, 1, 64, 128)
    """

    images: Tensor
    speed: Tensor | float
    image_from_road: Tensor
    recorded_poses: Tensor | None = None
    lane_center: Tensor | None = None
    z_samples: Tensor | None = None
    lane_width: Tensor | None = None


class _Prepared(NamedTuple):
    images: Tensor  # (B, T, C, H, W)
    speed: Tensor  # (B,) float64
    hom: Tensor  # (B, 3, 3) float64
    poses: Tensor  # (B, T, 3) float64
    lane_center: Tensor | None
    z_samples: Tensor
    road_mask: Tensor  # (B, H, W) pixels the patch may touch
    view_mask: Tensor  # (B, 1, H, W) pixels re-projected by the view synthesis (pose-independent)


def _prepare(clips: DriveClips) -> _Prepared:
    images = clips.images
    check_tensor(images, "images")
    check_shape(images, "images", ("B", "T", "C", "H", "W"))
    if not images.is_floating_point():
        raise ValueError(f"`images` must be a floating tensor, got {images.dtype}")
    batch, length, _, height, width = images.shape
    if length < 2:
        raise ValueError(f"clips need at least 2 frames (one closed-loop step), got T = {length}")
    device, f64 = images.device, torch.float64
    speed = torch.as_tensor(clips.speed, dtype=f64, device=device).reshape(-1).expand(batch)
    check_finite(speed, "speed")
    if bool((speed <= 0).any()):
        raise ValueError("`speed` must be > 0 m/s for every clip")
    hom = clips.image_from_road
    check_tensor(hom, "image_from_road")
    if hom.shape not in ((3, 3), (batch, 3, 3)):
        raise ValueError(f"`image_from_road` must have shape 3 x 3 or {batch} x 3 x 3, got {tuple(hom.shape)}")
    check_finite(hom, "image_from_road")
    hom = hom.to(device=device, dtype=f64).expand(batch, 3, 3)
    check_image_size(hom, (height, width))
    if clips.recorded_poses is None:
        z = speed[:, None] * torch.arange(length, dtype=f64, device=device) / 20.0
        poses = torch.stack([torch.zeros_like(z), z, torch.zeros_like(z)], -1)
    else:
        poses = clips.recorded_poses
        check_shape(poses, "recorded_poses", (batch, length, 3))
        check_finite(poses, "recorded_poses")
        poses = poses.to(device=device, dtype=f64)
    z_samples = clips.z_samples
    if z_samples is None:
        z_samples = torch.arange(0.0, 101.0, 1.0, dtype=f64, device=device)
    check_shape(z_samples, "z_samples", ("M",))
    z_samples = z_samples.to(device=device, dtype=f64)
    center = clips.lane_center
    if center is not None:
        check_shape(center, "lane_center", (batch, length, z_samples.shape[0]))
        check_finite(center, "lane_center")
        center = center.to(device=device, dtype=f64)
    size = (height, width)
    road_mask, view_mask = road_pixel_mask(hom, size), view_road_mask(hom, size)
    return _Prepared(images, speed, hom, poses, center, z_samples, road_mask, view_mask)


def _render(
    prep: _Prepared,
    clip: Tensor,
    frame: Tensor,
    poses: Tensor,
    perturbation: Tensor | None,
    spec: PatchSpec,
    patch_shift: Tensor | None = None,
    brightness: Tensor | None = None,
) -> Tensor:
    """Frames ``(N, C, H, W)`` seen from world ``poses`` ``(N, 3)``: recorded frame ``frame[i]`` of clip ``clip[i]``
    re-synthesised at the pose, with clip ``clip[i]``'s patch (``perturbation`` ``(B, C', rows, cols)``) composited.
    """
    rec = prep.poses[clip, frame]
    hom = prep.hom[clip]
    lateral, longitudinal, yaw = relative_pose(poses, rec).unbind(-1)
    view = synthesize_shifted_view(
        prep.images[clip, frame], hom, lateral, yaw, longitudinal_offset=longitudinal, road_mask=prep.view_mask[clip]
    )
    if perturbation is not None:
        warp = image_from_texture(hom, poses, prep.poses[clip, 0], spec, patch_shift)
        view, _ = composite_patch(view, perturbation[clip], warp, prep.road_mask[clip])
    if brightness is not None:
        view = view * brightness.to(view.dtype)[:, None, None, None]
    return view


def _shift_pose(poses: Tensor, lateral: Tensor, yaw: Tensor) -> Tensor:
    """Poses ``(..., 3)`` moved ``lateral`` metres along their own right axis and turned by ``yaw`` radians."""
    return compose_pose(poses, torch.stack([lateral, torch.zeros_like(lateral), yaw], -1))


def _tensors(output: Any) -> list[Tensor]:
    """The tensors in a model output (a tensor, or mappings / sequences of them, nested)."""
    if arrays.is_tensor(output):
        return [output]
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in _tensors(item)]
    return []


def _nonfinite_rows(output: Any, rows: int) -> list[int] | None:
    """Rows of a model output holding NaN / inf (all rows when a tensor is not batched by row); None if finite."""
    bad = torch.zeros(rows, dtype=torch.bool)
    for t in _tensors(output):
        if not t.is_floating_point() and not t.is_complex():
            continue
        finite = torch.isfinite(t.detach())
        if t.ndim > 0 and t.shape[0] == rows:
            bad |= ~finite.reshape(rows, -1).all(1).cpu()
        elif not bool(finite.all()):
            bad[:] = True
    return torch.nonzero(bad).flatten().tolist() if bool(bad.any()) else None


def _lane_center(prep: _Prepared, clip: Tensor, output: Any, lanes: Tensor, config: DRPConfig, t: int) -> Tensor:
    """Lane-center profiles ``(N, M)`` from the ego lanes ``(N, 2, P, 2)`` the model read at frame ``t`` of clips
    ``clip`` ``(N,)``; a failure caused by a non-finite model output (its lanes read as absent) says so.
    """
    hom = prep.hom[clip]
    try:
        return center_from_image_lanes(lanes.to(torch.float64), hom, prep.z_samples, lane_width=config.lane_width)
    except ValueError as error:  # only on failure: no host sync added on the normal path
        bad = _nonfinite_rows(output, lanes.shape[0])
        if bad is None:
            raise
        clips = sorted(set(clip.cpu()[bad].tolist()))
        raise ValueError(
            f"the model output is not finite (NaN or inf) at frame {t} of clip(s) {clips[:10]}: `model.forward` "
            f"produced NaN / inf values, so its ego lane lines read as missing ({error})"
        ) from error


def _rollout(
    prep: _Prepared,
    model: LaneModel,
    perturbation: Tensor | None,
    config: DRPConfig,
    controller: LateralController,
    samples: int = 1,
    noise: dict[str, Tensor] | None = None,
) -> Tensor:
    """Closed-loop poses ``(B * samples, T, 3)`` (rows clip-major); ``noise`` tensors are ``(B * samples, T)``."""
    batch, length = prep.images.shape[:2]
    clip = torch.arange(batch, device=prep.images.device).repeat_interleave(samples)
    vehicle = KinematicBicycle(controller.params)
    speed = prep.speed[clip]
    control = controller.bind(speed)
    start = prep.poses[clip, 0]
    state = vehicle.initial_state(clip.shape[0], dtype=torch.float64, device=prep.images.device)
    state = state._replace(x=start[:, 0], z=start[:, 1], heading=start[:, 2])
    poses = [start]
    for t in range(length - 1):
        frame = torch.full_like(clip, t)
        pose = poses[-1]
        shift = brightness = None
        if noise is not None:
            pose = _shift_pose(pose, noise["lateral"][:, t], noise["yaw"][:, t])
            shift, brightness = noise["shift"], noise["brightness"]
        view = _render(prep, clip, frame, pose, perturbation, config.patch, shift, brightness)
        output = model.forward(view)
        lanes = model.lanes(output)
        if not arrays.is_tensor(lanes) or lanes.ndim != 4 or lanes.shape[:2] != (clip.shape[0], 2):
            got = tuple(lanes.shape) if arrays.is_tensor(lanes) else type(lanes).__name__
            raise ValueError(f"`model.lanes` must return {clip.shape[0]} x 2 x P x 2 lane points (pixels), got {got}")
        center = _lane_center(prep, clip, output, lanes, config, t)
        command = control(VehiclePath(prep.z_samples, center), state.steering_wheel)
        if t == 0:  # start with the wheel at the first command (as lane.e2e and ld-metric)
            state = state._replace(steering_wheel=command, pending=command[:, None].expand_as(state.pending).clone())
        state = vehicle.step(state, command, speed, validate=False)
        poses.append(torch.stack([state.x, state.z, state.heading], -1))
    return torch.stack(poses, 1)


def simulate_drive(
    clips: DriveClips,
    model: LaneModel,
    perturbation: Tensor | None = None,
    config: DRPConfig | None = None,
    controller: LateralController | None = None,
) -> Tensor:
    """Closed-loop world poses ``(B, T, 3)`` of the car driven by ``model`` through the (patched) clips.

    Pose ``t`` is where the car is when recorded frame ``t`` is taken (pose 0 = the recorded start); frames
    ``0 .. T-2`` are seen by the detector (T - 1 steps, like ld-metric's 20 steps on 21 frames). No gradient
    is disabled here: under ``torch.no_grad()`` it is a plain simulation, otherwise differentiable w.r.t.
    ``perturbation`` (and the model's parameters).

    Raises:
        ValueError: bad shapes, a perturbation outside ``[0, config.linf]`` (or the L2 / top-k budget), a patch no
            recorded frame sees, or non-finite model outputs.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import simulate_drive
        >>> tuple(simulate_drive(clips, model, config=config).shape)  # (B, T, 3) world poses
        (1, 4, 3)
    """
    config = DRPConfig() if config is None else config
    controller = LinearMPC() if controller is None else controller
    prep = _prepare(clips)
    if perturbation is not None:
        _check_perturbation(perturbation, prep, config)
        _check_visible(prep, prep.poses, config.patch)
    return _rollout(prep, model, perturbation, config, controller)


def lane_offsets(clips: DriveClips, poses: Tensor) -> Tensor:
    """Signed lateral offsets ``(B, T)`` of ``poses`` (metres, right positive) from the ground-truth lane center
    (``clips.lane_center``), or from the recorded path when the clips carry no lane center.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import lane_offsets, simulate_drive
        >>> tuple(lane_offsets(clips, simulate_drive(clips, model, config=config)).shape)
        (1, 4)
    """
    prep = _prepare(clips)
    return _offsets(prep, poses)


def _offsets(prep: _Prepared, poses: Tensor) -> Tensor:
    rel = relative_pose(poses, prep.poses)
    if prep.lane_center is None:
        return rel[..., 0]
    batch, length, m = prep.lane_center.shape
    center, _ = sample_profile(prep.z_samples, prep.lane_center.reshape(-1, m), rel[..., 1].reshape(-1, 1).contiguous())
    return rel[..., 0] - center.reshape(batch, length)


def _check_perturbation(perturbation: Tensor, prep: _Prepared, config: DRPConfig, budget: bool = True) -> None:
    """Shape ``(B, C', rows, cols)``, finiteness and (``budget``) the config's darkening budget."""
    batch = prep.images.shape[0]
    rows, cols = config.patch.shape
    check_tensor(perturbation, "perturbation")
    if perturbation.ndim != 4 or perturbation.shape[0] != batch or perturbation.shape[-2:] != (rows, cols):
        raise ValueError(
            f"`perturbation` must have shape {batch} x C x {rows} x {cols} (one patch per clip, config.patch.shape), "
            f"got {tuple(perturbation.shape)}"
        )
    check_finite(perturbation, "perturbation")
    if budget:
        _check_within_budget(perturbation, config.linf, config.l2, config.top_k)


def _check_within_budget(perturbation: Tensor, linf: float, l2: float | None = None, top_k: int | None = None) -> None:
    """``ValueError`` unless ``perturbation`` ``(B, C', rows, cols)`` darkens only, within ``0 <= delta <= linf``, the
    L2 budget (per patch) and the top-k cell budget (cells whose darkening summed over channels is > 0).
    """
    hint = "project it with drivemetrics.attack.project_perturbation"
    if perturbation.numel() == 0:
        return
    detached = perturbation.detach()
    if bool(((detached < 0) | (detached > linf)).any()):  # compared in the tensor's dtype (float32 clamps at linf)
        low, high = float(detached.min()), float(detached.max())
        raise ValueError(
            f"`perturbation` must be a darkening within the budget, values in [0, linf = {linf}] (image units), "
            f"got values in [{low:.6g}, {high:.6g}]: {hint}"
        )
    if l2 is not None:
        norm = float(perturbation.detach().to(torch.float64).flatten(1).norm(dim=1).amax())
        if norm > l2 * (1 + 1e-6) + 1e-12:
            raise ValueError(f"`perturbation` must have an L2 norm <= l2 = {l2} per patch, got {norm:.6g}: {hint}")
    if top_k is not None:
        cells = int((perturbation.sum(1) > 0).flatten(1).sum(1).amax())
        if cells > top_k:
            raise ValueError(f"`perturbation` may darken at most top_k = {top_k} cells per patch, got {cells}: {hint}")


def _check_visible(prep: _Prepared, poses: Tensor, spec: PatchSpec) -> None:
    """``ValueError`` if a clip's patch covers no pixel in any frame of the drive ``poses`` ``(B, T, 3)``."""
    batch, length, _, height, width = prep.images.shape
    clip = torch.arange(batch, device=poses.device).repeat_interleave(length)
    flat = poses.reshape(-1, 3)
    warp = image_from_texture(prep.hom[clip], flat, prep.poses[clip, 0], spec)
    ones = torch.ones(1, 1, *spec.shape, dtype=prep.images.dtype, device=prep.images.device)
    blank = torch.zeros(clip.shape[0], 1, height, width, dtype=prep.images.dtype, device=prep.images.device)
    _, coverage = composite_patch(blank, ones, warp, prep.road_mask[clip])
    seen = coverage.reshape(batch, -1).amax(-1) > 0.01
    if not bool(seen.all()):
        missing = torch.nonzero(~seen).flatten().tolist()
        raise ValueError(
            f"the patch is outside the camera view in every frame of clip(s) {missing} "
            f"(patch {spec.width} x {spec.length} m starting {spec.start} m ahead, {spec.lateral} m right): move it"
        )


class DRPEvaluation(NamedTuple):
    """Benign vs attacked closed-loop drives (:func:`evaluate_patch`); per clip ``(B,)`` unless noted.

    Attributes:
        benign_poses, attacked_poses: ``(B, T, 3)`` world poses.
        reference_poses: ``(B, T, 3)`` drive steered by the ground-truth lane center (None without it).
        benign_offsets, attacked_offsets: ``(B, T)`` signed offsets from the lane center (or recorded path).
        benign_max_deviation, attacked_max_deviation: max |offset|, metres.
        benign_e2e_ld, attacked_e2e_ld: max lateral distance from the reference drive, metres (None without it).
        benign_success, success: a side of the car crossed an ego-lane line (bool).

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import DRPEvaluation, evaluate_patch
        >>> no_patch = torch.zeros(1, 1, *config.patch.shape, dtype=torch.float64)
        >>> evaluation = evaluate_patch(clips, model, no_patch, config)
        >>> isinstance(evaluation, DRPEvaluation), tuple(evaluation.attacked_offsets.shape)
        (True, (1, 4))
    """

    benign_poses: Tensor
    attacked_poses: Tensor
    reference_poses: Tensor | None
    benign_offsets: Tensor
    attacked_offsets: Tensor
    benign_max_deviation: Tensor
    attacked_max_deviation: Tensor
    benign_e2e_ld: Tensor | None
    attacked_e2e_ld: Tensor | None
    benign_success: Tensor
    success: Tensor


def evaluate_patch(
    clips: DriveClips,
    model: LaneModel,
    perturbation: Tensor,
    config: DRPConfig | None = None,
    controller: LateralController | None = None,
) -> DRPEvaluation:
    """Drive the clips without and with the patch (no gradient) and measure deviation, E2E-LD and success.

    Raises:
        ValueError: as :func:`simulate_drive` (the patch must be seen in some frame of the benign drive).

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import evaluate_patch
        >>> no_patch = torch.zeros(1, 1, *config.patch.shape, dtype=torch.float64)
        >>> evaluation = evaluate_patch(clips, model, no_patch, config)
        >>> torch.equal(evaluation.benign_poses, evaluation.attacked_poses), evaluation.success.tolist()
        (True, [False])
    """
    config = DRPConfig() if config is None else config
    controller = LinearMPC() if controller is None else controller
    prep = _prepare(clips)
    _check_perturbation(perturbation, prep, config)
    with torch.inference_mode():
        benign = _rollout(prep, model, None, config, controller)
    benign = benign.clone()  # a normal tensor, not an inference tensor
    _check_visible(prep, benign, config.patch)
    with torch.inference_mode():
        attacked = _rollout(prep, model, perturbation, config, controller)
        reference = _reference_drive(prep, controller) if prep.lane_center is not None else None
    attacked = attacked.clone()
    reference = None if reference is None else reference.clone()
    off_b, off_a = _offsets(prep, benign), _offsets(prep, attacked)
    width = clips.lane_width
    lane_width = config.lane_width if width is None else torch.as_tensor(width).to(off_b)[:, None]
    half_gap = lane_width / 2 - config.car_width / 2

    def e2e(poses: Tensor) -> Tensor | None:
        if reference is None:
            return None
        return relative_pose(poses, reference)[:, 1:, 0].abs().amax(1)

    return DRPEvaluation(
        benign,
        attacked,
        reference,
        off_b,
        off_a,
        off_b.abs().amax(1),
        off_a.abs().amax(1),
        e2e(benign),
        e2e(attacked),
        (off_b.abs() > half_gap).any(1),
        (off_a.abs() > half_gap).any(1),
    )


def _reference_drive(prep: _Prepared, controller: LateralController) -> Tensor:
    """Poses ``(B, T, 3)`` of the loop steered by the ground-truth lane center (E2E-LD's reference)."""
    from drivemetrics.lane.control import PosedPath

    batch, length = prep.images.shape[:2]
    vehicle = KinematicBicycle(controller.params)
    control = controller.bind(prep.speed)
    start = prep.poses[:, 0]
    state = vehicle.initial_state(batch, dtype=torch.float64, device=prep.images.device)
    state = state._replace(x=start[:, 0], z=start[:, 1], heading=start[:, 2])
    poses = [start]
    for t in range(length - 1):
        lateral, longitudinal, yaw = relative_pose(poses[-1], prep.poses[:, t]).unbind(-1)
        path = PosedPath(prep.z_samples, prep.lane_center[:, t], lateral, longitudinal, yaw)
        command = control(path, state.steering_wheel)
        if t == 0:
            state = state._replace(steering_wheel=command, pending=command[:, None].expand_as(state.pending).clone())
        state = vehicle.step(state, command, prep.speed, validate=False)
        poses.append(torch.stack([state.x, state.z, state.heading], -1))
    return torch.stack(poses, 1)


class DRPResult(NamedTuple):
    """Output of :func:`drp_attack`.

    Attributes:
        perturbation: ``(B, C', rows, cols)`` best darkening found per clip (within the budget).
        evaluation: :class:`DRPEvaluation` of that patch.
        history: ``(I, B)`` signed deviation (metres, towards ``direction``) of the attacked drive from the benign
            drive at each iteration, before its update.
        iterations: iterations run.
        seconds: wall time of the iterations.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import DRPResult, drp_attack
        >>> result = drp_attack(clips, model, config)
        >>> isinstance(result, DRPResult), tuple(result.history.shape)  # (iterations, B)
        (True, (2, 1))
    """

    perturbation: Tensor
    evaluation: DRPEvaluation
    history: Tensor
    iterations: int
    seconds: float

    @property
    def iterations_per_s(self) -> float:
        """Attack iterations per second."""
        return self.iterations / self.seconds if self.seconds > 0 else math.inf


class _Adam:
    """Adam (beta 0.9 / 0.999, eps 1e-8) on one tensor (``torch.optim`` imports ``torch._dynamo``, ~8 s on a CPU)."""

    def __init__(self, like: Tensor, lr: float) -> None:
        self.lr, self.t = lr, 0
        self.m, self.v = torch.zeros_like(like), torch.zeros_like(like)

    def step(self, param: Tensor, grad: Tensor) -> None:
        self.t += 1
        self.m.mul_(0.9).add_(grad, alpha=0.1)
        self.v.mul_(0.999).addcmul_(grad, grad, value=0.001)
        m_hat = self.m / (1 - 0.9**self.t)
        v_hat = self.v / (1 - 0.999**self.t)
        param.sub_(self.lr * m_hat / (v_hat.sqrt() + 1e-8))


def _draw_noise(config: DRPConfig, rows: int, length: int, device: torch.device, gen: torch.Generator) -> dict:
    e = config.eot

    def normal(std: float, *shape: int) -> Tensor:
        return (std * torch.randn(*shape, generator=gen, dtype=torch.float64)).to(device)

    shift = torch.stack([normal(e.patch_lateral, rows), normal(e.patch_longitudinal, rows)], -1)
    return {
        "lateral": normal(e.lateral, rows, length),
        "yaw": normal(e.yaw, rows, length),
        "shift": shift,
        "brightness": 1 + normal(e.brightness, rows),
    }


def _trajectory_loss(
    prep: _Prepared, model: LaneModel, delta: Tensor, poses: Tensor, config: DRPConfig, noise: dict
) -> Tensor:
    """Attack loss on all frames at the simulated poses, clips x EOT x frames in one batch."""
    batch, length = poses.shape[:2]
    e = config.eot_samples
    clip = torch.arange(batch, device=poses.device).repeat_interleave(e * length)
    frame = torch.arange(length, device=poses.device).repeat(batch * e)
    pose = poses[:, None].expand(batch, e, length, 3).reshape(-1, 3)
    pose = _shift_pose(pose, noise["lateral"].reshape(-1), noise["yaw"].reshape(-1))
    shift = noise["shift"].repeat_interleave(length, 0)
    brightness = noise["brightness"].repeat_interleave(length, 0)
    view = _render(prep, clip, frame, pose, delta, config.patch, shift, brightness)
    center = model.center(model.forward(view))
    # no read-back here: drp_attack checks the loss once per step and names the model as the cause
    return road_center_attack_loss(center, config.direction, validate_args=False)


def drp_attack(
    clips: DriveClips,
    model: LaneModel,
    config: DRPConfig | None = None,
    controller: LateralController | None = None,
    init: Tensor | None = None,
) -> DRPResult:
    """Optimise one darkening patch per clip against ``model`` in closed loop (module docstring).

    Args:
        clips: the recorded clips.
        model: the detector and its family's center / lanes functions.
        config: attack settings.
        controller: lateral controller of the simulated car (default :class:`LinearMPC`, RAV4 2017).
        init: optional starting perturbation ``(B, C', rows, cols)`` (projected onto the budget); default zeros.

    Raises:
        ValueError: bad shapes, a patch that no frame sees, a negative budget, or non-finite model outputs.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import drp_attack
        >>> result = drp_attack(clips, model, config)
        >>> tuple(result.perturbation.shape), result.iterations, bool(result.perturbation.max() <= config.linf)
        ((1, 1, 60, 18), 2, True)
    """
    config = DRPConfig() if config is None else config
    controller = LinearMPC() if controller is None else controller
    prep = _prepare(clips)
    batch, length, channels = prep.images.shape[:3]
    if config.channels not in (1, channels):
        raise ValueError(f"`config.channels` must be 1 or the images' {channels} channels, got {config.channels}")
    rows, cols = config.patch.shape
    dtype, device = prep.images.dtype, prep.images.device
    if init is None:
        delta = torch.zeros(batch, config.channels, rows, cols, dtype=dtype, device=device)
    else:
        _check_perturbation(init, prep, config, budget=False)  # projected below
        delta = init.detach().to(dtype=dtype, device=device).clone()
    delta = project_perturbation(delta, config.linf, config.l2, config.top_k).requires_grad_(True)
    with torch.inference_mode():
        benign = _rollout(prep, model, None, config, controller)
    benign = benign.clone()
    _check_visible(prep, benign, config.patch)
    adam = _Adam(delta, config.lr) if config.optimizer == "adam" else None
    gen = torch.Generator().manual_seed(config.seed)
    best = delta.detach().clone()
    best_dev = torch.full((batch,), -math.inf, dtype=torch.float64, device=device)
    history = []
    iterations = 0
    offsets_benign = relative_pose(benign, prep.poses)[..., 0]
    start = time.perf_counter()
    for _ in range(config.iterations if config.linf > 0 else 0):
        with torch.inference_mode():
            attacked = _rollout(prep, model, delta, config, controller)
        attacked = attacked.clone()  # a normal tensor: the trajectory loss below records autograd on it
        deviation = (config.sign * (relative_pose(attacked, prep.poses)[..., 0] - offsets_benign)).amax(1)
        history.append(deviation)
        improved = deviation > best_dev
        best = torch.where(improved[:, None, None, None], delta.detach(), best)
        best_dev = torch.maximum(best_dev, deviation)
        if config.target_deviation is not None and bool((best_dev >= config.target_deviation).all()):
            break
        iterations += 1
        if config.scheme == "trajectory":
            noise = _draw_noise(config, batch * config.eot_samples, length, device, gen)
            loss = _trajectory_loss(prep, model, delta, attacked, config, noise)
        else:
            noise = _draw_noise(config, batch * config.eot_samples, length, device, gen)
            poses = _rollout(prep, model, delta, config, controller, config.eot_samples, noise)
            clip_poses = prep.poses.repeat_interleave(config.eot_samples, 0)
            loss = -config.sign * relative_pose(poses, clip_poses)[..., 0].mean()
        if not bool(torch.isfinite(loss)):
            raise ValueError(f"the attack loss is not finite ({float(loss)}): the model produced NaN or inf outputs")
        grad = torch.autograd.grad(loss, delta)[0]
        with torch.no_grad():
            if adam is None:
                delta -= config.lr * grad.sign()
            else:
                adam.step(delta, grad)
            delta.copy_(project_perturbation(delta, config.linf, config.l2, config.top_k))
    seconds = time.perf_counter() - start
    if config.linf > 0 and len(history) == iterations:  # ran out of iterations: score the last update too
        with torch.inference_mode():
            attacked = _rollout(prep, model, delta, config, controller)
        deviation = (config.sign * (relative_pose(attacked, prep.poses)[..., 0] - offsets_benign)).amax(1)
        best = torch.where((deviation > best_dev)[:, None, None, None], delta.detach(), best)
    evaluation = evaluate_patch(clips, model, best, config, controller)
    stacked = torch.stack(history) if history else torch.zeros(0, batch, dtype=torch.float64, device=device)
    return DRPResult(best, evaluation, stacked, iterations, seconds)


def render_drive(
    clips: DriveClips,
    poses: Tensor,
    perturbation: Tensor | None = None,
    spec: PatchSpec | None = None,
    linf: float | None = None,
) -> Tensor:
    """The frames ``(B, T, C, H, W)`` the car sees at world ``poses`` ``(B, T, 3)``, with the patch if given.

    ``perturbation`` ``(B, C', rows, cols)`` must be a darkening (``>= 0``) within ``linf`` when it is given, and
    visible in some frame of ``poses`` for every clip.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import DriveClips, DRPConfig, PatchSpec
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
        >>> from drivemetrics.synthetic.lane_detectors import TinyLineDetector
        >>> camera = LaneCamera(width=128, height=64, focal=100.0, cx=63.5, cy=26.0)
        >>> c = make_lane_clips(batch=1, frames=4, seed=3, camera=camera, max_wander=0.1)
        >>> clips = DriveClips(c.images.double(), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
        >>> model = TinyLineDetector(c.h_samples, camera.width).lane_model()
        >>> config = DRPConfig(patch=PatchSpec(length=12.0, start=5.0, cell=0.2), iterations=2, eot_samples=1)
        >>> from drivemetrics.attack import render_drive
        >>> tuple(render_drive(clips, clips.recorded_poses).shape)
        (1, 4, 1, 64, 128)
    """
    prep = _prepare(clips)
    batch, length = prep.images.shape[:2]
    check_shape(poses, "poses", (batch, length, 3))
    check_finite(poses, "poses")
    spec = PatchSpec() if spec is None else spec
    if perturbation is not None:
        if linf is not None:
            check_budget(linf)
        _check_perturbation(perturbation, prep, DRPConfig(patch=spec), budget=False)
        _check_within_budget(perturbation, math.inf if linf is None else linf)
        _check_visible(prep, poses.to(device=prep.images.device, dtype=torch.float64), spec)
    clip = torch.arange(batch, device=poses.device).repeat_interleave(length)
    frame = torch.arange(length, device=poses.device).repeat(batch)
    view = _render(prep, clip, frame, poses.reshape(-1, 3).to(torch.float64), perturbation, spec)
    return view.reshape(prep.images.shape)
