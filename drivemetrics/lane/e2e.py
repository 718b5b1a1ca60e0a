"""E2E-LD: the end-to-end lateral deviation of a closed loop driven by a lane detector (Sato et al., CVPR 2022).

For a clip of recorded frames (the paper: 20 steps at 20 Hz = 1 s), starting at the first recorded pose:

1. synthesise the camera view from the *simulated* pose by warping the recorded frame through the road plane
   (:func:`drivemetrics.geometry.camera.synthesize_shifted_view`: lateral offset, longitudinal offset and yaw;
   pixels above the horizon kept from the recorded frame);
2. run the user's detector (any callable ``images (N, C, H, W) -> lanes (N, 2, P, 2)`` pixels, ego-left then
   ego-right, NaN for absent points) on the batch of clips;
3. lane center (:func:`drivemetrics.lane.geometry.center_from_image_lanes`) -> lateral controller -> one frame of
   the kinematic bicycle.

The reference is the same closed loop driven by the ground-truth lane center (no images). Then::

    E2E-LD(clip) = max_{1 <= t <= T} |lateral offset of the detector-driven pose from the reference pose at t|

the offset being measured along the reference vehicle's lateral axis. Batched over clips (one Python loop over
time steps). Recorded poses default to a straight drive along +Z at the given speed (ld-metric's TuSimple mock).

Differences from ld-metric: both loops here use the same vehicle (ld-metric: 25 deg/s steering-rate limit for the
detector loop, unlimited for the ground truth - pass a rate-limited ``controller.params`` to add one to both);
image rotation uses the physical yaw (ld-metric passes radians where OpenCV expects degrees); no 0.7 BEV scale,
no pose noise; the vehicle reference point is the camera position.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_finite, check_shape
from drivemetrics.geometry.camera import synthesize_shifted_view
from drivemetrics.geometry.pose import relative_pose
from drivemetrics.lane.control import LateralController, LinearMPC, PosedPath, VehiclePath
from drivemetrics.lane.geometry import DEFAULT_LANE_WIDTH, center_from_image_lanes, default_z_samples
from drivemetrics.vehicle.bicycle import KinematicBicycle

__all__ = ["e2e_ld"]

Detector = Callable[[Tensor], Tensor]


def _straight_poses(speed: Tensor, dt: float) -> Tensor:
    z = torch.cumsum(speed * dt, 1) - speed[:, :1] * dt
    zeros = torch.zeros_like(z)
    return torch.stack([zeros, z, zeros], -1)


def _check_values(target: Tensor, speed: Tensor, recorded_poses: Tensor) -> None:
    """The value checks of :func:`e2e_ld` (each reads back from the device)."""
    check_finite(target, "target")
    check_finite(speed, "speed")
    if bool((speed <= 0).any()):
        raise ValueError("`speed` must be > 0 m/s in every frame")
    check_finite(recorded_poses, "recorded_poses")


def e2e_ld(
    images: Tensor,
    target: Tensor,
    *,
    speed: Tensor | float,
    detector: Detector,
    image_from_road: Tensor,
    recorded_poses: Tensor | None = None,
    frames: int | None = None,
    z_samples: Tensor | None = None,
    controller: LateralController | None = None,
    lane_width: float = DEFAULT_LANE_WIDTH,
    return_details: bool = False,
    validate_args: bool = True,
) -> Tensor | dict[str, Tensor]:
    """E2E-LD of a detector on a batch of clips (module docstring).

    Args:
        images: ``(B, T, C, H, W)`` recorded frames (float).
        target: ``(B, T, M)`` ground-truth lane-center profiles of each recorded frame (its own road frame,
            metres) at ``z_samples``.
        speed: float, ``(B,)`` or ``(B, T)`` m/s (> 0).
        detector: ``(N, C, H, W) -> (N, 2, P, 2)`` lane points in pixels (NaN = absent).
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)`` camera homography.
        recorded_poses: ``(B, T, 3)`` recorded ``(x, z, heading)`` in a clip frame; default straight along +Z.
        frames: closed-loop steps, at most ``T``; default ``T`` (the paper's clips: 20 steps = 1 s at 20 Hz;
            ld-metric runs 20 steps on 21 images).
        z_samples: ``(M,)`` metres; default 0..100 m every metre.
        controller: default ``LinearMPC()`` (RAV4 2017); its ``params`` are the vehicle.
        return_details: return the dict ``{"e2e_ld": (B,) metres, "deviation": (B, T) signed lateral offsets from the
            reference at t = 1..T (metres), "poses": (B, T + 1, 3) detector-driven poses (x, z, heading) in the
            clip frame, "reference_poses": (B, T + 1, 3) ground-truth-driven poses}`` instead of the ``(B,)`` values.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry.camera import image_from_road_homography, intrinsic_matrix, road_to_image
        >>> from drivemetrics.functional import e2e_ld
        >>> hom = image_from_road_homography(intrinsic_matrix(120.0, 120.0, 80.0, 30.0).double(), 1.5, pitch=0.05)
        >>> z = torch.linspace(8.0, 30.0, 12, dtype=torch.float64)
        >>> def detector(view):  # sees the lane lines 0.5 m right of where they are, whatever the view
        ...     lines = [road_to_image(hom, torch.stack([torch.full_like(z, x + 0.5), z], -1)) for x in (-1.8, 1.8)]
        ...     return torch.stack(lines)[None].expand(view.shape[0], -1, -1, -1)  # (N, 2, P, 2) pixels
        >>> images = torch.zeros(1, 6, 1, 96, 160, dtype=torch.float64)  # (B, T, C, H, W)
        >>> target = torch.zeros(1, 6, 101, dtype=torch.float64)  # (B, T, M): the lane center at X = 0
        >>> e2e_ld(images, target, speed=25.0, detector=detector, image_from_road=hom)  # (B,) metres
        tensor([0.2920], dtype=torch.float64)
    """
    check_shape(images, "images", ("B", "T", "C", "H", "W"))
    if not images.is_floating_point():
        raise ValueError(f"`images` must be a floating tensor, got {images.dtype}")
    batch, length = images.shape[:2]
    check_shape(target, "target", (batch, length, "M"))
    frames = length if frames is None else frames
    if int(frames) != frames or not 1 <= frames <= length:
        raise ValueError(f"`frames` must be an integer in [1, {length}] (the clip length), got {frames}")
    frames = int(frames)
    dtype, device = target.dtype, target.device
    z_samples = default_z_samples(dtype, device) if z_samples is None else z_samples.to(target)
    if z_samples.shape != target.shape[-1:]:
        raise ValueError(f"`z_samples` must have shape ({target.shape[-1]},), got {tuple(z_samples.shape)}")
    v = torch.as_tensor(speed, dtype=dtype, device=device)
    v = v.reshape(-1, 1).expand(batch, length) if v.ndim <= 1 else v
    check_shape(v, "speed", (batch, length))
    controller = LinearMPC() if controller is None else controller
    model = KinematicBicycle(controller.params)
    if recorded_poses is None:
        recorded_poses = _straight_poses(v, controller.params.frame_dt)
    check_shape(recorded_poses, "recorded_poses", (batch, length, 3))
    if validate_args:
        _check_values(target, v, recorded_poses)
    if image_from_road.shape not in ((3, 3), (batch, 3, 3)):
        raise ValueError(
            f"`image_from_road` must have shape 3 x 3 or {batch} x 3 x 3, got {tuple(image_from_road.shape)}"
        )
    hom = image_from_road.to(dtype).expand(batch, 3, 3)

    # Rows 0..B-1: detector-driven loop; rows B..2B-1: ground-truth loop.
    start = recorded_poses[:, 0].repeat(2, 1)
    state = model.initial_state(2 * batch, dtype=dtype, device=device)
    state = state._replace(x=start[:, 0], z=start[:, 1], heading=start[:, 2])
    poses = [torch.stack([state.x, state.z, state.heading], -1)]
    for t in range(frames):
        rec = recorded_poses[:, t].repeat(2, 1)
        pose = torch.stack([state.x, state.z, state.heading], -1)
        lateral, longitudinal, yaw = relative_pose(pose, rec).unbind(-1)  # in the recorded vehicle frame
        view = synthesize_shifted_view(
            images[:, t].to(dtype), hom, lateral[:batch], yaw[:batch], longitudinal_offset=longitudinal[:batch]
        )
        lanes = detector(view)
        if not arrays.is_tensor(lanes) or lanes.ndim != 4 or lanes.shape[0] != batch or lanes.shape[1] != 2:
            got = tuple(lanes.shape) if arrays.is_tensor(lanes) else type(lanes).__name__
            raise ValueError(
                f"`detector` must return lanes of shape {batch} x 2 x P x 2 (ego-left, ego-right), got {got}"
            )
        center = center_from_image_lanes(lanes.to(dtype), hom, z_samples, lane_width=lane_width)
        gt_path = PosedPath(z_samples, target[:, t], lateral[batch:], longitudinal[batch:], yaw[batch:])
        speeds = v[:, t].repeat(2)
        control = controller.bind(v[:, t])  # speeds were validated above (no per-step host sync)
        cmd_det = control(VehiclePath(z_samples, center), state.steering_wheel[:batch])
        cmd_gt = control(gt_path, state.steering_wheel[batch:])
        command = torch.cat([cmd_det, cmd_gt])
        if t == 0:  # start with the wheel at the first command (ld-metric's snap)
            state = state._replace(steering_wheel=command, pending=command[:, None].expand_as(state.pending).clone())
        state = model.step(state, command, speeds, validate=False)
        poses.append(torch.stack([state.x, state.z, state.heading], -1))
    track = torch.stack(poses, 1)  # (2B, T + 1, 3)
    det, ref = track[:batch], track[batch:]
    deviation = relative_pose(det, ref)[:, 1:, 0]  # lateral offset in the reference drive's frame
    value = deviation.abs().amax(1)
    if return_details:
        return {"e2e_ld": value, "deviation": deviation, "poses": det, "reference_poses": ref}
    return value
