"""The driving corridor's parameters: :class:`CorridorConfig` and its TOML file (the shipped ``corridor.toml``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from drivemetrics.configs import config_path

__all__ = ["DEFAULT_CONFIG_PATH", "CorridorConfig", "load_corridor_config"]


#: The shipped defaults (package data ``drivemetrics/configs/corridor.toml``, found in a wheel as in a checkout).
DEFAULT_CONFIG_PATH = config_path("corridor.toml")


@dataclass(frozen=True)
class CorridorConfig:
    """Parameters of the corridor fit and of its scores; the paper's defaults (the shipped ``corridor.toml``).

    Vehicle and search:
        speed: ``v0`` in m/s. wheelbase: ``L`` in metres. dt: step in seconds. steps_per_stage: ``S`` steps per
        manoeuvre. curvatures_per_side: ``N``; the wheel angles are ``k * wheel_angle_step`` for
        ``k = -N..N`` (radians), i.e. ``2N + 1`` primitives. width: corridor width ``W`` in metres. det_min:
        minimum fraction of a new element's area covered by detections for the search to go on.
        start_x / start_z / start_heading: start pose (metres, metres, radians); ``start_z = None`` is the grid's
        near edge. max_stages: cap on the number of stages (``None``: enough to cross the grid's diagonal).
    Scores:
        min_distance: rows nearer than this (metres) are not scored. min_overlap: lateral overlap in metres of
        corridor and ground truth for a row to be a longitudinal hit. distances: the distances ``d`` in metres of
        the table.
    """

    speed: float = 10.0
    wheelbase: float = 2.7
    dt: float = 0.05
    steps_per_stage: int = 6
    curvatures_per_side: int = 2
    wheel_angle_step: float = 0.05
    width: float = 2.2
    det_min: float = 0.5
    start_x: float = 0.0
    start_z: float | None = None
    start_heading: float = 0.0
    max_stages: int | None = None
    min_distance: float = 9.0
    min_overlap: float = 2.0
    distances: tuple[float, ...] = (20.0, 30.0, 40.0)

    def __post_init__(self) -> None:
        positive = ("speed", "wheelbase", "dt", "width", "wheel_angle_step", "min_overlap")
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"`{name}` must be a finite number > 0, got {value!r}")
        for name in ("steps_per_stage", "curvatures_per_side"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name == "steps_per_stage" else 0):
                raise ValueError(
                    f"`{name}` must be an integer >= {1 if name == 'steps_per_stage' else 0}, got {value!r}"
                )
        if self.max_stages is not None and (not isinstance(self.max_stages, int) or self.max_stages < 1):
            raise ValueError(f"`max_stages` must be None or an integer >= 1, got {self.max_stages!r}")
        if not 0 <= self.det_min < 1:
            raise ValueError(f"`det_min` must lie in [0, 1), got {self.det_min}")
        max_angle = self.curvatures_per_side * self.wheel_angle_step
        if max_angle >= math.pi / 2:
            raise ValueError(f"the largest wheel angle N * wheel_angle_step must be < pi / 2 rad, got {max_angle}")
        if max_angle > 0 and self.wheelbase / math.tan(max_angle) <= self.width / 2:
            raise ValueError(
                f"the tightest turn radius L / tan({max_angle:.3g}) = {self.wheelbase / math.tan(max_angle):.3g} m "
                f"must exceed half the corridor width ({self.width / 2} m)"
            )
        if not (math.isfinite(self.min_distance) and self.min_distance >= 0):
            raise ValueError(f"`min_distance` must be a finite number >= 0 metres, got {self.min_distance}")
        object.__setattr__(self, "distances", tuple(float(d) for d in self.distances))
        if not self.distances or any(not d > self.min_distance for d in self.distances):
            raise ValueError(f"`distances` must be non-empty and each > min_distance, got {self.distances}")

    @property
    def wheel_angles(self) -> tuple[float, ...]:
        """The ``2N + 1`` wheel angles (radians) in search priority order: 0, -a, +a, -2a, +2a, ..."""
        angles = [0.0]
        for i in range(1, self.curvatures_per_side + 1):
            angles += [-i * self.wheel_angle_step, i * self.wheel_angle_step]
        return tuple(angles)

    @property
    def stage_length(self) -> float:
        """Arc length in metres of a straight manoeuvre (the longest one), ``v dt S``."""
        return self.speed * self.dt * self.steps_per_stage


def load_corridor_config(path: str | Path | None = None, **overrides: Any) -> CorridorConfig:
    """Read a :class:`CorridorConfig` from a TOML file (default: the shipped ``corridor.toml``), then apply overrides.

    The file's tables (``[vehicle]``, ``[search]``, ``[scores]``) only group the keys; every key must be a field
    of :class:`CorridorConfig`. ``start_z`` / ``max_stages`` may be the string ``"auto"`` (meaning ``None``).
    """
    path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    if not path.is_file():
        raise FileNotFoundError(f"corridor config file not found: {path}")
    try:
        import tomllib
    except ModuleNotFoundError as err:  # Python 3.10
        raise ModuleNotFoundError("reading TOML configs needs Python >= 3.11 (tomllib)") from err
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    known = {f.name for f in fields(CorridorConfig)}
    values: dict[str, Any] = {}
    for section, table in data.items():
        items = table.items() if isinstance(table, dict) else [(section, table)]
        for key, value in items:
            if key not in known:
                raise KeyError(f"{path}: unknown corridor parameter {key!r} (known: {sorted(known)})")
            values[key] = None if value == "auto" else value
    if "distances" in values:
        values["distances"] = tuple(values["distances"])
    return replace(CorridorConfig(**values), **overrides)
