"""PSLD in expectation over the controller and the start state: :func:`expected_psld_loss` and
:class:`ExpectedPSLDLoss`.

PSLD rolls out one controller at one speed from one start pose, and the gradient of that single rollout lands on
the few image rows its path fit and MPC happen to use (65 % on three rows in the committed loss study). DRP
(Sato et al.) optimises its patch over random vehicle states instead; here the same noise is applied to the
training loss. For each frame and each of ``samples`` draws:

* the speed is scaled by ``exp(speed_spread * n_0)``;
* the vehicle starts ``offset_std * n_1`` metres off the frame's origin and turned by ``yaw_std_deg * n_2``
  degrees (both the detected and the ground-truth center are re-expressed in that start frame, small-angle);
* the controller is ``controllers[draw % len(controllers)]`` (default: the nominal linear MPC and a soft and a
  stiff variant, path / heading weights x 0.5 and x 2);

with ``n ~ N(0, 1)``; the loss is the mean over draws of the smooth PSLD (m per step,
:func:`drivemetrics.lane.psld.smooth_psld`). Pass ``noise`` ``(samples, B, 3)`` to fix the draws (tests,
gradcheck); otherwise they come from torch's global generator (seed it for reproducible training). Use it instead
of :class:`~drivemetrics.lane.PSLDLoss` when one rollout's gradient is too concentrated; it costs ``samples``
PSLD rollouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics._internal.validation import check_finite, check_tensor
from drivemetrics.lane.control import LateralController, LinearMPC
from drivemetrics.lane.geometry import DEFAULT_LANE_WIDTH, center_from_image_lanes, default_z_samples
from drivemetrics.lane.loss_inputs import LossReduction, check_reduction, check_speed, reduce_frames
from drivemetrics.lane.psld_rollout import psld_deviations, smooth_psld

__all__ = ["ExpectedPSLDLoss", "default_controllers", "expected_psld_loss"]


def default_controllers() -> tuple[LateralController, ...]:
    """The nominal :class:`~drivemetrics.lane.LinearMPC` and a soft (x 0.5) and a stiff (x 2) variant of its
    path and heading weights."""
    return (
        LinearMPC(),
        LinearMPC(path_weight=0.5, heading_weight=5.0),
        LinearMPC(path_weight=2.0, heading_weight=20.0),
    )


def _check_options(
    samples: int, speed_spread: float, offset_std: float, yaw_std_deg: float, horizon_frames: int
) -> None:
    if int(samples) != samples or samples < 1:
        raise ValueError(f"`samples` must be an integer >= 1, got {samples}")
    for name, value in (("speed_spread", speed_spread), ("offset_std", offset_std), ("yaw_std_deg", yaw_std_deg)):
        if not value >= 0:
            raise ValueError(f"`{name}` must be >= 0, got {value}")
    if int(horizon_frames) != horizon_frames or horizon_frames < 1:
        raise ValueError(f"`horizon_frames` must be an integer >= 1, got {horizon_frames}")


def expected_psld_loss(
    preds: Tensor,
    target: Tensor,
    *,
    speed: Tensor | float,
    noise: Tensor | None = None,
    samples: int = 3,
    speed_spread: float = 0.15,
    offset_std: float = 0.3,
    yaw_std_deg: float = 1.0,
    controllers: Sequence[LateralController] | None = None,
    z_samples: Tensor | None = None,
    horizon_frames: int = 10,
    temperature: float = 0.02,
    abs_eps: float = 1e-3,
    reduction: LossReduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """Smooth PSLD (m per step) averaged over random speeds, controllers and start offsets / yaw.

    Args:
        preds: ``(B, M)`` detected lane-center profiles at ``z_samples`` (metres).
        target: ``(B, M)`` ground-truth lane-center profiles.
        speed: ``(B,)`` or float, m/s.
        noise: optional ``(samples, B, 3)`` standard-normal draws (speed, offset, yaw); default: fresh draws.
        samples: draws per frame.
        speed_spread: log-normal spread of the speed.
        offset_std: metres; yaw_std_deg: degrees (start pose noise).
        controllers: the controllers cycled over the draws (default :func:`default_controllers`).
        z_samples, horizon_frames, temperature, abs_eps: as :class:`~drivemetrics.lane.PSLDLoss`.
        reduction: over frames.
        validate_args: check values (finite inputs, speed in (0, 350] m/s): host syncs.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import expected_psld_loss
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> z = default_z_samples()
        >>> target = torch.zeros(2, z.numel())
        >>> preds = (target + 0.3).requires_grad_()
        >>> loss = expected_psld_loss(preds, target, speed=20.0, noise=torch.zeros(3, 2, 3))
        >>> loss.backward()
        >>> round(float(loss.detach()), 4), bool(preds.grad.sum() > 0)
        (0.0064, True)
    """
    _check_options(samples, speed_spread, offset_std, yaw_std_deg, horizon_frames)
    check_reduction(reduction)
    for name, value in (("preds", preds), ("target", target)):
        check_tensor(value, name)
        if value.ndim != 2 or not value.is_floating_point():
            raise ValueError(
                f"`{name}` must be a floating lane-center profile of shape B x M, got {tuple(value.shape)}"
            )
    if preds.shape != target.shape:
        raise ValueError(
            f"`preds` and `target` must have the same shape, got {tuple(preds.shape)}, {tuple(target.shape)}"
        )
    if validate_args:
        check_finite(preds, "preds")
        check_finite(target, "target")
    preds, target = float32_if_half(preds), float32_if_half(target)  # half inputs compute in float32
    z = default_z_samples(preds.dtype, preds.device) if z_samples is None else z_samples.to(preds)
    if z.ndim != 1 or z.shape[0] != preds.shape[1]:
        raise ValueError(f"`z_samples` must have shape ({preds.shape[1]},), got {tuple(z.shape)}")
    v = check_speed(speed, preds, validate_args)
    batch = preds.shape[0]
    if noise is None:
        noise = torch.randn(samples, batch, 3, dtype=preds.dtype, device=preds.device)
    elif noise.shape != (samples, batch, 3):
        raise ValueError(f"`noise` must have shape ({samples}, {batch}, 3), got {tuple(noise.shape)}")
    noise = noise.to(preds)
    controllers = default_controllers() if controllers is None else tuple(controllers)
    if len(controllers) == 0:
        raise ValueError("`controllers` is empty")
    total = torch.zeros(batch, dtype=preds.dtype, device=preds.device)
    for s in range(samples):
        n = noise[s]
        speed_s = v * torch.exp(speed_spread * n[:, 0])
        # start pose (d, psi) in the frame: a profile x(z) seen from it is x(z) - d - z tan(psi) (small angle)
        shift = offset_std * n[:, 1:2] + z * torch.tan((yaw_std_deg * 0.017453292519943295) * n[:, 2:3])
        dev = psld_deviations(preds - shift, target - shift, speed=speed_s, z_samples=z, horizon_frames=horizon_frames,
                              controller=controllers[s % len(controllers)], validate_args=False)  # fmt: skip
        total = total + smooth_psld(dev, temperature=temperature, abs_eps=abs_eps, validate_args=False)
    return reduce_frames(total / samples, reduction)


InputType = Literal["center", "points"]


class ExpectedPSLDLoss(nn.Module):
    """PSLD in expectation over speed, controller and start pose (DRP's noise), as a training loss.

    ``input_type="center"``: ``preds`` ``(B, M)`` center profiles; ``"points"``: ``(B, 2, N, 2)`` ego-left /
    ego-right image points with ``image_from_road`` in ``forward`` (as :class:`~drivemetrics.lane.PSLDLoss`).
    Other arguments as :func:`expected_psld_loss`.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import ExpectedPSLDLoss
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> _ = torch.manual_seed(0)
        >>> z = default_z_samples()
        >>> preds = torch.full((2, z.numel()), 0.3, requires_grad=True)
        >>> loss = ExpectedPSLDLoss(samples=6)(preds, torch.zeros(2, z.numel()), speed=torch.tensor([20.0, 25.0]))
        >>> loss.backward()
        >>> bool(loss > 0) and bool(preds.grad.sum() > 0)
        True
    """

    def __init__(
        self,
        *,
        input_type: InputType = "center",
        samples: int = 3,
        speed_spread: float = 0.15,
        offset_std: float = 0.3,
        yaw_std_deg: float = 1.0,
        controllers: Sequence[LateralController] | None = None,
        z_samples: Tensor | None = None,
        horizon_frames: int = 10,
        temperature: float = 0.02,
        abs_eps: float = 1e-3,
        lane_width: float = DEFAULT_LANE_WIDTH,
        reduction: LossReduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        if input_type not in ("center", "points"):
            raise ValueError(f"`input_type` must be 'center' or 'points', got {input_type!r}")
        _check_options(samples, speed_spread, offset_std, yaw_std_deg, horizon_frames)
        check_reduction(reduction)
        self.input_type = input_type
        self.samples = int(samples)
        self.speed_spread = float(speed_spread)
        self.offset_std = float(offset_std)
        self.yaw_std_deg = float(yaw_std_deg)
        self.controllers = default_controllers() if controllers is None else tuple(controllers)
        self.horizon_frames = int(horizon_frames)
        self.temperature = float(temperature)
        self.abs_eps = float(abs_eps)
        self.lane_width = float(lane_width)
        self.reduction = reduction
        self.validate_args = bool(validate_args)
        self.register_buffer("z_samples", default_z_samples() if z_samples is None else z_samples.clone(), False)

    def forward(
        self,
        preds: Tensor,
        target: Tensor,
        *,
        speed: Tensor | float,
        image_from_road: Tensor | None = None,
        noise: Tensor | None = None,
    ) -> Tensor:
        """The expected smooth PSLD (m per step)."""
        preds, target = float32_if_half(preds), float32_if_half(target)
        z = self.z_samples.to(preds.dtype)
        if self.input_type == "points":
            if image_from_road is None:
                raise ValueError("`image_from_road` is required for input_type 'points'")
            preds = center_from_image_lanes(preds, image_from_road, z, None, self.lane_width)
        return expected_psld_loss(
            preds,
            target,
            speed=speed,
            noise=noise,
            samples=self.samples,
            speed_spread=self.speed_spread,
            offset_std=self.offset_std,
            yaw_std_deg=self.yaw_std_deg,
            controllers=self.controllers,
            z_samples=z,
            horizon_frames=self.horizon_frames,
            temperature=self.temperature,
            abs_eps=self.abs_eps,
            reduction=self.reduction,
            validate_args=self.validate_args,
        )
