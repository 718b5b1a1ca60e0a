"""Reading the native files of the two map evaluators, and packing samples into padded tensors.

Formats (all coordinates metres, ego frame):

- ``"maptr"``: MapTR's GT annotation JSON ``{"GTs": [{"sample_token", "vectors": [{"pts", "type", ...}]}]}`` and
  its ``results`` JSON ``{"results": [{"sample_token", "vectors": [{"pts", "type", "confidence_level"}]}]}``;
  ``type`` is the class id in MapTR's order (divider, ped_crossing, boundary).
- ``"av2"``: the CVPR 2023 Argoverse 2 challenge GT ``{segment_id: [{"timestamp", "annotation": {class: [line]}}]}``
  (points ``[x, y, z, visibility]``; visibility is dropped) and submission ``{"results": {timestamp: {"vectors",
  "scores", "labels"}}}`` with labels in the challenge's order (ped_crossing, divider, boundary).

Samples carry class *names*; :func:`pack_samples` turns them into the protocol's ids. Malformed input raises one
``ValueError`` naming the file, the sample and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from drivemetrics._files import read_text
from drivemetrics._limits import load_json

__all__ = [
    "AV2_CLASSES",
    "MAPTR_CLASSES",
    "MapSample",
    "detect_format",
    "pack_samples",
    "read_map_gt",
    "read_map_preds",
]

MAPTR_CLASSES = ("divider", "ped_crossing", "boundary")
AV2_CLASSES = ("ped_crossing", "divider", "boundary")
MapFormat = Literal["maptr", "av2"]


@dataclass
class MapSample:
    """One sample (frame): its polylines (``(P, D)`` arrays, metres), their class names and (predictions)
    confidences.

    Examples:
        >>> sample = MapSample("a", [np.array([[0.0, 0.0], [0.0, 10.0]])], ["divider"], [0.9])
        >>> sample.token, sample.points[0].shape, sample.labels
        ('a', (2, 2), ['divider'])
    """

    token: str
    points: list[np.ndarray] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


def _load(path: str | Path, what: str) -> Any:
    """The JSON document at ``path`` within the input limits (nesting, integer size, finite numbers).

    Every failure is one ``ValueError`` naming the file (``FileNotFoundError`` for a missing file). ``NaN`` /
    ``Infinity`` literals are read, so that the vector checks name the sample and field holding them.
    """
    file = Path(path)
    return load_json(read_text(file, what=what), file, allow_non_finite=True)


def detect_format(data: Any) -> MapFormat:
    """``"maptr"`` for a dict with ``GTs`` or a list under ``results``, else ``"av2"``."""
    if isinstance(data, dict) and ("GTs" in data or isinstance(data.get("results"), list)):
        return "maptr"
    return "av2"


def _points(value: Any, where: str, min_dims: int = 2) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: points must be a list of [x, y] coordinates") from None
    if array.ndim != 2 or array.shape[1] < min_dims or array.shape[0] < 1:
        raise ValueError(f"{where}: points must be a non-empty list of [x, y(, z)] rows, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{where}: points hold NaN or infinite values")
    return array


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: the score must be a finite number, got {value!r}")
    return float(value)


def _class_of(value: Any, classes: tuple[str, ...], where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(classes):
        raise ValueError(f"{where}: the class id must be an integer in [0, {len(classes) - 1}], got {value!r}")
    return classes[value]


def read_map_gt(path: str | Path, format: MapFormat | None = None) -> list[MapSample]:
    """GT samples of a MapTR annotation JSON or an Argoverse 2 challenge GT JSON, in file order.

    Examples:
        >>> import tempfile, json, os
        >>> gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [1, 0]], "type": 2}]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "gt.json"), "w").write(json.dumps(gt))
        ...     read_map_gt(os.path.join(d, "gt.json"))[0].labels
        ['boundary']
    """
    data = _load(path, "GT")
    kind = format or detect_format(data)
    samples: list[MapSample] = []
    if kind == "maptr":
        entries = data.get("GTs") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"{path}: a MapTR GT file holds {{'GTs': [sample, ...]}}")
        for i, entry in enumerate(entries):
            token = str(entry.get("sample_token", i)) if isinstance(entry, dict) else str(i)
            vectors = entry.get("vectors") if isinstance(entry, dict) else None
            if not isinstance(vectors, list):
                raise ValueError(f"{path}: sample {token}: `vectors` must be a list")
            sample = MapSample(token)
            for j, vector in enumerate(vectors):
                where = f"{path}: sample {token}: vectors[{j}]"
                if not isinstance(vector, dict):
                    raise ValueError(f"{where}: must be an object with `pts` and `type`")
                sample.points.append(_points(vector.get("pts"), f"{where}.pts"))
                sample.labels.append(_class_of(vector.get("type"), MAPTR_CLASSES, f"{where}.type"))
            samples.append(sample)
        return samples
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an Argoverse 2 GT file holds {{segment_id: [frame, ...]}}")
    for segment, frames in data.items():
        if not isinstance(frames, list):
            raise ValueError(f"{path}: segment {segment}: must be a list of frames")
        for k, frame in enumerate(frames):
            if not isinstance(frame, dict) or "timestamp" not in frame:
                raise ValueError(f"{path}: segment {segment} frame {k}: needs `timestamp` and `annotation`")
            token = str(frame["timestamp"])
            annotation = frame.get("annotation")
            if not isinstance(annotation, dict):
                raise ValueError(f"{path}: sample {token}: `annotation` must map class names to lines")
            sample = MapSample(token)
            for name in AV2_CLASSES:
                for j, line in enumerate(annotation.get(name, [])):
                    array = _points(line, f"{path}: sample {token}: annotation.{name}[{j}]")
                    sample.points.append(array[:, :3] if array.shape[1] >= 4 else array)
                    sample.labels.append(name)
            samples.append(sample)
    return samples


def read_map_preds(path: str | Path, format: MapFormat | None = None) -> list[MapSample]:
    """Prediction samples of a MapTR ``results`` JSON or an Argoverse 2 challenge submission, in file order.

    Examples:
        >>> import tempfile, json, os
        >>> vector = {"pts": [[0, 0], [1, 0]], "type": 0, "confidence_level": 0.8}
        >>> results = {"results": [{"sample_token": "a", "vectors": [vector]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "pred.json"), "w").write(json.dumps(results))
        ...     sample = read_map_preds(os.path.join(d, "pred.json"))[0]
        >>> sample.token, sample.labels, sample.scores
        ('a', ['divider'], [0.8])
    """
    data = _load(path, "prediction")
    kind = format or detect_format(data)
    results = data.get("results") if isinstance(data, dict) else None
    samples: list[MapSample] = []
    if kind == "maptr":
        if not isinstance(results, list):
            raise ValueError(f"{path}: a MapTR results file holds {{'results': [sample, ...]}}")
        for i, entry in enumerate(results):
            token = str(entry.get("sample_token", i)) if isinstance(entry, dict) else str(i)
            vectors = entry.get("vectors") if isinstance(entry, dict) else None
            if not isinstance(vectors, list):
                raise ValueError(f"{path}: sample {token}: `vectors` must be a list")
            sample = MapSample(token)
            for j, vector in enumerate(vectors):
                where = f"{path}: sample {token}: vectors[{j}]"
                if not isinstance(vector, dict):
                    raise ValueError(f"{where}: must be an object with `pts`, `type` and `confidence_level`")
                sample.points.append(_points(vector.get("pts"), f"{where}.pts"))
                sample.labels.append(_class_of(vector.get("type"), MAPTR_CLASSES, f"{where}.type"))
                sample.scores.append(_score(vector.get("confidence_level"), f"{where}.confidence_level"))
            samples.append(sample)
        return samples
    if not isinstance(results, dict):
        raise ValueError(f"{path}: an Argoverse 2 submission holds {{'results': {{timestamp: ...}}}}")
    for token, entry in results.items():
        where = f"{path}: sample {token}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: must hold `vectors`, `scores` and `labels`")
        vectors, scores, labels = entry.get("vectors"), entry.get("scores"), entry.get("labels")
        if not (isinstance(vectors, list) and isinstance(scores, list) and isinstance(labels, list)):
            raise ValueError(f"{where}: `vectors`, `scores` and `labels` must be lists")
        if not len(vectors) == len(scores) == len(labels):
            raise ValueError(
                f"{where}: `vectors`, `scores` and `labels` differ in length ({len(vectors)}, {len(scores)}, "
                f"{len(labels)})"
            )
        sample = MapSample(str(token))
        for j, (vector, score, label) in enumerate(zip(vectors, scores, labels, strict=True)):
            sample.points.append(_points(vector, f"{where}: vectors[{j}]"))
            sample.scores.append(_score(score, f"{where}: scores[{j}]"))
            sample.labels.append(_class_of(label, AV2_CLASSES, f"{where}: labels[{j}]"))
        samples.append(sample)
    return samples


def pack_samples(
    samples: list[MapSample],
    class_names: tuple[str, ...],
    dims: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> dict[str, Tensor]:
    """Pad samples into ``points (B, N, P, D)``, ``lengths (B, N)``, ``labels (B, N)``, ``scores (B, N)``.

    Args:
        samples: the frames, in order.
        class_names: the protocol's class names (ids are positions in it).
        dims: coordinates kept (default: the smallest of all lines); a line with fewer raises ``ValueError``.
        dtype: float dtype of points and scores.
        device: target device.

    Examples:
        >>> packed = pack_samples([MapSample("a", [np.zeros((3, 2))], ["boundary"], [0.5])], MAPTR_CLASSES)
        >>> packed["points"].shape, packed["labels"].tolist()
        (torch.Size([1, 1, 3, 2]), [[2]])
    """
    index = {name: i for i, name in enumerate(class_names)}
    lines = [(b, n, p) for b, s in enumerate(samples) for n, p in enumerate(s.points)]
    if dims is None:
        dims = min((p.shape[1] for _, _, p in lines), default=2)
    num_frames = len(samples)
    most = max((len(s.points) for s in samples), default=0)
    longest = max((p.shape[0] for _, _, p in lines), default=1)
    points = np.zeros((num_frames, most, longest, dims), dtype=np.float64)
    lengths = np.zeros((num_frames, most), dtype=np.int64)
    labels = np.zeros((num_frames, most), dtype=np.int64)
    scores = np.zeros((num_frames, most), dtype=np.float64)
    for sample_index, sample in enumerate(samples):
        for n, (array, name) in enumerate(zip(sample.points, sample.labels, strict=True)):
            if array.shape[1] < dims:
                raise ValueError(f"sample {sample.token}: line {n} has {array.shape[1]} coordinates, need {dims}")
            if name not in index:
                raise ValueError(f"sample {sample.token}: line {n} has class {name!r}, not one of {class_names}")
            points[sample_index, n, : array.shape[0]] = array[:, :dims]
            lengths[sample_index, n] = array.shape[0]
            labels[sample_index, n] = index[name]
        if sample.scores:
            scores[sample_index, : len(sample.scores)] = sample.scores
    return {
        "points": torch.from_numpy(points).to(dtype=dtype, device=device),
        "lengths": torch.from_numpy(lengths).to(device=device),
        "labels": torch.from_numpy(labels).to(device=device),
        "scores": torch.from_numpy(scores).to(dtype=dtype, device=device),
    }
