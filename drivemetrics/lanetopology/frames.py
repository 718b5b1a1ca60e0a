"""OpenLane-V2 frames as arrays: parsing and validation of one frame's annotation or prediction.

A frame comes as the devkit's per-frame dict (the ``annotation`` of a ground-truth collection entry, or the
``predictions`` of a submission entry), with numpy arrays, tensors or nested lists as values; the fixture JSON uses
the same keys with lists. :func:`parse_frame` turns it into a :class:`LaneFrame` of float64 / int64 numpy arrays and
raises one ``ValueError`` naming the frame and the field for anything malformed (wrong shapes, NaN or infinite
points, confidences outside [0, 1], topology matrices of the wrong size).

Tracks: ``"centerline"`` (keys ``lane_centerline``, ``traffic_element``, ``topology_lclc``, ``topology_lcte``) and
``"lanesegment"`` (``lane_segment`` with ``centerline`` / ``left_laneline`` / ``right_laneline``, ``area``,
``traffic_element``, ``topology_lsls``, ``topology_lste``). Lane points are BEV metres ``(x, y, z)``; traffic
element boxes image pixels ``[[x1, y1], [x2, y2]]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.limits import check_count, check_map_coordinates, get_limits

__all__ = [
    "AREA_CATEGORIES",
    "TRACKS",
    "TRAFFIC_ELEMENT_ATTRIBUTES",
    "LaneFrame",
    "Track",
    "check_frame_input",
    "check_frames_finite",
    "parse_frame",
]

Track = Literal["centerline", "lanesegment"]
TRACKS: tuple[Track, ...] = ("centerline", "lanesegment")

#: Traffic-element attributes of the devkit, index = attribute id (0-12); DET_t averages over all 13.
TRAFFIC_ELEMENT_ATTRIBUTES = (
    "unknown",
    "red",
    "green",
    "yellow",
    "go_straight",
    "turn_left",
    "turn_right",
    "no_left_turn",
    "no_right_turn",
    "u_turn",
    "no_u_turn",
    "slight_left",
    "slight_right",
)
#: Area categories of the lane-segment track, id -> name.
AREA_CATEGORIES = {1: "pedestrian_crossing", 2: "road_boundary"}

_KEYS = {
    "centerline": ("lane_centerline", "topology_lclc", "topology_lcte"),
    "lanesegment": ("lane_segment", "topology_lsls", "topology_lste"),
}


@dataclass
class LaneFrame:
    """One frame of one track, as float64 / int64 arrays (``L`` lanes, ``T`` traffic elements, ``A`` areas).

    Attributes:
        token: the frame's name in error messages (the devkit token joined by ``/``).
        lanes: centerlines, ``L`` arrays of shape ``(N_i, 3)``, metres, in driving order.
        lefts / rights: lane-segment track only: left and right lanelines, ``L`` arrays ``(N_i, 3)``.
        lane_confidence: ``(L,)`` in [0, 1] for predictions, ``None`` for ground truth.
        te_boxes: ``(T, 2, 2)`` boxes ``[[x1, y1], [x2, y2]]``, pixels.
        te_attribute: ``(T,)`` attribute ids 0-12.
        te_confidence: ``(T,)`` or ``None``.
        areas: lane-segment track only: ``A`` arrays ``(K_i, 3)``, metres.
        area_category: ``(A,)`` category ids (1 crossing, 2 road boundary).
        area_confidence: ``(A,)`` or ``None``.
        topology_lanes: ``(L, L)``: lane j follows lane i (0/1 for ground truth, confidences for predictions).
        topology_elements: ``(L, T)``: lane i is governed by element j.
    """

    token: str
    lanes: list[np.ndarray]
    te_boxes: np.ndarray
    te_attribute: np.ndarray
    topology_lanes: np.ndarray
    topology_elements: np.ndarray
    lane_confidence: np.ndarray | None = None
    te_confidence: np.ndarray | None = None
    lefts: list[np.ndarray] = field(default_factory=list)
    rights: list[np.ndarray] = field(default_factory=list)
    areas: list[np.ndarray] = field(default_factory=list)
    area_category: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    area_confidence: np.ndarray | None = None


def _as_array(value: Any, where: str) -> np.ndarray:
    try:
        if hasattr(value, "detach"):  # a torch tensor
            value = value.detach().cpu().numpy()
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: not a numeric array ({err})") from None


def _points(value: Any, where: str, dim: int = 3) -> np.ndarray:
    if isinstance(value, (list, tuple)) or xp.is_ndarray(value):  # counted before converting anything
        check_count(len(value), "max_map_line_points", where, "points in one lane")
    arr = _as_array(value, where)
    if arr.ndim != 2 or arr.shape[1] != dim or arr.shape[0] < 2:
        raise ValueError(f"{where}: expected shape (N >= 2, {dim}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{where}: contains NaN or infinite values")
    return arr


def _points_unchecked(value: Any, where: str, dim: int = 3, max_points: int | None = None) -> np.ndarray:
    """:func:`_points` without the finiteness check for a float array of the right shape (the caller checks all
    points at once: :func:`check_frames_finite`); anything else goes through :func:`_points`. ``max_points``: the
    limit in force (the caller's one read of it per frame; default: read here)."""
    usable = xp.is_ndarray(value) and value.dtype.kind == "f" and value.ndim == 2
    limit = get_limits().max_map_line_points if max_points is None else max_points
    if usable and 2 <= value.shape[0] <= limit and value.shape[1] == dim:
        return value.astype(np.float64, copy=False)
    return _points(value, where, dim)


_SEGMENT_FIELDS = (("centerline", "lanes"), ("left_laneline", "lefts"), ("right_laneline", "rights"))


def _confidence(item: Mapping[str, Any], where: str) -> float:
    if "confidence" not in item:
        raise ValueError(f"{where}.confidence: missing")
    raw = item["confidence"]
    value = float(raw) if isinstance(raw, (float, np.floating)) else _number(raw, f"{where}.confidence")
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise ValueError(f"{where}.confidence: {value} is outside [0, 1]")
    return value


def _number(raw: Any, where: str) -> float:
    """A confidence given as a number: a Python or numpy int / float, or a one-element numeric array or tensor
    (never text, never a bool)."""
    if hasattr(raw, "detach"):  # a torch tensor
        raw = raw.detach().cpu().numpy()
    if xp.is_ndarray(raw) and raw.size == 1 and raw.dtype.kind in "iuf":
        return float(raw.reshape(-1)[0])
    if isinstance(raw, (int, float, np.integer, np.floating)) and not isinstance(raw, (bool, np.bool_)):
        return float(raw)
    raise ValueError(f"{where}: expected a number in [0, 1], got {type(raw).__name__} {str(raw)[:40]!r}")


def _items(ann: Mapping[str, Any], key: str, where: str) -> Sequence[Mapping[str, Any]]:
    if key not in ann:
        raise ValueError(f"{where}.{key}: missing")
    items = ann[key]
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise ValueError(f"{where}.{key}: expected a list, got {type(items).__name__}")
    check_count(len(items), "max_map_lines_per_frame", f"{where}.{key}", "items in one frame")
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"{where}.{key}[{k}]: expected a dict, got {type(item).__name__}")
    return items


def _matrix(value: Any, shape: tuple[int, int], where: str, is_pred: bool) -> np.ndarray:
    arr = _as_array(value, where)
    if arr.size == 0:
        arr = np.zeros(shape)
    if arr.shape != shape:
        raise ValueError(f"{where}: expected shape {shape}, got {arr.shape}")
    if not arr.size or (arr.min() >= 0 and arr.max() <= 1 and (is_pred or not (arr * (1 - arr)).any())):
        return arr  # the common case in two or three reductions (NaN fails the comparisons)
    if not np.isfinite(arr).all():
        raise ValueError(f"{where}: contains NaN or infinite values")
    if is_pred and ((arr < 0) | (arr > 1)).any():
        raise ValueError(f"{where}: relation confidences must lie in [0, 1]")
    if not is_pred and not ((arr == 0.0) | (arr == 1.0)).all():
        raise ValueError(f"{where}: ground-truth topology must be 0/1")
    return arr


def check_frames_finite(frames: Sequence[LaneFrame], track: Track) -> None:
    """Check that every lane point of ``frames`` is finite, all frames at once.

    Raises:
        ValueError: naming the first frame, lane and field holding a NaN or infinite value.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.frames import parse_frame
        >>> from drivemetrics.lanetopology.frames import check_frames_finite
        >>> lane = np.array([[0.0, 0.0, 0.0], [np.nan, 1.0, 0.0]])
        >>> ann = {"lane_centerline": [{"points": lane}], "traffic_element": [], "topology_lclc": [[0]],
        ...        "topology_lcte": []}
        >>> frame = parse_frame(ann, track="centerline", is_pred=False, token="val/1/2", check_finite=False)
        >>> check_frames_finite([frame], "centerline")
        Traceback (most recent call last):
        ...
        ValueError: frame val/1/2: lane_centerline[0].points: contains NaN or infinite values
    """
    _check_lines([(f.token, {"lanes": f.lanes, "lefts": f.lefts, "rights": f.rights}) for f in frames], track)


def _check_lines(frames: Sequence[tuple[str, Mapping[str, list[np.ndarray]]]], track: Track) -> None:
    """:func:`check_frames_finite` of ``(token, {"lanes": ..., "lefts": ..., "rights": ...})`` per frame."""
    lane_key = _KEYS[track][0]
    fields = (("points", "lanes"),) if track == "centerline" else _SEGMENT_FIELDS
    lines = [x for _, groups in frames for _, attr in fields for x in groups[attr]]
    limit = get_limits().max_map_coordinate
    if not lines or (np.abs(np.concatenate(lines)) <= limit).all():  # NaN fails the comparison
        return
    for token, groups in frames:  # name the first bad line
        for name, attr in fields:
            for k, line in enumerate(groups[attr]):
                check_map_coordinates(line, f"frame {token}: {lane_key}[{k}].{name}")


def check_frame_input(ann: Any, *, track: Track | None, is_pred: bool, where: str) -> None:
    """The checks of the boundary, run by the file readers on every frame before it is scored: sizes within the
    map limits (items per frame, points per lane), lane / area points finite and within ``max_map_coordinate``,
    confidences numbers in [0, 1]. Cheap (one array per frame for the points); :func:`parse_frame` still checks
    shapes and the rest. ``track`` ``None``: the keys present are checked.

    Raises:
        ValueError: naming ``where`` (the file and the frame), the field and the limit.

    Examples:
        >>> from drivemetrics.lanetopology.frames import check_frame_input
        >>> ann = {"lane_centerline": [{"points": [[0, 0, 0], [1e6, 0, 0]], "confidence": 0.5}]}
        >>> check_frame_input(ann, track="centerline", is_pred=True, where="pred.json: frame val/1/2")
        Traceback (most recent call last):
        ...
        ValueError: pred.json: frame val/1/2: lane_centerline[0].points: the coordinate 1e+06 m is larger than ...
    """
    if not isinstance(ann, Mapping):
        raise ValueError(f"{where}: expected a dict, got {type(ann).__name__}")
    limits = get_limits()
    groups = {
        "lane_centerline": ("points",),
        "lane_segment": ("centerline", "left_laneline", "right_laneline"),
        "area": ("points",),
        "traffic_element": (),
    }
    if track is not None:
        wanted = {"lane_centerline", "traffic_element"} if track == "centerline" else set(groups) - {"lane_centerline"}
        groups = {key: value for key, value in groups.items() if key in wanted}
    for key, fields in groups.items():
        items = ann.get(key)
        if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
            continue  # missing or malformed: parse_frame names it
        check_count(len(items), "max_map_lines_per_frame", f"{where}: {key}", "items in one frame")
        arrays: list[np.ndarray] = []
        for k, item in enumerate(items):
            if not isinstance(item, Mapping):
                continue
            if is_pred and "confidence" in item:
                _confidence(item, f"{where}: {key}[{k}]")
            for name in fields:
                value = item.get(name)
                if isinstance(value, (list, tuple)) or xp.is_ndarray(value):
                    if len(value) > limits.max_map_line_points:
                        check_count(len(value), "max_map_line_points", f"{where}: {key}[{k}].{name}", "points")
                    try:
                        arrays.append(np.asarray(value, dtype=np.float64).reshape(-1))
                    except (TypeError, ValueError):
                        continue  # parse_frame names it
        if arrays and not (np.abs(np.concatenate(arrays)) <= limits.max_map_coordinate).all():
            for k, item in enumerate(items):  # name the first bad line
                for name in fields:
                    try:
                        values = np.asarray(item.get(name), dtype=np.float64)
                    except (TypeError, ValueError):
                        continue
                    check_map_coordinates(values, f"{where}: {key}[{k}].{name}")


def _traffic_elements(
    te_in: Sequence[Mapping[str, Any]], where: str, is_pred: bool
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Boxes ``(T, 2, 2)``, attributes ``(T,)`` and confidences of a frame's traffic elements, checked."""
    boxes = np.zeros((len(te_in), 2, 2))
    attrs = np.zeros(len(te_in), dtype=np.int64)
    te_conf: list[float] = []
    for k, item in enumerate(te_in):
        at = f"{where}: traffic_element[{k}]"
        if "points" not in item:
            raise ValueError(f"{at}.points: missing")
        box = item["points"]
        if not (xp.is_ndarray(box) and box.dtype.kind == "f" and box.shape == (2, 2)):
            box = _as_array(box, f"{at}.points")
        if box.shape != (2, 2):
            raise ValueError(f"{at}.points: expected a finite box [[x1, y1], [x2, y2]], got shape {box.shape}")
        boxes[k] = box
        attribute = item.get("attribute")
        if attribute is None or int(attribute) != attribute or not 0 <= int(attribute) < 13:
            raise ValueError(f"{at}.attribute: expected an integer in 0-12, got {attribute!r}")
        attrs[k] = int(attribute)
        if is_pred:
            te_conf.append(_confidence(item, at))
    finite = np.isfinite(boxes).all(axis=(1, 2))
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{where}: traffic_element[{k}].points: expected a finite box [[x1, y1], [x2, y2]], got NaN or infinity"
        )
    return boxes, attrs, te_conf


def parse_frame(
    ann: Mapping[str, Any], *, track: Track, is_pred: bool, token: str = "?", check_finite: bool = True
) -> LaneFrame:
    """Parse and validate one frame's devkit dict (annotation or prediction) into a :class:`LaneFrame`.

    Args:
        ann: the frame's dict (see the module docstring for the keys of each track).
        track: ``"centerline"`` or ``"lanesegment"``.
        is_pred: predictions need ``confidence`` on lanes, areas and elements; ground truth does not.
        token: the frame's name, used in error messages.
        check_finite: check that every lane point is finite; ``False`` leaves it to the caller, e.g.
            :func:`check_frames_finite` on many frames at once.

    Raises:
        ValueError: naming the frame and the field, for any malformed entry.

    Examples:
        >>> from drivemetrics.lanetopology.frames import parse_frame
        >>> ann = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...        "topology_lclc": [[0]], "topology_lcte": []}
        >>> frame = parse_frame(ann, track="centerline", is_pred=False, token="val/1/2")
        >>> frame.lanes[0].shape, frame.topology_elements.shape
        ((2, 3), (1, 0))
    """
    if track not in TRACKS:
        raise ValueError(f"`track` must be one of {TRACKS}, got {track!r}")
    where = f"frame {token}"
    if not isinstance(ann, Mapping):
        raise ValueError(f"{where}: expected a dict, got {type(ann).__name__}")
    lane_key, ll_key, lt_key = _KEYS[track]
    lanes_in = _items(ann, lane_key, where)
    lanes: list[np.ndarray] = []
    lefts: list[np.ndarray] = []
    rights: list[np.ndarray] = []
    lane_conf: list[float] = []
    max_points = get_limits().max_map_line_points
    for k, item in enumerate(lanes_in):
        at = f"{where}: {lane_key}[{k}]"
        if track == "centerline":
            if "points" not in item:
                raise ValueError(f"{at}.points: missing")
            lanes.append(_points_unchecked(item["points"], f"{at}.points", max_points=max_points))
        else:
            for name, out in (("centerline", lanes), ("left_laneline", lefts), ("right_laneline", rights)):
                if name not in item:
                    raise ValueError(f"{at}.{name}: missing")
                out.append(_points_unchecked(item[name], f"{at}.{name}", max_points=max_points))
        if is_pred:
            lane_conf.append(_confidence(item, at))
    if check_finite:
        _check_lines([(token, {"lanes": lanes, "lefts": lefts, "rights": rights})], track)
    te_in = _items(ann, "traffic_element", where)
    boxes, attrs, te_conf = _traffic_elements(te_in, where, is_pred)
    areas: list[np.ndarray] = []
    area_cat: list[int] = []
    area_conf: list[float] = []
    if track == "lanesegment":
        for k, item in enumerate(_items(ann, "area", where)):
            at = f"{where}: area[{k}]"
            if "points" not in item:
                raise ValueError(f"{at}.points: missing")
            areas.append(_points(item["points"], f"{at}.points"))
            check_map_coordinates(areas[-1], f"{at}.points")
            category = item.get("category")
            if category not in AREA_CATEGORIES:
                raise ValueError(f"{at}.category: expected 1 or 2, got {category!r}")
            area_cat.append(int(category))
            if is_pred:
                area_conf.append(_confidence(item, at))
    num_l, num_t = len(lanes), len(te_in)
    for key in (ll_key, lt_key):
        if key not in ann:
            raise ValueError(f"{where}.{key}: missing")
    return LaneFrame(
        token=token,
        lanes=lanes,
        lefts=lefts,
        rights=rights,
        lane_confidence=np.asarray(lane_conf) if is_pred else None,
        te_boxes=boxes,
        te_attribute=attrs,
        te_confidence=np.asarray(te_conf) if is_pred else None,
        areas=areas,
        area_category=np.asarray(area_cat, dtype=np.int64),
        area_confidence=np.asarray(area_conf) if is_pred else None,
        topology_lanes=_matrix(ann[ll_key], (num_l, num_l), f"{where}: {ll_key}", is_pred),
        topology_elements=_matrix(ann[lt_key], (num_l, num_t), f"{where}: {lt_key}", is_pred),
    )
