"""Input checks shared by every domain: each raises ``ValueError`` / ``TypeError`` naming the argument.

These are the checks behind ``validate_args=True`` (the value checks read the values back to the host, so a
kernel runs them only when asked) and, where a command reads the same values from a file, the same limits
(:mod:`drivemetrics._internal.limits`). They take torch tensors or numpy arrays and import torch only when a
tensor is passed (the torch-free commands use them too).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from drivemetrics._internal import arrays

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "check_binary",
    "check_coordinates_within_limit",
    "check_finite",
    "check_graph",
    "check_lengths",
    "check_not_meta",
    "check_probability",
    "check_same_batch",
    "check_same_shape",
    "check_shape",
    "check_tensor",
    "check_values",
]


def check_tensor(x: object, name: str) -> Tensor:
    """Raise ``TypeError`` unless ``x`` is a tensor; return it."""
    if not arrays.is_tensor(x):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    return x  # type: ignore[return-value]


def check_shape(x: Tensor, name: str, shape: Sequence[int | str | None]) -> None:
    """Check ``x.shape`` against a spec: ints must match, ``None`` / strings (symbolic names) match anything.

    Example: ``check_shape(H, "homography", ("B", 3, 3))``.
    """
    check_tensor(x, name)
    spec = tuple(shape)
    if x.ndim != len(spec) or any(isinstance(s, int) and s != d for s, d in zip(spec, x.shape, strict=True)):
        want = " x ".join(str(s) for s in spec)
        raise ValueError(f"`{name}` must have shape {want}, got {tuple(x.shape)}")


def check_same_shape(a: Tensor, a_name: str, b: Tensor, b_name: str) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same shape."""
    if a.shape != b.shape:
        raise ValueError(
            f"`{a_name}` and `{b_name}` must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def check_same_batch(a: Any, a_name: str, b: Any, b_name: str, dims: int = 1) -> None:
    """Raise ``ValueError`` unless the first ``dims`` sizes of ``a`` and ``b`` (tensors or arrays) agree."""
    if tuple(a.shape[:dims]) != tuple(b.shape[:dims]):
        raise ValueError(
            f"`{a_name}` and `{b_name}` must hold the same batch, got leading sizes {tuple(a.shape[:dims])} and "
            f"{tuple(b.shape[:dims])}"
        )


def check_not_meta(x: Any, name: str) -> None:
    """Raise ``ValueError`` for a tensor on the ``meta`` device: it has a shape but no values to evaluate."""
    device = getattr(x, "device", None)
    if getattr(device, "type", None) == "meta":
        raise ValueError(f"`{name}` is on the meta device (a shape without values); metrics need real tensors")


def _host(x: Any, name: str) -> np.ndarray:
    """The values of a tensor or array as a numpy array on the host (a read-back from the device)."""
    if not arrays.is_tensor(x):
        return np.asarray(x)
    check_not_meta(x, name)
    x = x.detach()
    if x.is_complex():
        raise ValueError(f"`{name}` must hold real values, got {x.dtype}")
    if x.is_floating_point() and x.dtype not in (sys.modules["torch"].float32, sys.modules["torch"].float64):
        x = x.float()
    return x.cpu().numpy()


def check_values(
    x: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    finite: bool = True,
    nan_ok: bool = False,
    what: str = "values",
) -> None:
    """Raise a one-line ``ValueError`` unless every value of ``x`` (tensor, array or number) is in range.

    Args:
        x: the values (any shape; read back to the host).
        name: the argument's name, for the message.
        low, high: inclusive bounds (``None``: unbounded).
        finite: refuse NaN and +-inf (``nan_ok``: NaN is allowed, e.g. as padding).
        nan_ok: leave NaN out of every check.
        what: what the values are, for the message (``"scores"``, ``"counts"``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics._internal.validation import check_values
        >>> check_values(np.array([0.2, 1.5]), "scores", low=0, high=1)
        Traceback (most recent call last):
        ...
        ValueError: `scores` must hold values in [0, 1], got 1.5
    """
    values = _host(x, name)
    if values.dtype.kind == "c":
        raise ValueError(f"`{name}` must hold real values, got {values.dtype}")
    if values.dtype.kind == "O":
        raise ValueError(f"`{name}` must hold numbers, got objects")
    if not values.size:
        return
    if values.dtype.kind == "f":
        if nan_ok:
            values = values[~np.isnan(values)]
        elif np.isnan(values).any():
            raise ValueError(f"`{name}` contains NaN {what}")
        if finite and not np.isfinite(values).all():
            raise ValueError(f"`{name}` contains infinite {what}")
        if not values.size:
            return
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    if low is not None and (values < low).any():
        raise ValueError(f"`{name}` must hold {what} in [{lo}, {hi}], got {values.min():.6g}")
    if high is not None and (values > high).any():
        raise ValueError(f"`{name}` must hold {what} in [{lo}, {hi}], got {values.max():.6g}")


def check_finite(x: Any, name: str) -> None:
    """Raise ``ValueError`` if a floating tensor or array holds NaN or +-inf."""
    if arrays.is_tensor(x):  # one reduction on the device, one bool read back
        check_not_meta(x, name)
        if x.is_floating_point() and not bool(sys.modules["torch"].isfinite(x).all()):
            raise ValueError(f"`{name}` contains NaN or infinite values")
        return
    values = _host(x, name)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise ValueError(f"`{name}` contains NaN or infinite values")


def check_lengths(lengths: Any, name: str, size: int) -> None:
    """Raise ``ValueError`` unless ``lengths`` (valid counts of padded rows) are integers in ``[0, size]``."""
    values = _host(lengths, name)
    if values.dtype.kind not in "iub":
        raise ValueError(f"`{name}` must be integer counts, got {values.dtype}")
    if values.size and (values.min() < 0 or values.max() > size):
        raise ValueError(
            f"`{name}` must lie in [0, {size}] (the padded size), got values in [{values.min()}, {values.max()}]"
        )


def check_coordinates_within_limit(
    x: Any, name: str, *, nan_ok: bool = False, limit: str = "max_abs_coordinate"
) -> None:
    """Refuse NaN (unless ``nan_ok``: padding), infinite coordinates and those beyond a limit of the file readers.

    ``limit`` names the :class:`~drivemetrics._internal.limits.Limits` field the commands apply to the same values:
    ``max_abs_coordinate`` (pixels: image lanes, boxes, graphs), ``max_map_coordinate`` (metres: map lines,
    OpenLane-V2 lanes), ``max_lane3d_abs_metres`` (3D lanes); raise it with ``set_limits`` as for the commands.
    """
    from drivemetrics._internal.limits import get_limits, how_to_raise

    values = _host(x, name).astype(np.float64, copy=False)
    bound = getattr(get_limits(), limit)
    if not nan_ok and values.size and float(np.abs(values).max()) <= bound:
        return  # all is well, in one pass (a NaN or an infinite value fails the bound: told apart below)
    if nan_ok:
        values = values[~np.isnan(values)]
    elif np.isnan(values).any():
        raise ValueError(f"`{name}` contains NaN coordinates")
    if not np.isfinite(values).all():
        raise ValueError(f"`{name}` contains infinite coordinates")
    if values.size and not (np.abs(values) <= bound).all():
        worst = float(values.flat[int(np.argmax(np.abs(values)))])
        raise ValueError(
            f"`{name}`: the coordinate {worst:.6g} is larger than {limit}={bound:,} ({how_to_raise(limit)})"
        )


def check_graph(graph: Any, name: str) -> None:
    """Raise ``TypeError`` unless ``graph`` is a networkx graph, ``ValueError`` unless every node has a ``pos`` of two
    finite numbers within ``max_abs_coordinate`` px (the graph readers' limit), naming ``name`` and a node."""
    if not (hasattr(graph, "nodes") and hasattr(graph, "edges") and hasattr(graph, "is_directed")):
        raise TypeError(f"`{name}` must be a networkx graph, got {type(graph).__name__}")
    nodes = list(graph.nodes)
    positions = np.empty((len(nodes), 2), dtype=np.float64)
    for i, node in enumerate(nodes):
        pos = graph.nodes[node].get("pos")
        if pos is None:
            raise ValueError(f"`{name}` node {str(node)[:40]} has no 'pos' attribute (expected pos=(x, y))")
        try:
            xy = np.asarray(pos, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            xy = np.empty(0)
        if xy.shape != (2,):
            raise ValueError(
                f"`{name}` node {str(node)[:40]}: 'pos' must be two finite numbers (x, y), got {str(pos)[:40]}"
            )
        positions[i] = xy
    bad = ~np.isfinite(positions).all(axis=1)
    if bad.any():
        raise ValueError(
            f"`{name}` has {int(bad.sum())} node(s) with NaN or infinite 'pos' (it must be two finite numbers), "
            f"e.g. node {str(nodes[int(np.flatnonzero(bad)[0])])[:40]}"
        )
    check_coordinates_within_limit(positions, f"{name}` node `pos")


def check_probability(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` unless a floating tensor is finite and inside [0, 1].

    Integer tensors are not checked here (``uint8`` confidence maps use 0..255 by convention).
    """
    check_finite(x, name)
    if x.is_floating_point() and x.numel() and (bool((x < 0).any()) or bool((x > 1).any())):
        raise ValueError(
            f"`{name}` must hold probabilities in [0, 1] (got min {x.min().item():.4g}, max {x.max().item():.4g}); "
            "pass `from_logits=True` for raw scores"
        )


def check_binary(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` unless ``x`` holds only 0 and 1 (bool or numeric)."""
    if str(x.dtype) == "torch.bool":
        return
    if not bool(((x == 0) | (x == 1)).all()):
        raise ValueError(f"`{name}` must be binary (0 / 1 or bool)")
