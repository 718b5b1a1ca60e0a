"""Consistency-aware map AP (MapTracker's C-mAP): map elements tracked over a scene, a hit counts only for the
predicted track that claimed the GT track first.

The metric has three stages, as MapTracker's tools (commit ee8321f) run them:

1. GT tracks (``prepare_gt_tracks.py``): each frame's GT lines, resampled to 20 points, are rasterised on a
   200 x 100 canvas (ped crossings as filled polygons, other classes as polylines 3 pixels thick; masks under 20
   pixels dilated by a 7 x 7 ellipse); the previous frame's lines are moved into the current ego frame by the poses
   and rasterised too; per class the Hungarian assignment on the mask IoU links pairs with IoU > 0.01, and unlinked
   lines open new tracks (:func:`gt_track_ids`).
2. Prediction tracks (``prepare_pred_tracks.py``): predictions scoring above 0.4 are kept and linked the same way
   (IoU > 0.001) against each of the previous 5 frames; a prediction takes the id of its link in the nearest
   history frame whose id is still free in its frame, so an element missing for up to 4 frames comes back with
   its old id (:func:`pred_track_ids`).
3. Scoring (``calculate_cmap.py``): the greedy Chamfer matching of StreamMapNet per frame and threshold (200
   points); with the consistency rule, walking a scene's frames in order, the first predicted track matched to a
   GT track owns it for the rest of the scene, and a later match of another predicted track to it is a false
   positive (:func:`consistent_true_positive`); AP pooled per class over all scenes, C-mAP = mean over classes and
   thresholds. The plain mAP is the same without the rule.

``compat="reference"`` reproduces the tools' numbers, quirks included: GT resampled to 20 points, then to 200 (a
corner between the 20 samples is cut); the predictions of a frame without GT of their class are dropped (not
false positives); a token missing from the submission stops the evaluation (the tools raise ``KeyError``). The
default mode fixes these: GT resampled to 200 points directly, predictions without GT in their frame count as false
positives, a missing token is a frame without predictions. Neither mode caches anything (the tools reuse
``./tmp_gts_*.pkl`` of an earlier run). Track formation is the same in both (it defines the metric); the tools'
rasterisation (OpenCV lines, Pillow polygons) needs OpenCV (``pip install 'drivemetrics[culane]'``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics.vectormap.lines import FlatLines, greedy_flags, nearest_targets, resample_flat
from drivemetrics.vectormap.protocol import STREAM_RANGES, MapProtocol, get_protocol

if TYPE_CHECKING:
    from drivemetrics.vectormap.io import MapFrame, MapSample

__all__ = [
    "CMAP_CLASSES",
    "TrackSettings",
    "consistent_true_positive",
    "evaluate_cmap",
    "gt_track_ids",
    "pred_track_ids",
]

#: class names in label-id order (MapTracker's ``cat2id``)
CMAP_CLASSES = ("ped_crossing", "divider", "boundary")
Compat = Literal["default", "reference"]
Array = Any  # a numpy array or a torch tensor


@dataclass(frozen=True)
class TrackSettings:
    """Track formation settings (MapTracker's configs and command-line defaults).

    Attributes:
        canvas: raster ``(width, height)`` in pixels (both ranges).
        thickness: polyline thickness (pixels).
        track_points: points each line is resampled to before rasterising.
        gt_iou: IoU above which consecutive GT lines are linked.
        pred_iou: IoU above which predictions are linked.
        window: history frames a prediction is linked against (``--cons_frames``).
        min_score: predictions scoring above it are kept (``--thr``; ``score > min_score``).
        small_mask: masks with fewer pixels are dilated by a 7 x 7 ellipse.

    Examples:
        >>> from drivemetrics.vectormap import TrackSettings
        >>> TrackSettings().window, TrackSettings(window=3).window
        (5, 3)
    """

    canvas: tuple[int, int] = (200, 100)
    thickness: int = 3
    track_points: int = 20
    gt_iou: float = 0.01
    pred_iou: float = 0.001
    window: int = 5
    min_score: float = 0.4
    small_mask: int = 20


def _resample(lines: Sequence[np.ndarray], num: int) -> np.ndarray:
    """``(L, num, 2)`` lines resampled to ``num`` points at even arc length (GEOS ``interpolate`` values)."""
    if not lines:
        return np.zeros((0, num, 2))
    proto = MapProtocol("resample", ("x",), resample="count", num_samples=num)
    counts = np.array([len(line) for line in lines], dtype=np.int64)
    points = np.concatenate([np.asarray(line, dtype=np.float64)[:, :2] for line in lines])
    samples, _ = resample_flat(points, counts, proto)
    return samples.reshape(len(lines), num, 2)


def _relative_pose(prev: MapFrame, curr: MapFrame) -> np.ndarray:
    """``(4, 4)`` float64 previous ego -> current ego (the tools' ``get_prev2curr_matrix``)."""
    prev_e2g = np.eye(4)
    prev_e2g[:3, :3] = prev.rotation
    prev_e2g[:3, 3] = prev.translation
    curr_g2e = np.eye(4)
    curr_g2e[:3, :3] = curr.rotation.T
    curr_g2e[:3, 3] = -(curr.rotation.T @ curr.translation)
    return curr_g2e @ prev_e2g


class _Raster:
    """The tools' per-line masks: ``(N, H * W)`` bool, rows in line order."""

    def __init__(self, roi: tuple[int, int], settings: TrackSettings) -> None:
        from drivemetrics._internal.extras import require

        self.cv2 = require("culane", "cv2", "MapTracker's track formation (C-mAP)")
        self.roi = roi
        self.settings = settings
        self.kernel = self.cv2.getStructuringElement(self.cv2.MORPH_ELLIPSE, (7, 7))

    def masks(self, pixels: np.ndarray, polygon: bool) -> np.ndarray:
        """Masks of lines given in canvas pixels ``(N, P, 2)`` (float32 or float64, the tools' dtypes)."""
        from PIL import Image, ImageDraw

        width, height = self.settings.canvas
        out = np.zeros((len(pixels), height * width), dtype=bool)
        for k, coords in enumerate(pixels):
            if polygon:
                image = Image.new("L", size=(width, height), color=0)
                vertices = [(x, y) for x, y in coords]
                if not (coords[0] == coords[-1]).all():
                    vertices.append(vertices[0])
                ImageDraw.Draw(image).polygon(vertices, outline=1, fill=1)
                mask = np.ascontiguousarray(np.flipud(np.array(image)))
            else:
                canvas = np.zeros((height, width), dtype=np.uint8)
                self.cv2.polylines(
                    canvas, np.asarray([coords]).astype(np.int32), False, color=1, thickness=self.settings.thickness
                )
                mask = np.ascontiguousarray(np.flipud(canvas))
            if int(mask.sum()) < self.settings.small_mask:
                mask = self.cv2.dilate(mask, self.kernel, iterations=1)
            out[k] = mask.reshape(-1) > 0
        return out

    def current(self, normed: np.ndarray, polygon: bool) -> np.ndarray:
        """Masks of a frame's own lines, normalised ``(N, P, 2)`` float64 (denormalised in float64)."""
        roi = np.array(self.roi, dtype=np.float64)
        origin = -roi / 2
        canvas = np.array(self.settings.canvas, dtype=np.float64)
        metres = normed * roi + origin
        return self.masks((metres - origin) / roi * canvas, polygon)

    def warped(self, normed: np.ndarray, relative: np.ndarray, polygon: bool) -> np.ndarray:
        """Masks of the previous frame's normalised lines moved into the current frame (float64 transform, then
        float32 as the tools cast it, clipped to the ROI)."""
        roi = np.array(self.roi, dtype=np.float64)
        origin = -roi / 2
        metres = normed * roi + origin
        homogeneous = np.concatenate([metres, np.zeros_like(metres[..., :1]), np.ones_like(metres[..., :1])], -1)
        moved = np.einsum("lk,ijk->ijl", relative, homogeneous).astype(np.float32)
        roi32, origin32 = roi.astype(np.float32), origin.astype(np.float32)
        canvas32 = np.array(self.settings.canvas, dtype=np.float32)
        clipped = np.clip((moved[..., :2] - origin32) / roi32, np.float32(0), np.float32(1))
        back = clipped * roi32 + origin32
        return self.masks((back - origin32) / roi32 * canvas32, polygon)


_LSAP: list[Any] = []


def _linear_sum_assignment() -> Any:
    """scipy's ``linear_sum_assignment`` (``scipy.optimize`` re-exports it from its ``_lsap`` extension): that
    extension loaded alone where possible, which saves importing all of ``scipy.optimize`` (about 1 s)."""
    if not _LSAP:
        module = sys.modules.get("scipy.optimize")
        function = getattr(module, "linear_sum_assignment", None)
        if function is None:
            try:
                import importlib.machinery
                import importlib.util

                spec = importlib.util.find_spec("scipy")
                folder = Path(next(iter(spec.submodule_search_locations or []))) / "optimize"  # type: ignore[union-attr]
                file = next(folder.glob("_lsap.*"))
                loader = importlib.machinery.ExtensionFileLoader("scipy.optimize._lsap", str(file))
                extension = importlib.util.spec_from_file_location("scipy.optimize._lsap", file, loader=loader)
                loaded = importlib.util.module_from_spec(extension)  # type: ignore[arg-type]
                loader.exec_module(loaded)
                function = loaded.linear_sum_assignment
            except Exception:  # another layout: the public import
                from scipy.optimize import linear_sum_assignment

                function = linear_sum_assignment
        _LSAP.append(function)
    return _LSAP[0]


def _link(src: np.ndarray, tgt: np.ndarray, threshold: float) -> list[int]:
    """For each target mask, the source mask the Hungarian assignment on ``-IoU`` links it to (IoU above
    ``threshold``), else ``-1``.

    Where no row and no column holds two positive IoUs, every optimal assignment contains each positive pair
    (leaving one out costs its IoU, and the zeros around it gain nothing), so those pairs are the links without
    running the assignment; otherwise scipy's ``linear_sum_assignment`` decides, as in the tools."""
    reverse = [-1] * len(tgt)
    if not len(src) or not len(tgt):
        return reverse
    inter = (src.astype(np.float32) @ tgt.astype(np.float32).T).astype(np.int64)  # exact: counts < 2 ** 24
    union = src.sum(1)[:, None] + tgt.sum(1)[None, :] - inter
    iou = np.where(inter > 0, inter / np.maximum(union, 1), 0.0)
    positive = iou > 0
    if (positive.sum(0) <= 1).all() and (positive.sum(1) <= 1).all():
        rows, cols = np.nonzero(positive)
    else:
        rows, cols = _linear_sum_assignment()(-iou)
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        if iou[i, j] > threshold:
            reverse[j] = i
    return reverse


def _by_label(sample: MapSample) -> dict[int, list[np.ndarray]]:
    index = {name: i for i, name in enumerate(CMAP_CLASSES)}
    out: dict[int, list[np.ndarray]] = {0: [], 1: [], 2: []}
    for line, name in zip(sample.points, sample.labels, strict=True):
        out[index[name]].append(line)
    return out


def gt_track_ids(
    frames: Sequence[MapFrame],
    gt: Sequence[MapSample],
    roi: tuple[int, int],
    settings: TrackSettings | None = None,
) -> list[dict[int, list[int]]]:
    """GT track ids of one scene's frames (in time order): per frame, per class id, the id of each GT line (in the
    sample's order of that class), ids counted per class from 0 in order of first appearance.

    Consecutive frames only: a GT line linked (mask IoU > 0.01, Hungarian per class) to a line of the previous
    frame takes its id, any other line a new id.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.io import MapFrame, MapSample
        >>> from drivemetrics.vectormap.consistency import gt_track_ids
        >>> frames = [MapFrame(t, "s", k, np.array([2.0 * k, 0, 0]), np.eye(3)) for k, t in enumerate("ab")]
        >>> line = np.array([[-20.0, 1.0], [20.0, 1.0]])
        >>> gt = [MapSample("a", [line], ["divider"]), MapSample("b", [line, line + [0, 8]], ["divider"] * 2)]
        >>> gt_track_ids(frames, gt, (60, 30))
        [{0: [], 1: [0], 2: []}, {0: [], 1: [0, 1], 2: []}]
    """
    settings = settings or TrackSettings()
    raster = _Raster(roi, settings)
    roi_eps = np.array(roi, dtype=np.float64) + 1e-5
    origin = -np.array([roi[0] / 2, roi[1] / 2])
    normed = []
    for sample in gt:
        by_label = _by_label(sample)
        normed.append(
            {label: (_resample(lines, settings.track_points) - origin) / roi_eps for label, lines in by_label.items()}
        )
    ids: list[dict[int, list[int]]] = []
    counters = {0: 0, 1: 0, 2: 0}
    for t, frame_lines in enumerate(normed):
        frame_ids: dict[int, list[int]] = {}
        for label in (0, 1, 2):
            if t == 0:
                links = [-1] * len(frame_lines[label])
            else:
                relative = _relative_pose(frames[t - 1], frames[t])
                links = _link(
                    raster.warped(normed[t - 1][label], relative, label == 0),
                    raster.current(frame_lines[label], label == 0),
                    settings.gt_iou,
                )
            out = []
            for link in links:
                if link >= 0:
                    out.append(ids[t - 1][label][link])
                else:
                    out.append(counters[label])
                    counters[label] += 1
            frame_ids[label] = out
        ids.append(frame_ids)
    return ids


def pred_track_ids(
    frames: Sequence[MapFrame],
    preds: Sequence[MapSample],
    roi: tuple[int, int],
    settings: TrackSettings | None = None,
) -> list[dict[int, list[tuple[int, int]]]]:
    """Prediction track ids of one scene's frames (in time order): per frame, per class id, ``(index of the
    prediction in its sample, id)`` of each kept prediction (score above ``settings.min_score``) in the tools'
    order (ids taken from the history first, then new ids); ids counted per class from 0.

    Each frame's kept predictions are linked (mask IoU > 0.001, Hungarian per class) against each of the previous
    ``settings.window`` frames; a prediction takes the id of its link in the nearest history frame whose id is not
    yet taken in its frame, and a prediction without such a link a new id.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.io import MapFrame, MapSample
        >>> from drivemetrics.vectormap.consistency import pred_track_ids
        >>> frames = [MapFrame(t, "s", k, np.array([2.0 * k, 0, 0]), np.eye(3)) for k, t in enumerate("abc")]
        >>> line = np.array([[-20.0, 1.0], [20.0, 1.0]])
        >>> preds = [MapSample("a", [line], ["divider"], [0.9]), MapSample("b"),
        ...          MapSample("c", [line, line + [0, 8]], ["divider"] * 2, [0.8, 0.3])]
        >>> [frame[1] for frame in pred_track_ids(frames, preds, (60, 30))]
        [[(0, 0)], [], [(0, 0)]]
    """
    settings = settings or TrackSettings()
    raster = _Raster(roi, settings)
    roi_array = np.array(roi, dtype=np.float64)
    origin = -roi_array / 2
    kept: list[dict[int, list[int]]] = []
    normed: list[dict[int, np.ndarray]] = []
    own_masks: list[dict[int, np.ndarray]] = []
    index = {name: i for i, name in enumerate(CMAP_CLASSES)}
    for sample in preds:
        chosen: dict[int, list[int]] = {0: [], 1: [], 2: []}
        for k, (name, score) in enumerate(zip(sample.labels, sample.scores, strict=True)):
            if score > settings.min_score:
                chosen[index[name]].append(k)
        kept.append(chosen)
        lines = {
            label: (_resample([sample.points[k] for k in chosen[label]], settings.track_points) - origin) / roi_array
            for label in (0, 1, 2)
        }
        normed.append(lines)
        own_masks.append({label: raster.current(lines[label], label == 0) for label in (0, 1, 2)})
    ids: list[dict[int, dict[int, int]]] = []  # per frame, per class: local index -> id, in assignment order
    counters = {0: 0, 1: 0, 2: 0}
    for t in range(len(preds)):
        if t == 0:
            first: dict[int, dict[int, int]] = {}
            for label in (0, 1, 2):
                first[label] = {}
                for i in range(len(kept[t][label])):
                    first[label][i] = counters[label]
                    counters[label] += 1
            ids.append(first)
            continue
        history = range(max(t - settings.window, 0), t)
        candidates = []  # per history frame (farthest first): per class, per local index, the id or -1
        for h in history:
            relative = _relative_pose(frames[h], frames[t])
            per_label: dict[int, list[int]] = {}
            for label in (0, 1, 2):
                links = _link(
                    raster.warped(normed[h][label], relative, label == 0), own_masks[t][label], settings.pred_iou
                )
                per_label[label] = [ids[h][label][link] if link >= 0 else -1 for link in links]
            candidates.append(per_label)
        assigned: dict[int, dict[int, int]] = {0: {}, 1: {}, 2: {}}
        missing: dict[int, list[int]] = {0: [], 1: [], 2: []}
        for per_label in candidates[::-1]:  # nearest history frame first
            for label in (0, 1, 2):
                for local, track in enumerate(per_label[label]):
                    if local in assigned[label]:
                        continue
                    if track != -1 and track not in assigned[label].values():
                        assigned[label][local] = track
                        if local in missing[label]:
                            missing[label].remove(local)
                    else:
                        missing[label].append(local)
        for label in (0, 1, 2):
            for local in missing[label]:
                if local not in assigned[label]:
                    assigned[label][local] = counters[label]
                    counters[label] += 1
        ids.append(assigned)
    return [
        {label: [(kept[t][label][local], track) for local, track in ids[t][label].items()] for label in (0, 1, 2)}
        for t in range(len(preds))
    ]


def consistent_true_positive(
    true_positive: Array,
    scene: Array,
    frame: Array,
    labels: Array,
    pred_track: Array,
    gt_track: Array,
    *,
    validate_args: bool = True,
) -> Array:
    """MapTracker's consistency rule on matched predictions: a true positive stays one only if its predicted
    track is the first one (by ``frame``) that was matched to its GT track at that threshold in its scene.

    All arguments are numpy arrays or all torch tensors (any device); the result is of the same kind.

    Args:
        true_positive: ``(P, T)`` bool flags of the per-frame matching, ``T`` thresholds.
        scene: ``(P,)`` int scene id of each prediction.
        frame: ``(P,)`` int time order of its frame within the scene.
        labels: ``(P,)`` int class id.
        pred_track: ``(P,)`` int predicted track id (unique per scene and class within a frame).
        gt_track: ``(P,)`` int track id of the GT line it is matched to (any value where no flag is set).
        validate_args: check shapes and that a GT track is matched once per frame at most.

    Returns:
        ``(P, T)`` bool flags: ``true_positive`` with the matches of a GT track by any other track than its first
        owner turned into false positives (also after the owner has ended: no hand-over).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import consistent_true_positive
        >>> tp = torch.tensor([[True], [True], [True]])
        >>> ones = torch.zeros(3, dtype=torch.long)
        >>> consistent_true_positive(tp, ones, torch.tensor([0, 1, 2]), ones, torch.tensor([5, 6, 5]), ones)
        tensor([[ True],
                [False],
                [ True]])
    """
    if validate_args:
        if true_positive.ndim != 2:
            raise ValueError(f"`true_positive` must be (P, T), got shape {tuple(true_positive.shape)}")
        for name, value in (
            ("scene", scene),
            ("frame", frame),
            ("labels", labels),
            ("pred_track", pred_track),
            ("gt_track", gt_track),
        ):
            if tuple(value.shape) != tuple(true_positive.shape[:1]):
                raise ValueError(f"`{name}` must be ({true_positive.shape[0]},), got shape {tuple(value.shape)}")
    out = xp.where(true_positive, True, False)  # a copy
    columns = [xp.astype(value, "int64") for value in (scene, labels, gt_track, frame)]
    for t in range(true_positive.shape[1]):
        hit = xp.flatnonzero(true_positive[:, t])
        if not hit.shape[0]:
            continue
        key = xp.stack([column[hit] for column in columns], 1)
        order = xp.arange(hit.shape[0], like=hit)
        for column in (3, 2, 1, 0):  # lexicographic by (scene, class, GT track, frame): stable sorts, last key first
            order = order[xp.stable_descending_order(-key[order, column])]
        group_key = key[order, :3]
        start = xp.full(hit.shape[0], True, like=hit, dtype="bool")
        start[1:] = (group_key[1:] != group_key[:-1]).any(1)
        if validate_args:
            same_frame = ~start[1:] & (key[order[1:], 3] == key[order[:-1], 3])
            if bool(same_frame.any()):
                raise ValueError("`gt_track`: a GT track is matched twice in one frame (track ids must be unique)")
        group = xp.astype(start, "int64").cumsum(0) - 1
        tracks = pred_track[hit][order]
        out[hit[order], t] = tracks == tracks[start][group]
    return out


@dataclass
class _SceneData:
    name: str
    frames: list[Any] = field(default_factory=list)
    gt: list[Any] = field(default_factory=list)
    preds: list[Any] = field(default_factory=list)


def _scenes(frames: Sequence[MapFrame], gt: Sequence[MapSample], preds: Sequence[MapSample]) -> list[_SceneData]:
    """Frames grouped by scene, scenes sorted by name (the tools' order), frames in the given order."""
    by_name: dict[str, _SceneData] = {}
    for frame, target, pred in zip(frames, gt, preds, strict=True):
        by_name.setdefault(frame.scene, _SceneData(frame.scene))
        scene = by_name[frame.scene]
        scene.frames.append(frame)
        scene.gt.append(target)
        scene.preds.append(pred)
    return [by_name[name] for name in sorted(by_name)]


def _pool(
    rows_score: np.ndarray, rows_label: np.ndarray, flags: np.ndarray, num_gts: np.ndarray, thresholds: Sequence[float]
) -> dict[str, Any]:
    """Per-class AP per threshold (VOC area, float64), class APs (mean over thresholds) and mAP (sum / 9)."""
    from drivemetrics.vectormap.lines import ap_from_rows

    proto = MapProtocol("pool", CMAP_CLASSES, thresholds=tuple(thresholds), fallback=False, empty_class_ap="zero")
    rows = np.concatenate([rows_score[:, None], rows_label[:, None].astype(np.float64), flags.astype(np.float64)], 1)
    out = ap_from_rows(rows, num_gts, proto)
    per_class: dict[str, dict[str, float | int]] = {}
    for c, name in enumerate(CMAP_CLASSES):
        entry: dict[str, float | int] = {
            f"AP@{thr}": float(out["ap_per_threshold"][c, k]) for k, thr in enumerate(thresholds)
        }
        entry["AP"] = float(out["ap_per_threshold"][c].sum() / len(thresholds))
        entry["num_gts"] = int(num_gts[c])
        entry["num_preds"] = int(out["num_preds"][c])
        per_class[name] = entry
    total = float(out["ap_per_threshold"].sum() / out["ap_per_threshold"].size)
    return {"thresholds": list(thresholds), "per_class": per_class, "mAP": total}


@dataclass
class _SceneJob:
    index: int
    scene: _SceneData
    roi: str
    reference: bool
    presample: bool
    drop_without_gt: bool
    settings: TrackSettings
    details: bool


def _score_scene(job: _SceneJob) -> dict[str, Any]:
    """Stages 1-3 of one scene: ``rows (P, 5 + 2T)`` float64 (scene index, frame index, score, class id, scored
    flag, plain flags (T), consistent flags (T)), ``num_gts (3,)`` and (``details``) the track ids."""
    scene, settings = job.scene, job.settings
    thresholds = STREAM_RANGES[job.roi]
    roi_size = (int(job.roi.split("x")[0]), int(job.roi.split("x")[1]))
    num_points = get_protocol(f"maptracker-{job.roi}").num_samples  # type: ignore[arg-type]
    gt_ids = gt_track_ids(scene.frames, scene.gt, roi_size, settings)
    pred_ids = pred_track_ids(scene.frames, scene.preds, roi_size, settings)
    gt_lines: list[np.ndarray] = []
    gt_meta: list[tuple[int, int, int]] = []  # frame (in the scene), class, track
    pred_lines: list[np.ndarray] = []
    pred_meta: list[tuple[int, int, float, int]] = []  # frame, class, score, track
    overall: dict[Any, int] = {}
    tracks_out = []
    for k, (frame, target, pred) in enumerate(zip(scene.frames, scene.gt, scene.preds, strict=True)):
        by_label = _by_label(target)
        for label in (0, 1, 2):
            for j, line in enumerate(by_label[label]):
                gt_lines.append(np.asarray(line, dtype=np.float64))
                gt_meta.append((k, label, gt_ids[k][label][j]))
        tracks = []
        for label in (0, 1, 2):
            for local, track in pred_ids[k][label]:
                # the tools number tracks over classes by label * 100 + id (ids of 100 and more collide with the
                # next class's): kept for the reported ids in reference mode; the scoring keys on (class, id)
                key: Any = label * 100 + track if job.reference else (label, track)
                overall.setdefault(key, len(overall))
                score = float(pred.scores[local])
                tracks.append([label, score, overall[key]])
                pred_lines.append(pred.points[local])
                pred_meta.append((k, label, score, track))
        tracks_out.append({"token": frame.token, "local_idx": frame.index, "tracks": tracks})
    gt_info = np.array(gt_meta, dtype=np.int64).reshape(-1, 3)
    pred_frame = np.array([m[0] for m in pred_meta], dtype=np.int64)
    pred_label = np.array([m[1] for m in pred_meta], dtype=np.int64)
    pred_score = np.array([m[2] for m in pred_meta], dtype=np.float64)
    pred_track = np.array([m[3] for m in pred_meta], dtype=np.int64)
    # GT: 20 then 200 points (the tools) or 200 directly; predictions: 200
    gt_source = list(_resample(gt_lines, settings.track_points)) if job.presample else gt_lines
    gt_flat = _flat(_resample(gt_source, num_points), gt_info[:, 0], gt_info[:, 1])
    pred_flat = _flat(_resample(pred_lines, num_points), pred_frame, pred_label, pred_score)
    nearest_gt, nearest_distance = nearest_targets(pred_flat, gt_flat, 3, max(thresholds))
    flags = greedy_flags(pred_score, nearest_gt, nearest_distance, thresholds)
    has_gt = np.zeros((len(scene.frames), 3), dtype=bool)
    has_gt[gt_info[:, 0], gt_info[:, 1]] = True
    scored = has_gt[pred_frame, pred_label] if job.drop_without_gt else np.ones(len(pred_frame), dtype=bool)
    gt_track_of = np.full(len(pred_frame), -1, dtype=np.int64)
    matched = nearest_gt >= 0
    gt_track_of[matched] = gt_info[nearest_gt[matched], 2]
    consistent = consistent_true_positive(
        flags, np.zeros(len(pred_frame), dtype=np.int64), pred_frame, pred_label, pred_track, gt_track_of
    )
    frame_index = np.array([scene.frames[k].index for k in pred_frame.tolist()], dtype=np.float64)
    rows = np.concatenate(
        [
            np.full((len(pred_frame), 1), float(job.index)),
            frame_index[:, None],
            pred_score[:, None],
            pred_label[:, None].astype(np.float64),
            scored[:, None].astype(np.float64),
            flags.astype(np.float64),
            consistent.astype(np.float64),
        ],
        1,
    ).reshape(-1, 5 + 2 * len(thresholds))
    out: dict[str, Any] = {"rows": rows, "num_gts": np.bincount(gt_info[:, 1], minlength=3).astype(np.int64)}
    if job.details:
        out["gt_tracks"] = [{str(label): ids[label] for label in (0, 1, 2)} for ids in gt_ids]
        out["pred_tracks"] = tracks_out
    return out


def evaluate_cmap(
    frames: Sequence[MapFrame],
    gt: Sequence[MapSample],
    preds: Sequence[MapSample],
    roi: str = "60x30",
    compat: Compat = "default",
    settings: TrackSettings | None = None,
    details: bool = True,
    workers: int | None = 1,
    _rules: dict[str, bool] | None = None,
) -> dict[str, Any]:
    """C-mAP and plain mAP of a submission over scenes (:mod:`drivemetrics.vectormap.consistency`).

    Nothing is cached between calls. Under ``torchrun`` (the ``map-eval`` command) each rank scores the scenes
    ``rank, rank + world, ...`` (scenes sorted by name) and the rows are pooled on every rank; the track ids are
    then left out of the result.

    Args:
        frames: every GT frame (scene, position, ego pose), each scene's frames in time order.
        gt: the GT sample of each frame (same order), metres in the ego frame.
        preds: prediction samples, paired with ``frames`` by token; a frame without one is empty (default) or an
            error (``compat="reference"``, as the tools stop with ``KeyError``); tokens without a frame are ignored.
        roi: perception range, ``"60x30"`` or ``"100x50"`` (thresholds 0.5 / 1.0 / 1.5 or 1.0 / 1.5 / 2.0 m).
        compat: ``"reference"`` (MapTracker's tools, quirks included) or ``"default"`` (see the module).
        settings: track formation settings.
        details: also return the track ids and the per-frame flags.
        workers: processes scoring scenes (``None``: the pool's policy); the result does not depend on it.

    Returns:
        ``{"cmap": {...}, "plain": {...}}`` each ``{"thresholds", "per_class": {name: {"AP@<thr>", "AP",
        "num_gts", "num_preds"}}, "mAP"}`` (and ``"frames"`` with ``details``), ``"gt_tracks"`` and
        ``"pred_tracks"`` (the tools' numbering; ``details`` in one process), ``"missing_samples"``,
        ``"unknown_samples"``.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.io import MapFrame, MapSample
        >>> from drivemetrics.vectormap import evaluate_cmap
        >>> frames = [MapFrame(t, "s", k, np.array([2.0 * k, 0, 0]), np.eye(3)) for k, t in enumerate("abc")]
        >>> line = np.array([[-20.0, 1.0], [20.0, 1.0]])
        >>> gt = [MapSample(t, [line - [2.0 * k, 0]], ["divider"]) for k, t in enumerate("abc")]
        >>> preds = [MapSample("a", [line + [0, 0.2]], ["divider"], [0.9]),
        ...          MapSample("b", [line + [-2, 0.3], line + [-2, 9]], ["divider"] * 2, [0.5, 0.8]),
        ...          MapSample("c", [line + [-4, 0.2]], ["divider"], [0.7])]
        >>> result = evaluate_cmap(frames, gt, preds, "60x30", details=False)
        >>> result["plain"]["per_class"]["divider"]["AP@0.5"], result["cmap"]["per_class"]["divider"]["AP@0.5"]
        (0.8333333333333333, 0.8333333333333333)
    """
    from drivemetrics._internal.pool import map_in_processes

    if roi not in STREAM_RANGES:
        raise ValueError(f"`roi` must be one of {tuple(STREAM_RANGES)}, got {roi!r}")
    if compat not in ("default", "reference"):
        raise ValueError(f"`compat` must be 'default' or 'reference', got {compat!r}")
    if len(frames) != len(gt):
        raise ValueError(f"`frames` and `gt` differ in length ({len(frames)}, {len(gt)})")
    settings = settings or TrackSettings()
    rules = _rules or {}  # one fix at a time, to measure each (tests, docs): "presample", "drop_without_gt"
    reference = compat == "reference"
    thresholds = STREAM_RANGES[roi]
    by_token = {sample.token: sample for sample in preds}
    frame_tokens = {frame.token for frame in frames}
    missing = [frame.token for frame in frames if frame.token not in by_token]
    if missing and reference:
        raise ValueError(
            f"sample {missing[0]} has no entry in the submission (MapTracker's tools stop with KeyError; "
            "the default mode scores it as a frame without predictions)"
        )
    from drivemetrics.vectormap.io import MapSample as _Sample

    paired = [by_token.get(frame.token, _Sample(frame.token)) for frame in frames]
    scenes = _scenes(frames, gt, paired)
    world, rank = 1, 0

    if "drivemetrics._internal.distributed" in sys.modules:  # under torchrun: this rank's scenes
        shard = sys.modules["drivemetrics._internal.distributed"].current_shard()
        world, rank = shard.world, shard.rank
    mine = list(range(rank, len(scenes), world))
    jobs = [
        _SceneJob(
            i,
            scenes[i],
            roi,
            reference,
            rules.get("presample", reference),
            rules.get("drop_without_gt", reference),
            settings,
            details and world == 1,
        )
        for i in mine
    ]
    parts = list(map_in_processes(_score_scene, jobs, workers))
    width = 5 + 2 * len(thresholds)
    rows = np.concatenate([np.zeros((0, width))] + [part["rows"] for part in parts])
    num_gts = np.zeros(3, dtype=np.int64)
    for part in parts:
        num_gts += part["num_gts"]
    if world > 1:
        rows, num_gts = _gather(rows, num_gts, mine)
    scored = rows[:, 4] > 0.5
    num_t = len(thresholds)
    result: dict[str, Any] = {}
    for mode, columns in (("cmap", slice(5 + num_t, 5 + 2 * num_t)), ("plain", slice(5, 5 + num_t))):
        flags = rows[:, columns] > 0.5
        block = _pool(rows[scored, 2], rows[scored, 3].astype(np.int64), flags[scored], num_gts, thresholds)
        if details:
            block["frames"] = _frames(scenes, rows, flags, scored, thresholds)
        result[mode] = block
    if details and world == 1:
        result["gt_tracks"] = {scenes[job.index].name: part["gt_tracks"] for job, part in zip(jobs, parts, strict=True)}
        result["pred_tracks"] = {
            scenes[job.index].name: part["pred_tracks"] for job, part in zip(jobs, parts, strict=True)
        }
    result["missing_samples"] = missing
    result["unknown_samples"] = [sample.token for sample in preds if sample.token not in frame_tokens]
    return result


def _gather(rows: np.ndarray, num_gts: np.ndarray, mine: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every rank's rows (in scene order) and the summed GT counts, under torchrun."""
    import torch

    from drivemetrics._internal.distributed import current_shard
    from drivemetrics._internal.ragged import RaggedRows

    shard = current_shard()
    scene_of = rows[:, 0].astype(np.int64)
    lengths = torch.tensor([int((scene_of == i).sum()) for i in mine], dtype=torch.int64)
    order = np.argsort(scene_of, kind="stable")
    frames = shard.gather_frames(mine, rows=RaggedRows(torch.from_numpy(rows[order]), lengths))
    total = shard.sum(torch.from_numpy(num_gts))
    return frames.fields["rows"].rows.cpu().numpy(), total.cpu().numpy()


def _flat(lines: np.ndarray, frame: np.ndarray, labels: np.ndarray, scores: np.ndarray | None = None) -> FlatLines:
    num, points = lines.shape[0], lines.shape[1] if lines.ndim == 3 else 0
    return FlatLines(
        lines.reshape(-1, 2),
        np.full(num, points, dtype=np.int64),
        frame.astype(np.int64),
        labels.astype(np.int64),
        np.zeros(0) if scores is None else scores,
    )


def _frames(
    scenes: list[_SceneData],
    rows: np.ndarray,
    flags: np.ndarray,
    scored: np.ndarray,
    thresholds: Sequence[float],
) -> dict[str, dict[str, dict[str, list[list[float | int]]]]]:
    """``{"<scene>/<frame>": {"<label>": {"<thr>": [[score, tp], ...]}}}`` of the scored predictions, by
    descending score."""
    out: dict[str, dict[str, dict[str, list[list[float | int]]]]] = {
        f"{scene.name}/{frame.index}": {str(label): {str(thr): [] for thr in thresholds} for label in (0, 1, 2)}
        for scene in scenes
        for frame in scene.frames
    }
    chosen = np.flatnonzero(scored)
    order = chosen[np.argsort(-rows[chosen, 2], kind="stable")]
    for p in order.tolist():
        entry = out[f"{scenes[int(rows[p, 0])].name}/{int(rows[p, 1])}"][str(int(rows[p, 3]))]
        for t, thr in enumerate(thresholds):
            entry[str(thr)].append([float(rows[p, 2]), int(flags[p, t])])
    return out
