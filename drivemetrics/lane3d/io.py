"""Reading OpenLane (v1) 3D lane files: the test list, annotations and predictions (official and PersFormer).

* Test list: one image path per line (``validation/segment-.../<timestamp>.jpg``); the evaluator reads
  ``DIR + line.replace("jpg", "json")`` from the annotation and the prediction folders.
* Annotation (``lane3d_1000``): ``file_path``, ``extrinsic`` (4 x 4, camera to vehicle), ``lane_lines``: ``xyz``
  (3 x n, camera frame: x front, y left, z up), ``visibility`` (n values), ``category``.
* Prediction, official: ``file_path``, ``lane_lines``: ``xyz`` (n x 3, ground frame: x right, y forward, z up),
  ``category``. PersFormer: ``file_path``, ``laneLines`` (lanes of n x 3 points) and ``laneLines_prob`` (class
  probabilities per lane): a lane is kept when its best probability is above 0.5, that class is its category.

Every reader checks the sizes against the input limits (``max_lane3d_points``, ``max_lane3d_lanes``,
``max_lane3d_abs_metres``) and raises one ``ValueError`` naming the file and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from drivemetrics._internal.files import read_text
from drivemetrics._internal.limits import Limits, check_count, get_limits, load_json

__all__ = [
    "Lane3DFrame",
    "ScoredLanesFrame",
    "list_once_frames",
    "read_apollo_gt",
    "read_apollo_pred",
    "read_once_file",
    "read_openlane_gt",
    "read_openlane_pred",
    "read_test_list",
]

#: PersFormer keeps a lane when its best class probability is above this.
PROB_THRESHOLD = 0.5


@dataclass
class Lane3DFrame:
    """One frame's lanes as read: ``points`` one ``(n, 3)`` float64 array per lane, ``categories`` one int per lane;
    annotations also carry ``visibility`` (one ``(n,)`` array per lane) and ``extrinsic`` ``(4, 4)`` (their points
    are in the camera frame, predictions' in the ground frame).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.io import Lane3DFrame
        >>> frame = Lane3DFrame("a.jpg", [np.zeros((2, 3))], [1])
        >>> frame.file_path, len(frame.points), frame.visibility
        ('a.jpg', 1, None)
    """

    file_path: str
    points: list[np.ndarray] = field(default_factory=list)
    categories: list[int] = field(default_factory=list)
    visibility: list[np.ndarray] | None = None
    extrinsic: np.ndarray | None = None


def read_test_list(path: str | Path) -> list[str]:
    """The image paths of a test list, one per non-empty line (trailing newline removed, as the evaluator).

    Examples:
        >>> import tempfile, os
        >>> from drivemetrics.lane3d.io import read_test_list
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "list.txt"), "w").write("validation/s/1.jpg\\nvalidation/s/2.jpg\\n")
        ...     read_test_list(os.path.join(d, "list.txt"))
        ['validation/s/1.jpg', 'validation/s/2.jpg']
    """
    lines = [line for line in read_text(path, what="test list").split("\n") if line.strip()]
    if not lines:
        raise ValueError(f"{path}: the test list is empty")
    return lines


def _load(path: str | Path, what: str) -> dict[str, Any]:
    data = load_json(read_text(path, what=what), path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object ({what})")
    if not isinstance(data.get("file_path"), str):
        raise ValueError(f"{path}: field 'file_path' missing or not a string")
    return data


def _lanes_field(data: dict[str, Any], key: str, path: str | Path, limits: Limits) -> list[Any]:
    lanes = data.get(key)
    if not isinstance(lanes, list):
        raise ValueError(f"{path}: field '{key}' missing or not a list")
    if len(lanes) > limits.max_lane3d_lanes:
        check_count(len(lanes), "max_lane3d_lanes", path, f"lanes in '{key}'")
    return lanes


def _points(value: Any, where: str, transposed: bool, limits: Limits) -> np.ndarray:
    """``(n, 3)`` float64 from a JSON ``n x 3`` list (or ``3 x n`` when ``transposed``)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: not an array of numbers") from None
    if transposed:
        if array.ndim != 2 or array.shape[0] != 3:
            raise ValueError(f"{where}: expected 3 x n coordinates, got shape {array.shape}")
        array = array.T
    elif array.ndim != 2 or array.shape[1] != 3:
        if array.size == 0:
            return np.zeros((0, 3))
        raise ValueError(f"{where}: expected n x 3 coordinates, got shape {array.shape}")
    if array.shape[0] > limits.max_lane3d_points:
        check_count(array.shape[0], "max_lane3d_points", where, "points")
    limit = limits.max_lane3d_abs_metres
    if array.size and not (np.abs(array) <= limit).all():
        raise ValueError(
            f"{where}: a coordinate is not finite or larger than max_lane3d_abs_metres={limit} "
            "(raise it with --limit max_lane3d_abs_metres=N)"
        )
    return np.ascontiguousarray(array)


def _category(value: Any, where: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: 'category' must be an integer, got {value!r}") from None
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"{where}: 'category' must be an integer, got {value!r}")
    return int(number)


def read_openlane_gt(path: str | Path) -> Lane3DFrame:
    """An OpenLane annotation: points in the camera frame (``(n, 3)`` per lane), visibility, category, extrinsic.

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.io import read_openlane_gt
        >>> lane = {"xyz": [[10.0, 20.0], [1.0, 1.0], [-2.0, -2.0]], "visibility": [1.0, 0.0], "category": 1}
        >>> data = {"file_path": "a.jpg", "extrinsic": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 2], [0, 0, 0, 1]],
        ...         "lane_lines": [lane]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "a.json"), "w").write(json.dumps(data))
        ...     frame = read_openlane_gt(os.path.join(d, "a.json"))
        >>> frame.points[0].tolist(), frame.visibility[0].tolist(), frame.categories
        ([[10.0, 1.0, -2.0], [20.0, 1.0, -2.0]], [1.0, 0.0], [1])
    """
    data = _load(path, "OpenLane annotation")
    limits = get_limits()
    try:
        extrinsic = np.asarray(data.get("extrinsic"), dtype=np.float64)
    except (TypeError, ValueError):
        extrinsic = np.zeros(0)
    if extrinsic.shape != (4, 4) or not np.isfinite(extrinsic).all():
        raise ValueError(f"{path}: field 'extrinsic' must be a finite 4 x 4 matrix")
    frame = Lane3DFrame(data["file_path"], visibility=[], extrinsic=extrinsic)
    for k, lane in enumerate(_lanes_field(data, "lane_lines", path, limits)):
        where = f"{path}: lane_lines[{k}]"
        if not isinstance(lane, dict) or "xyz" not in lane or "category" not in lane:
            raise ValueError(f"{where}: needs 'xyz' and 'category'")
        points = _points(lane["xyz"], f"{where}.xyz", transposed=True, limits=limits)
        visibility = np.asarray(lane.get("visibility", np.ones(points.shape[0])), dtype=np.float64).reshape(-1)
        if visibility.shape[0] != points.shape[0]:
            raise ValueError(f"{where}.visibility: {visibility.shape[0]} values for {points.shape[0]} points")
        frame.points.append(points)
        frame.visibility.append(visibility)  # type: ignore[union-attr]
        frame.categories.append(_category(lane["category"], where))
    return frame


def read_openlane_pred(path: str | Path) -> Lane3DFrame:
    """A prediction, official (``lane_lines``) or PersFormer (``laneLines`` + ``laneLines_prob``), ground frame.

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.io import read_openlane_pred
        >>> data = {"file_path": "a.jpg", "laneLines": [[[0, 5, 0], [0, 50, 0]], [[3, 5, 0], [3, 50, 0]]],
        ...         "laneLines_prob": [[0.1, 0.9], [0.6, 0.3]]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "a.json"), "w").write(json.dumps(data))
        ...     frame = read_openlane_pred(os.path.join(d, "a.json"))
        >>> len(frame.points), frame.categories
        (2, [1, 0])
    """
    data = _load(path, "OpenLane prediction")
    limits = get_limits()
    frame = Lane3DFrame(data["file_path"])
    if "lane_lines" in data:
        for k, lane in enumerate(_lanes_field(data, "lane_lines", path, limits)):
            where = f"{path}: lane_lines[{k}]"
            if not isinstance(lane, dict) or "xyz" not in lane or "category" not in lane:
                raise ValueError(f"{where}: needs 'xyz' and 'category'")
            frame.points.append(_points(lane["xyz"], f"{where}.xyz", transposed=False, limits=limits))
            frame.categories.append(_category(lane["category"], where))
        return frame
    if "laneLines" not in data or "laneLines_prob" not in data:
        raise ValueError(f"{path}: needs 'lane_lines' (official) or 'laneLines' and 'laneLines_prob' (PersFormer)")
    lanes = _lanes_field(data, "laneLines", path, limits)
    probs = _lanes_field(data, "laneLines_prob", path, limits)
    if len(probs) != len(lanes):
        raise ValueError(f"{path}: {len(lanes)} laneLines but {len(probs)} laneLines_prob")
    for k, (lane, prob) in enumerate(zip(lanes, probs, strict=True)):
        try:
            p = np.asarray(prob, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"{path}: laneLines_prob[{k}] is not a list of numbers") from None
        if p.size == 0 or not np.isfinite(p).all():
            raise ValueError(f"{path}: laneLines_prob[{k}] must be a non-empty list of finite numbers")
        if p.max() > PROB_THRESHOLD:
            frame.points.append(_points(lane, f"{path}: laneLines[{k}]", transposed=False, limits=limits))
            frame.categories.append(int(p.argmax()))
    return frame


@dataclass
class ScoredLanesFrame:
    """One frame of an Apollo 3D Lane Synthetic or ONCE-3DLanes file: ``points`` one ``(n, 3)`` float64 array per
    lane, ``scores`` one probability / score per lane (predictions) and ``visibility`` one ``(n,)`` array per lane
    (Apollo GT); ``name`` the frame's ``raw_file`` (Apollo) or ``<sequence>/cam01/<timestamp>.json`` (ONCE).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.io import ScoredLanesFrame
        >>> ScoredLanesFrame("images/00/1.jpg", [np.zeros((2, 3))], [0.5]).scores
        [0.5]
    """

    name: str
    points: list[np.ndarray] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    visibility: list[np.ndarray] | None = None


def _score(value: Any, where: str) -> float:
    """A lane score: a number, or a numeric string (the ONCE tool's ``np.float(score)`` accepts one)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: not a number: {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise ValueError(f"{where}: not a finite number: {value!r}")
    return number


def _apollo_lines(path: str | Path, what: str) -> list[dict[str, Any]]:
    text = read_text(path, what=what)
    out = []
    for k, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        data = load_json(line, f"{path}: line {k + 1}")
        if not isinstance(data, dict) or not isinstance(data.get("raw_file"), str):
            raise ValueError(f"{path}: line {k + 1}: expected a JSON object with a string 'raw_file'")
        out.append(data)
    if not out:
        raise ValueError(f"{path}: no frame ({what})")
    return out


def _apollo_frame(data: dict[str, Any], key: str, extra: str, where: str, gt: bool, limits: Limits) -> ScoredLanesFrame:
    lanes = data.get(key)
    values = data.get(extra)
    if not isinstance(lanes, list):
        raise ValueError(f"{where}: field '{key}' missing or not a list")
    if not isinstance(values, list) or len(values) != len(lanes):
        raise ValueError(f"{where}: field '{extra}' missing or not one entry per lane of '{key}'")
    if len(lanes) > limits.max_lane3d_lanes:
        check_count(len(lanes), "max_lane3d_lanes", where, f"lanes in '{key}'")
    frame = ScoredLanesFrame(data["raw_file"], visibility=[] if gt else None)
    for k, (lane, value) in enumerate(zip(lanes, values, strict=True)):
        points = _points(lane, f"{where}: {key}[{k}]", transposed=False, limits=limits)
        frame.points.append(points)
        if gt:
            try:
                vis = np.asarray(value, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: {extra}[{k}] is not a list of numbers") from None
            if vis.shape[0] != points.shape[0]:
                raise ValueError(f"{where}: {extra}[{k}]: {vis.shape[0]} values for {points.shape[0]} points")
            frame.visibility.append(vis)  # type: ignore[union-attr]
        else:
            frame.scores.append(_score(value, f"{where}: {extra}[{k}]"))
    return frame


def read_apollo_gt(path: str | Path) -> dict[str, tuple[ScoredLanesFrame, ScoredLanesFrame]]:
    """Gen-LaneNet's ``test.json`` (JSON lines): ``raw_file`` -> (lane lines, centre lines) with visibility.
    The last line of a ``raw_file`` wins, as the evaluator's dict.

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.io import read_apollo_gt
        >>> line = {"raw_file": "images/00/1.jpg", "laneLines": [[[1, 5, 0], [1, 50, 0]]],
        ...         "laneLines_visibility": [[1, 1]], "centerLines": [], "centerLines_visibility": []}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "test.json"), "w").write(json.dumps(line) + "\\n")
        ...     gt = read_apollo_gt(os.path.join(d, "test.json"))
        >>> gt["images/00/1.jpg"][0].points[0].tolist()
        [[1.0, 5.0, 0.0], [1.0, 50.0, 0.0]]
    """
    limits = get_limits()
    out = {}
    for k, data in enumerate(_apollo_lines(path, "Apollo GT")):
        where = f"{path}: line {k + 1}"
        lanes = _apollo_frame(data, "laneLines", "laneLines_visibility", where, True, limits)
        centers = _apollo_frame(data, "centerLines", "centerLines_visibility", where, True, limits)
        out[data["raw_file"]] = (lanes, centers)
    return out


def read_apollo_pred(path: str | Path) -> list[tuple[ScoredLanesFrame, ScoredLanesFrame]]:
    """Gen-LaneNet's prediction file (JSON lines, ``laneLines`` / ``laneLines_prob`` and ``centerLines`` /
    ``centerLines_prob``): (lane lines, centre lines) per line, in file order.

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.io import read_apollo_pred
        >>> line = {"raw_file": "images/00/1.jpg", "laneLines": [[[1, 5, 0], [1, 50, 0]]], "laneLines_prob": [0.9],
        ...         "centerLines": [], "centerLines_prob": []}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "pred.json"), "w").write(json.dumps(line) + "\\n")
        ...     preds = read_apollo_pred(os.path.join(d, "pred.json"))
        >>> preds[0][0].name, preds[0][0].scores
        ('images/00/1.jpg', [0.9])
    """
    limits = get_limits()
    out = []
    for k, data in enumerate(_apollo_lines(path, "Apollo prediction")):
        where = f"{path}: line {k + 1}"
        lanes = _apollo_frame(data, "laneLines", "laneLines_prob", where, False, limits)
        centers = _apollo_frame(data, "centerLines", "centerLines_prob", where, False, limits)
        out.append((lanes, centers))
    return out


def list_once_frames(gt_dir: str | Path) -> list[str]:
    """The frames of an ONCE-3DLanes GT folder, ``<sequence>/cam01/<timestamp>.json`` (sorted), as the tool's
    ``file_parser`` lists them (``cam01`` hard-coded).

    Examples:
        >>> import os, tempfile
        >>> from drivemetrics.lane3d.io import list_once_frames
        >>> with tempfile.TemporaryDirectory() as d:
        ...     os.makedirs(os.path.join(d, "000001", "cam01"))
        ...     _ = open(os.path.join(d, "000001", "cam01", "1.json"), "w").write("{}")
        ...     list_once_frames(d)
        ['000001/cam01/1.json']
    """
    root = Path(gt_dir)
    if not root.is_dir():
        raise ValueError(f"{gt_dir}: not a folder (ONCE-3DLanes GT)")
    names = []
    for sequence in sorted(p for p in root.iterdir() if p.is_dir()):
        cam = sequence / "cam01"
        if cam.is_dir():
            names += [f"{sequence.name}/cam01/{f.name}" for f in sorted(cam.iterdir()) if f.name.endswith(".json")]
    if not names:
        raise ValueError(f"{gt_dir}: no <sequence>/cam01/*.json file (ONCE-3DLanes GT)")
    return names


def read_once_file(path: str | Path, *, prediction: bool) -> ScoredLanesFrame:
    """An ONCE-3DLanes GT (``{"lanes": [[[x, y, z], ...], ...]}``) or prediction (``{"lanes": [{"points": [...],
    "score": s}, ...]}``) file, camera frame.

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.io import read_once_file
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "1.json"), "w").write(json.dumps({"lanes": [{"points": [[1, 1.6, 5]],
        ...                                                                         "score": "0.9"}]}))
        ...     frame = read_once_file(os.path.join(d, "1.json"), prediction=True)
        >>> frame.points[0].tolist(), frame.scores
        ([[1.0, 1.6, 5.0]], [0.9])
    """
    limits = get_limits()
    data = load_json(read_text(path, what="ONCE-3DLanes " + ("prediction" if prediction else "GT")), path)
    if not isinstance(data, dict) or not isinstance(data.get("lanes"), list):
        raise ValueError(f"{path}: field 'lanes' missing or not a list")
    lanes = data["lanes"]
    if len(lanes) > limits.max_lane3d_lanes:
        check_count(len(lanes), "max_lane3d_lanes", path, "lanes")
    frame = ScoredLanesFrame(str(path))
    for k, lane in enumerate(lanes):
        where = f"{path}: lanes[{k}]"
        if prediction:
            if not isinstance(lane, dict) or "points" not in lane or "score" not in lane:
                raise ValueError(f"{where}: needs 'points' and 'score'")
            frame.points.append(_points(lane["points"], f"{where}.points", transposed=False, limits=limits))
            frame.scores.append(_score(lane["score"], f"{where}.score"))
        else:
            frame.points.append(_points(lane, where, transposed=False, limits=limits))
    return frame
