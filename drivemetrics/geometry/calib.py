"""KITTI calibration files: ``key: v1 v2 ...`` lines, row-major matrices.

A KITTI-ROAD calibration file (``calib/um_000000.txt``) holds the camera projections ``P0`` .. ``P3`` (3 x 4),
the rectification ``R0_rect`` (3 x 3) and the rigid transforms ``Tr_velo_to_cam``, ``Tr_imu_to_velo`` and
``Tr_cam_to_road`` (3 x 4). KITTI-object files use the same syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from drivemetrics._internal.files import read_text

if TYPE_CHECKING:  # the file is parsed into numpy arrays (read_kitti_calib_arrays: no torch); tensors on request
    import torch
    from torch import Tensor

__all__ = [
    "KITTI_CALIB_SHAPES",
    "ROAD_CALIB_KEYS",
    "parse_kitti_calib",
    "parse_kitti_calib_arrays",
    "read_kitti_calib",
    "read_kitti_calib_arrays",
    "stack_calibs",
]

#: Matrix shape of each known key; other keys are kept as flat vectors.
KITTI_CALIB_SHAPES: dict[str, tuple[int, int]] = {
    "P0": (3, 4),
    "P1": (3, 4),
    "P2": (3, 4),
    "P3": (3, 4),
    "R0_rect": (3, 3),
    "R_rect": (3, 3),
    "Tr_velo_to_cam": (3, 4),
    "Tr_imu_to_velo": (3, 4),
    "Tr_cam_to_road": (3, 4),
}

#: The keys the road-plane homography needs.
ROAD_CALIB_KEYS: tuple[str, ...] = ("P2", "R0_rect", "Tr_cam_to_road")


def parse_kitti_calib(
    text: str, source: str = "<string>", required: Iterable[str] = (), dtype: torch.dtype | None = None
) -> dict[str, Tensor]:
    """Parse the text of a KITTI calibration file (:func:`parse_kitti_calib_arrays`, as tensors).

    Args:
        text: the file content.
        source: the file name used in error messages.
        required: keys that must be present (e.g. :data:`ROAD_CALIB_KEYS`).
        dtype: floating dtype of the returned tensors (default float64, which keeps the file's precision).

    Returns:
        ``{key: tensor}`` on the CPU.

    Raises:
        ValueError: a malformed line, a non-number, a wrong value count, a repeated or a missing required key.

    Examples:
        >>> from drivemetrics.geometry import parse_kitti_calib
        >>> text = "P2: 1 0 0 0 0 1 0 0 0 0 1 0\\nR0_rect: 1 0 0 0 1 0 0 0 1\\n"
        >>> calib = parse_kitti_calib(text, required=("P2",))
        >>> sorted(calib), tuple(calib["P2"].shape), calib["P2"].dtype
        (['P2', 'R0_rect'], (3, 4), torch.float64)
    """
    import torch

    arrays = parse_kitti_calib_arrays(text, source, required)
    return {key: torch.from_numpy(value).to(dtype or torch.float64) for key, value in arrays.items()}


def parse_kitti_calib_arrays(
    text: str, source: str = "<string>", required: Iterable[str] = ()
) -> dict[str, np.ndarray]:
    """Parse the text of a KITTI calibration file into float64 numpy arrays (without torch).

    Blank lines and lines starting with ``#`` are skipped. Known keys (:data:`KITTI_CALIB_SHAPES`) are reshaped
    row-major to their matrix shape and must have exactly that many values; other keys stay flat vectors.

    Raises:
        ValueError: a malformed line, a non-number, a wrong value count, a repeated or a missing required key.

    Examples:
        >>> from drivemetrics.geometry.calib import parse_kitti_calib_arrays
        >>> calib = parse_kitti_calib_arrays("P2: 1 0 0 0 0 1 0 0 0 0 1 0\\n", required=("P2",))
        >>> calib["P2"].shape, calib["P2"].dtype.name
        ((3, 4), 'float64')
    """
    calib: dict[str, np.ndarray] = {}
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, values_text = line.partition(":")
        key = key.strip()
        if not sep or not key or ":" in values_text:
            raise ValueError(f"{source}:{line_no}: expected one `key: v1 v2 ...` per line, got {line!r}")
        if key in calib:
            raise ValueError(f"{source}:{line_no}: key {key!r} appears twice")
        try:
            values = [float(v) for v in values_text.split()]
        except ValueError as err:
            raise ValueError(
                f"{source}:{line_no}: values of {key!r} must be numbers, got {values_text.strip()!r}"
            ) from err
        array = np.array(values, dtype=np.float64)
        if key in KITTI_CALIB_SHAPES:
            rows, cols = KITTI_CALIB_SHAPES[key]
            if len(values) != rows * cols:
                raise ValueError(
                    f"{source}:{line_no}: {key} must have {rows * cols} values ({rows} x {cols}), got {len(values)}"
                )
            array = array.reshape(rows, cols)
        calib[key] = array
    missing = [k for k in required if k not in calib]
    if missing:
        raise ValueError(f"{source}: missing calibration key(s) {', '.join(missing)} (found: {', '.join(calib)})")
    return calib


def read_kitti_calib(
    path: str | Path, required: Iterable[str] = ROAD_CALIB_KEYS, dtype: torch.dtype | None = None
) -> dict[str, Tensor]:
    """Read a KITTI calibration file; see :func:`parse_kitti_calib`.

    Args:
        path: the ``.txt`` file.
        required: keys that must be present; default the three the road homography needs.
        dtype: floating dtype of the returned tensors (default float64).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: see :func:`parse_kitti_calib`.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from drivemetrics.geometry import read_kitti_calib
        >>> path = Path(tempfile.mkdtemp()) / "um_000000.txt"
        >>> identity = "1 0 0 0 0 1 0 0 0 0 1 0"
        >>> _ = path.write_text(f"P2: {identity}\\nR0_rect: 1 0 0 0 1 0 0 0 1\\nTr_cam_to_road: {identity}\\n")
        >>> {key: tuple(value.shape) for key, value in read_kitti_calib(path).items()}
        {'P2': (3, 4), 'R0_rect': (3, 3), 'Tr_cam_to_road': (3, 4)}
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"calibration file not found: {path}")
    text = read_text(path, what="calibration file")
    return parse_kitti_calib(text, source=str(path), required=required, dtype=dtype)


def read_kitti_calib_arrays(path: str | Path, required: Iterable[str] = ROAD_CALIB_KEYS) -> dict[str, np.ndarray]:
    """:func:`read_kitti_calib` as float64 numpy arrays, without torch (see :func:`parse_kitti_calib_arrays`).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: see :func:`parse_kitti_calib_arrays`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"calibration file not found: {path}")
    return parse_kitti_calib_arrays(read_text(path, what="calibration file"), source=str(path), required=required)


def stack_calibs(calibs: Iterable[Mapping[str, Tensor]], key: str) -> Tensor:
    """Stack one matrix of several calibrations into a batch ``(B, rows, cols)``.

    Examples:
        >>> from drivemetrics.geometry import parse_kitti_calib, stack_calibs
        >>> calib = parse_kitti_calib("P2: 1 0 0 0 0 1 0 0 0 0 1 0\\n")
        >>> tuple(stack_calibs([calib, calib], "P2").shape)
        (2, 3, 4)
    """
    mats = []
    for i, calib in enumerate(calibs):
        if key not in calib:
            raise KeyError(f"calibration {i} has no key {key!r}")
        mats.append(calib[key])
    if not mats:
        raise ValueError("`calibs` is empty")
    import torch

    return torch.stack(mats)
