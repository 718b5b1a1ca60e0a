"""Reading the native files of the two map evaluators, and packing samples into padded tensors.

Formats (all coordinates metres, ego frame):

- ``"maptr"``: MapTR's GT annotation JSON ``{"GTs": [{"sample_token", "vectors": [{"pts", "type", ...}]}]}`` and
  its ``results`` JSON ``{"results": [{"sample_token", "vectors": [{"pts", "type", "confidence_level"}]}]}``;
  ``type`` is the class id in MapTR's order (divider, ped_crossing, boundary).
- ``"streammapnet"``: StreamMapNet's GT cache (the ``tmp_gts_*.pkl`` its evaluator writes: ``{token: {label:
  [(P, 2) array]}}``, read by the restricted unpickler) or its JSON form ``{"gts": {token: {"<label>": [line]}}}``;
  the submission is the Argoverse 2 one below (labels ped_crossing 0, divider 1, boundary 2, StreamMapNet's
  ``cat2id``).
- ``"av2"``: the CVPR 2023 Argoverse 2 challenge GT ``{segment_id: [{"timestamp", "annotation": {class: [line]}}]}``
  (points ``[x, y, z, visibility]``; visibility is dropped) and submission ``{"results": {timestamp: {"vectors",
  "scores", "labels"}}}`` with labels in the challenge's order (ped_crossing, divider, boundary).

Samples carry class *names*; :func:`pack_samples` turns them into the protocol's ids. Malformed input raises one
``ValueError`` naming the file, the sample and the field: points must be finite numbers within
``max_map_coordinate`` metres, every line of a file must have the same number of coordinates (MapTR: 2 or 3),
scores must be numbers in [0, 1], and the sizes stay within ``max_map_frames`` samples, ``max_map_lines_per_frame``
lines and ``max_map_line_points`` points (see :mod:`drivemetrics._internal.limits`). A sample token may appear once
per file (a MapTR token twice, or an Argoverse 2 timestamp in two segments, is refused naming both places); in an
Argoverse 2 submission, a JSON object, a repeated timestamp key cannot be seen: as for every JSON object, the last
one counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.files import read_text
from drivemetrics._internal.gc_pause import gc_paused
from drivemetrics._internal.limits import check_count, check_map_points, get_limits, load_json
from drivemetrics.vectormap.protocol import ProtocolName, get_protocol

if TYPE_CHECKING:  # the readers need no torch (map-eval reads while torch imports); pack_samples imports it
    import torch
    from torch import Tensor

__all__ = [
    "AV2_CLASSES",
    "MAPTR_CLASSES",
    "MapFrame",
    "MapSample",
    "detect_format",
    "pack_samples",
    "read_map_files",
    "read_map_gt",
    "read_map_preds",
    "read_maptracker_samples",
    "read_streammapnet_gt",
]

MAPTR_CLASSES = ("divider", "ped_crossing", "boundary")
AV2_CLASSES = ("ped_crossing", "divider", "boundary")
MapFormat = Literal["maptr", "av2", "streammapnet"]
#: file format of each preset (the default protocol reads either, detected from the content)
PROTOCOL_FORMATS: dict[str, MapFormat] = {
    "nuscenes-maptr": "maptr",
    "av2-cvpr23": "av2",
    "streammapnet-60x30": "streammapnet",
    "streammapnet-100x50": "streammapnet",
}


@dataclass
class MapSample:
    """One sample (frame): its polylines (``(P, D)`` arrays, metres), their class names and (predictions)
    confidences.

    Examples:
        >>> from drivemetrics.vectormap import MapSample
        >>> import numpy as np
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


def _points(value: Any, where: str, dims: tuple[int, ...] = (2, 3)) -> np.ndarray:
    """One line's points as an ``(N, D)`` float64 array, ``D`` in ``dims``, checked against the map limits."""
    if isinstance(value, list):  # counted before converting anything
        check_count(len(value), "max_map_line_points", where, "points in one line")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{where}: points must be a list of [x, y] coordinates (numbers)") from None
    if array.ndim != 2 or array.shape[1] not in dims or array.shape[0] < 1:
        wanted = " or ".join(str(d) for d in dims)
        raise ValueError(
            f"{where}: points must be a non-empty list of rows of {wanted} numbers, got shape {array.shape}"
        )
    check_map_points(array, where)
    return array


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{where}: the score must be a number in [0, 1], got {str(value)[:40]!r}")
    return float(value)


def _check_frames(count: int, path: str | Path) -> None:
    check_count(count, "max_map_frames", path, "samples in one file")


def _check_lines(count: int, where: str) -> None:
    check_count(count, "max_map_lines_per_frame", where, "lines in one sample")


def _check_same_dims(samples: list[MapSample], path: str | Path, what: str) -> None:
    """Every line of a file has the coordinates of its first line (a 3-D line among 2-D ones would be cut)."""
    first: tuple[str, int, int] | None = None
    for sample in samples:
        for j, line in enumerate(sample.points):
            if first is None:
                first = (sample.token, j, line.shape[1])
            elif line.shape[1] != first[2]:
                raise ValueError(
                    f"{path}: sample {sample.token}: {what}[{j}] has {line.shape[1]} coordinates, but sample "
                    f"{first[0]} {what}[{first[1]}] has {first[2]}: every line of a file needs the same dimension"
                )


def _check_unique(tokens: list[tuple[str, str]], path: str | Path) -> None:
    """Refuse a token given twice: ``tokens`` lists ``(token, place)``; the message names both places."""
    seen: dict[str, str] = {}
    for token, place in tokens:
        if token in seen:
            raise ValueError(f"{path}: sample token {token} appears twice ({seen[token]} and {place})")
        seen[token] = place


def _class_of(value: Any, classes: tuple[str, ...], where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(classes):
        raise ValueError(f"{where}: the class id must be an integer in [0, {len(classes) - 1}], got {value!r}")
    return classes[value]


def _maptr_samples_fast(entries: list[Any], with_scores: bool) -> list[MapSample] | None:
    """The samples of a well-formed MapTR ``GTs`` / ``results`` list, every line's points converted in one numpy
    call; ``None`` at the first irregularity (the checked reader then names it). Same values as the checked path."""
    limits = get_limits()
    tokens: list[str] = []
    vectors_of: list[list[dict[str, Any]]] = []
    for i, entry in enumerate(entries):
        vectors = entry.get("vectors") if type(entry) is dict else None
        if type(vectors) is not list or not all(type(vector) is dict for vector in vectors):
            return None
        if len(vectors) > limits.max_map_lines_per_frame:
            return None
        tokens.append(str(entry.get("sample_token", i)))
        vectors_of.append(vectors)
    vectors_all = list(chain.from_iterable(vectors_of))
    pts: list[Any] = [vector.get("pts") for vector in vectors_all]
    types: list[Any] = [vector.get("type") for vector in vectors_all]
    if not all(type(line) is list and 0 < len(line) <= limits.max_map_line_points for line in pts):
        return None
    if not all(type(t) is int for t in types):
        return None
    try:
        flat = np.array(list(chain.from_iterable(pts)), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if flat.ndim != 2 or flat.shape[1] not in (2, 3) or not (np.abs(flat) <= limits.max_map_coordinate).all():
        return None  # also NaN
    if types and not 0 <= min(types) <= max(types) < len(MAPTR_CLASSES):
        return None
    scores: list[float] = []
    if with_scores:
        values = [vector.get("confidence_level") for vector in vectors_all]
        if not all(type(value) in (int, float) for value in values):
            return None
        array = np.array(values, dtype=np.float64)
        if not ((array >= 0.0) & (array <= 1.0)).all():
            return None
        scores = array.tolist()
    lines = _split_rows(flat, [len(line) for line in pts])
    names = [MAPTR_CLASSES[t] for t in types]
    return _group_samples(tokens, [len(vectors) for vectors in vectors_of], lines, names, scores)


def _group_samples(
    tokens: Sequence[str],
    lines_per_sample: Sequence[int],
    lines: list[np.ndarray],
    names: list[str],
    scores: list[float],
) -> list[MapSample]:
    """The per-line lists of every sample back to back (``lines``, ``names``, ``scores``), cut into one
    :class:`MapSample` per token, ``lines_per_sample[i]`` lines each."""
    samples, start = [], 0
    for token, count in zip(tokens, lines_per_sample, strict=True):
        stop = start + count
        samples.append(MapSample(token, lines[start:stop], names[start:stop], scores[start:stop]))
        start = stop
    return samples


def _split_rows(flat: np.ndarray, counts: list[int]) -> list[np.ndarray]:
    """``flat`` cut into consecutive row blocks of ``counts`` rows (views; ``np.split`` without its per-piece cost)."""
    stops = list(accumulate(counts))
    return [flat[start:stop] for start, stop in zip([0, *stops], stops, strict=False)]


def _flat_points(lines: list[Any], dims: tuple[int, ...]) -> np.ndarray | None:
    """All points of well-formed lines (lists of 1 to ``max_map_line_points`` rows) as one ``(N, D)`` float64 array
    within the coordinate limit, ``D`` in ``dims``; ``None`` at the first irregularity (the checked reader then
    names it): one numpy conversion instead of one per line, the same values."""
    limits = get_limits()
    if not all(type(line) is list and 0 < len(line) <= limits.max_map_line_points for line in lines):
        return None
    try:
        flat = np.array(list(chain.from_iterable(lines)), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if not lines:
        return np.zeros((0, dims[0]))
    if flat.ndim != 2 or flat.shape[1] not in dims or not (np.abs(flat) <= limits.max_map_coordinate).all():
        return None  # also NaN
    return flat


def _av2_gt_fast(data: Any) -> tuple[list[MapSample], list[tuple[str, str]]] | None:
    """The samples and places of a well-formed Argoverse 2 GT dict, all points converted at once (see
    :func:`_flat_points`); ``None`` at the first irregularity. Same values as :func:`_read_gt_checked`."""
    limits = get_limits()
    if type(data) is not dict or not all(type(frames) is list for frames in data.values()):
        return None
    if sum(len(frames) for frames in data.values()) > limits.max_map_frames:
        return None
    tokens, places, counts, lines, names = [], [], [], [], []
    for segment, frames in data.items():
        for k, frame in enumerate(frames):
            annotation = frame.get("annotation") if type(frame) is dict and "timestamp" in frame else None
            if type(annotation) is not dict:
                return None
            count = 0
            for name in AV2_CLASSES:
                class_lines = annotation.get(name, [])
                if type(class_lines) is not list:
                    return None
                lines.extend(class_lines)
                names.extend([name] * len(class_lines))
                count += len(class_lines)
            if count > limits.max_map_lines_per_frame:
                return None
            tokens.append(str(frame["timestamp"]))
            places.append((tokens[-1], f"segment {segment} frame {k}"))
            counts.append(count)
    flat = _flat_points(lines, (2, 3, 4))
    if flat is None:
        return None
    if flat.shape[1] == 4:
        flat = flat[:, :3]  # visibility dropped
    arrays = _split_rows(flat, [len(line) for line in lines])
    samples, start = [], 0
    for token, count in zip(tokens, counts, strict=True):
        samples.append(MapSample(token, arrays[start : start + count], names[start : start + count]))
        start += count
    return samples, places


def _av2_preds_fast(results: Any) -> list[MapSample] | None:
    """The samples of a well-formed Argoverse 2 submission's ``results`` dict, all points converted at once (see
    :func:`_flat_points`); ``None`` at the first irregularity. Same values as :func:`_read_preds_checked`."""
    limits = get_limits()
    if type(results) is not dict or len(results) > limits.max_map_frames:
        return None
    tokens, vectors_of, scores_of, labels_of = [], [], [], []
    for token, entry in results.items():
        if type(entry) is not dict:
            return None
        vectors, scores, labels = entry.get("vectors"), entry.get("scores"), entry.get("labels")
        if not (type(vectors) is list and type(scores) is list and type(labels) is list):
            return None
        if not len(vectors) == len(scores) == len(labels) or len(vectors) > limits.max_map_lines_per_frame:
            return None
        tokens.append(str(token))
        vectors_of.append(vectors)
        scores_of.append(scores)
        labels_of.append(labels)
    scores_all = list(chain.from_iterable(scores_of))
    labels_all = list(chain.from_iterable(labels_of))
    if not all(type(value) in (int, float) for value in scores_all) or not all(type(v) is int for v in labels_all):
        return None
    score_array = np.array(scores_all, dtype=np.float64)
    if not ((score_array >= 0.0) & (score_array <= 1.0)).all():
        return None
    if labels_all and not 0 <= min(labels_all) <= max(labels_all) < len(AV2_CLASSES):
        return None
    lines = list(chain.from_iterable(vectors_of))
    flat = _flat_points(lines, (2, 3))
    if flat is None:
        return None
    arrays = _split_rows(flat, [len(line) for line in lines])
    names = [AV2_CLASSES[label] for label in labels_all]
    scores = score_array.tolist()
    return _group_samples(tokens, [len(vectors) for vectors in vectors_of], arrays, names, scores)


def read_map_gt(path: str | Path, format: MapFormat | None = None) -> list[MapSample]:
    """GT samples of a MapTR annotation JSON or an Argoverse 2 challenge GT JSON, in file order.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap import read_map_gt
        >>> gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [1, 0]], "type": 2}]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "gt.json"), "w").write(json.dumps(gt))
        ...     read_map_gt(os.path.join(d, "gt.json"))[0].labels
        ['boundary']
    """
    if format == "streammapnet":
        return read_streammapnet_gt(path)
    # millions of small objects, freed before the collector resumes (else it would scan them all): see gc_paused
    with gc_paused():
        data = _load(path, "GT")
        kind = format or detect_format(data)
        samples = None
        if kind == "maptr":
            entries = data.get("GTs") if isinstance(data, dict) else None
            if not isinstance(entries, list):
                raise ValueError(f"{path}: a MapTR GT file holds {{'GTs': [sample, ...]}}")
            _check_frames(len(entries), path)
            samples = _maptr_samples_fast(entries, with_scores=False)
            del entries
        else:
            fast = _av2_gt_fast(data)
            if fast is not None:
                samples, places = fast
                _check_unique(places, path)  # what the checked reader checks last
        if samples is None:
            samples = _read_gt_checked(path, data, kind)
        del data
    if kind == "maptr":
        _check_unique([(s.token, f"GTs[{i}]") for i, s in enumerate(samples)], path)
        _check_same_dims(samples, path, "vectors")
    return samples


def _read_gt_checked(path: str | Path, data: Any, kind: MapFormat) -> list[MapSample]:
    """:func:`read_map_gt` element by element, naming the first malformed one."""
    samples: list[MapSample] = []
    if kind == "maptr":
        entries = data["GTs"]
        for i, entry in enumerate(entries):
            token = str(entry.get("sample_token", i)) if isinstance(entry, dict) else str(i)
            vectors = entry.get("vectors") if isinstance(entry, dict) else None
            if not isinstance(vectors, list):
                raise ValueError(f"{path}: sample {token}: `vectors` must be a list")
            _check_lines(len(vectors), f"{path}: sample {token}")
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
    places: list[tuple[str, str]] = []
    for segment, frames in data.items():
        if not isinstance(frames, list):
            raise ValueError(f"{path}: segment {segment}: must be a list of frames")
        _check_frames(len(places) + len(frames), path)
        for k, frame in enumerate(frames):
            if not isinstance(frame, dict) or "timestamp" not in frame:
                raise ValueError(f"{path}: segment {segment} frame {k}: needs `timestamp` and `annotation`")
            token = str(frame["timestamp"])
            annotation = frame.get("annotation")
            if not isinstance(annotation, dict):
                raise ValueError(f"{path}: sample {token}: `annotation` must map class names to lines")
            sample = MapSample(token)
            for name in AV2_CLASSES:
                lines = annotation.get(name, [])
                if not isinstance(lines, list):
                    raise ValueError(f"{path}: sample {token}: annotation.{name} must be a list of lines")
                _check_lines(len(sample.points) + len(lines), f"{path}: sample {token}")
                for j, line in enumerate(lines):
                    array = _points(line, f"{path}: sample {token}: annotation.{name}[{j}]", (2, 3, 4))
                    sample.points.append(array[:, :3] if array.shape[1] >= 4 else array)
                    sample.labels.append(name)
            samples.append(sample)
            places.append((token, f"segment {segment} frame {k}"))
    _check_unique(places, path)
    _check_same_dims(samples, path, "line")
    return samples


def read_map_preds(path: str | Path, format: MapFormat | None = None) -> list[MapSample]:
    """Prediction samples of a MapTR ``results`` JSON or an Argoverse 2 challenge submission, in file order.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap import read_map_preds
        >>> vector = {"pts": [[0, 0], [1, 0]], "type": 0, "confidence_level": 0.8}
        >>> results = {"results": [{"sample_token": "a", "vectors": [vector]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "pred.json"), "w").write(json.dumps(results))
        ...     sample = read_map_preds(os.path.join(d, "pred.json"))[0]
        >>> sample.token, sample.labels, sample.scores
        ('a', ['divider'], [0.8])
    """
    # millions of small objects, freed before the collector resumes (else it would scan them all): see gc_paused
    with gc_paused():
        data = _load(path, "prediction")
        kind = "av2" if format == "streammapnet" else format or detect_format(data)
        results = data.get("results") if isinstance(data, dict) else None
        samples = None
        if kind == "maptr":
            if not isinstance(results, list):
                raise ValueError(f"{path}: a MapTR results file holds {{'results': [sample, ...]}}")
            _check_frames(len(results), path)
            samples = _maptr_samples_fast(results, with_scores=True)
        else:
            samples = _av2_preds_fast(results)
        if samples is None:
            samples = _read_preds_checked(path, results, kind)
        del data, results
    if kind == "maptr":
        _check_unique([(s.token, f"results[{i}]") for i, s in enumerate(samples)], path)
    _check_same_dims(samples, path, "vectors")
    return samples


def _read_preds_checked(path: str | Path, results: Any, kind: MapFormat) -> list[MapSample]:
    """:func:`read_map_preds` element by element, naming the first malformed one."""
    samples: list[MapSample] = []
    if kind == "maptr":
        for i, entry in enumerate(results):
            token = str(entry.get("sample_token", i)) if isinstance(entry, dict) else str(i)
            vectors = entry.get("vectors") if isinstance(entry, dict) else None
            if not isinstance(vectors, list):
                raise ValueError(f"{path}: sample {token}: `vectors` must be a list")
            _check_lines(len(vectors), f"{path}: sample {token}")
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
    _check_frames(len(results), path)
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
        _check_lines(len(vectors), where)
        sample = MapSample(str(token))
        for j, (vector, score, label) in enumerate(zip(vectors, scores, labels, strict=True)):
            sample.points.append(_points(vector, f"{where}: vectors[{j}]"))
            sample.scores.append(_score(score, f"{where}: scores[{j}]"))
            sample.labels.append(_class_of(label, AV2_CLASSES, f"{where}: labels[{j}]"))
        samples.append(sample)
    return samples


def read_streammapnet_gt(path: str | Path) -> list[MapSample]:
    """GT samples of StreamMapNet's GT cache: the pickle its evaluator writes (``{token: {label: [(P, 2) array]}}``,
    read by the restricted unpickler: no code runs) or the same as JSON, bare or under ``"gts"`` (labels as
    strings), in the cache's token order (the evaluator's loop order). Labels are StreamMapNet's ``cat2id``
    (ped_crossing 0, divider 1, boundary 2); an element that is not a label, a list of lines or a line raises one
    ``ValueError`` naming the file, the token and the place.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap import read_streammapnet_gt
        >>> gts = {"gts": {"a": {"1": [[[0, 0], [0, 10]]], "0": [], "2": []}}}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "gts.json"), "w").write(json.dumps(gts))
        ...     sample = read_streammapnet_gt(os.path.join(d, "gts.json"))[0]
        >>> sample.token, sample.labels, sample.points[0].shape
        ('a', ['divider'], (2, 2))
    """
    from drivemetrics._internal.safe_pickle import safe_pickle_load

    file = Path(path)
    with file.open("rb") as handle:
        head = handle.read(1)
    with gc_paused():
        if head == b"\x80":  # a pickle (protocol 2 or later): StreamMapNet's cache as mmcv.dump writes it
            data = safe_pickle_load(file)
        else:
            data = _load(file, "GT")
            if isinstance(data, dict) and isinstance(data.get("gts"), dict):
                data = data["gts"]
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a StreamMapNet GT cache maps sample tokens to {{label: [line, ...]}}")
        _check_frames(len(data), path)
        samples: list[MapSample] = []
        for token, by_label in data.items():
            where = f"{path}: sample {token}"
            if not isinstance(by_label, dict):
                raise ValueError(f"{where}: must map labels (0, 1, 2) to lists of lines")
            sample = MapSample(str(token))
            for label, lines in by_label.items():
                try:
                    label_id = int(label)
                except (TypeError, ValueError):
                    label_id = -1
                if isinstance(label, bool) or not 0 <= label_id < len(AV2_CLASSES) or str(label_id) != str(label):
                    raise ValueError(f"{where}: label {str(label)[:20]!r} is not one of 0, 1, 2")
                if not isinstance(lines, (list, tuple)):
                    raise ValueError(f"{where}: label {label_id}: must be a list of lines")
                _check_lines(len(sample.points) + len(lines), where)
                for j, line in enumerate(lines):
                    value = line.tolist() if arrays.is_ndarray(line) else line
                    sample.points.append(_points(value, f"{where}: label {label_id}[{j}]", (2, 3)))
                    sample.labels.append(AV2_CLASSES[label_id])
            samples.append(sample)
    _check_same_dims(samples, path, "line")
    return samples


@dataclass
class MapFrame:
    """One frame of a scene for the temporal metrics: its token, scene, position in the scene and ego pose
    (ego -> global: ``translation (3,)`` metres and ``rotation (3, 3)``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap import MapFrame
        >>> frame = MapFrame("a", "scene-1", 0, np.zeros(3), np.eye(3))
        >>> frame.scene, frame.index, frame.rotation.shape
        ('scene-1', 0, (3, 3))
    """

    token: str
    scene: str
    index: int
    translation: np.ndarray
    rotation: np.ndarray


def _pose_part(value: Any, shape: tuple[int, ...], where: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{where}: must be numbers of shape {shape}") from None
    if array.shape != shape or not np.isfinite(array).all():
        raise ValueError(f"{where}: must be finite numbers of shape {shape}, got shape {array.shape}")
    return array


def read_maptracker_samples(path: str | Path) -> tuple[list[MapFrame], list[MapSample], tuple[int, int] | None]:
    """Frames (with ego poses) and GT samples of MapTracker's sample list: ``{"roi_size": [W, H], "samples":
    [{"token", "scene_name", "local_idx", "ego2global_translation", "ego2global_rotation", "map_geoms": {"<label>":
    [line]}}]}`` (labels: ped_crossing 0, divider 1, boundary 2), and the ``roi_size`` it names (``None`` when it
    names none). Frames keep the file's order; each scene's frames must be consecutive in it and in time order
    (``local_idx`` 0, 1, ...). Malformed input raises one ``ValueError`` naming the file, the sample and the field.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap import read_maptracker_samples
        >>> sample = {"token": "a", "scene_name": "s", "local_idx": 0, "ego2global_translation": [0, 0, 0],
        ...           "ego2global_rotation": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        ...           "map_geoms": {"1": [[[0, 0], [0, 10]]]}}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "samples.json"), "w").write(json.dumps({"samples": [sample]}))
        ...     frames, gt, roi = read_maptracker_samples(os.path.join(d, "samples.json"))
        >>> frames[0].scene, gt[0].labels, roi
        ('s', ['divider'], None)
    """
    with gc_paused():
        data = _load(path, "samples")
        entries = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"{path}: a MapTracker sample list holds {{'samples': [sample, ...]}}")
        _check_frames(len(entries), path)
        roi: tuple[int, int] | None = None
        if data.get("roi_size") is not None:
            value = data["roi_size"]
            if not (isinstance(value, list) and len(value) == 2 and all(type(v) in (int, float) for v in value)):
                raise ValueError(f"{path}: roi_size must be [W, H] in metres, got {str(value)[:40]!r}")
            roi = (int(value[0]), int(value[1]))
        frames: list[MapFrame] = []
        samples: list[MapSample] = []
        seen: dict[str, int] = {}
        scene_of_previous: str | None = None
        finished: set[str] = set()
        for i, entry in enumerate(entries):
            where = f"{path}: samples[{i}]"
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: must be an object with token, scene_name, local_idx, pose and map_geoms")
            token, scene, index = entry.get("token"), entry.get("scene_name"), entry.get("local_idx")
            if not isinstance(token, str) or not isinstance(scene, str):
                raise ValueError(f"{where}: `token` and `scene_name` must be strings")
            if token in seen:
                raise ValueError(f"{path}: sample token {token} appears twice (samples[{seen[token]}] and [{i}])")
            seen[token] = i
            if scene != scene_of_previous:
                if scene in finished:
                    raise ValueError(f"{where}: scene {scene}'s frames must be consecutive in the sample list")
                if scene_of_previous is not None:
                    finished.add(scene_of_previous)
                expected = 0
                scene_of_previous = scene
            else:
                expected = frames[-1].index + 1
            if isinstance(index, bool) or index != expected:
                raise ValueError(
                    f"{where}: local_idx must be {expected} (frames of a scene in time order), got {index!r}"
                )
            translation = _pose_part(entry.get("ego2global_translation"), (3,), f"{where}.ego2global_translation")
            rotation = _pose_part(entry.get("ego2global_rotation"), (3, 3), f"{where}.ego2global_rotation")
            geoms = entry.get("map_geoms", {})
            if not isinstance(geoms, dict):
                raise ValueError(f"{where}.map_geoms: must map labels (0, 1, 2) to lists of lines")
            sample = MapSample(token)
            for label in sorted(geoms, key=str):
                if str(label) not in ("0", "1", "2"):
                    raise ValueError(f"{where}.map_geoms: label {str(label)[:20]!r} is not one of 0, 1, 2")
                lines = geoms[label]
                if not isinstance(lines, list):
                    raise ValueError(f"{where}.map_geoms[{label}]: must be a list of lines")
                _check_lines(len(sample.points) + len(lines), where)
                for j, line in enumerate(lines):
                    array = _points(line, f"{where}.map_geoms[{label}][{j}]", (2, 3))
                    if array.shape[0] < 2:
                        raise ValueError(f"{where}.map_geoms[{label}][{j}]: a line needs 2 points or more")
                    sample.points.append(array[:, :2])
                    sample.labels.append(AV2_CLASSES[int(label)])
            frames.append(MapFrame(token, scene, int(index), translation, rotation))
            samples.append(sample)
    return frames, samples, roi


def read_map_files(
    gt_path: str | Path, pred_path: str | Path, protocol: ProtocolName = "default"
) -> tuple[list[MapSample], list[MapSample]]:
    """GT and prediction samples of two files in the protocol's native format (``"default"``: either, detected),
    checked as :func:`read_map_gt` and :func:`read_map_preds` check them, and predictions of no more coordinates
    than the GT where the protocol uses them as given. Needs no torch.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap.io import read_map_files
        >>> gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [0, 10]], "type": 0}]}]}
        >>> pred = {"results": [{"sample_token": "a",
        ...                      "vectors": [{"pts": [[1, 0], [1, 10]], "type": 0, "confidence_level": 0.9}]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for name, data in (("gt.json", gt), ("pred.json", pred)):
        ...         _ = open(os.path.join(d, name), "w").write(json.dumps(data))
        ...     gt_samples, pred_samples = read_map_files(os.path.join(d, "gt.json"), os.path.join(d, "pred.json"))
        >>> gt_samples[0].labels, pred_samples[0].scores
        (['divider'], [0.9])
    """
    proto = get_protocol(protocol)
    fmt = PROTOCOL_FORMATS.get(proto.name)
    gt = read_map_gt(gt_path, fmt)
    preds = read_map_preds(pred_path, fmt)
    gt_dims = min((p.shape[1] for s in gt for p in s.points), default=3)
    pred_dims = min((p.shape[1] for s in preds for p in s.points), default=2)
    if proto.dims == "as-given" and pred_dims > gt_dims:
        raise ValueError(f"{pred_path}: {pred_dims}-D predictions, but {gt_path} holds {gt_dims}-D lines")
    return gt, preds


def pack_samples(
    samples: list[MapSample],
    class_names: tuple[str, ...],
    dims: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> dict[str, Tensor]:
    """Pad samples into ``points (B, N, P, D)``, ``lengths (B, N)``, ``labels (B, N)``, ``scores (B, N)``.

    Args:
        samples: the frames, in order.
        class_names: the protocol's class names (ids are positions in it).
        dims: coordinates kept (default: the smallest of all lines); a line with fewer raises ``ValueError``.
        dtype: float dtype of points and scores (default ``torch.float64``).
        device: target device.

    Examples:
        >>> from drivemetrics.vectormap import pack_samples
        >>> from drivemetrics.vectormap import MapSample
        >>> import numpy as np
        >>> from drivemetrics.vectormap.io import MAPTR_CLASSES
        >>> packed = pack_samples([MapSample("a", [np.zeros((3, 2))], ["boundary"], [0.5])], MAPTR_CLASSES)
        >>> packed["points"].shape, packed["labels"].tolist()
        (torch.Size([1, 1, 3, 2]), [[2]])
    """
    import torch

    dtype = torch.float64 if dtype is None else dtype
    index = {name: i for i, name in enumerate(class_names)}
    lines = [p for s in samples for p in s.points]
    names = [name for s in samples for name in s.labels]
    line_counts = np.array([len(s.points) for s in samples], dtype=np.int64)
    if len(names) != len(lines):
        raise ValueError("every line of a sample needs one class name")
    line_dims = np.array([p.shape[1] for p in lines], dtype=np.int64)
    line_lengths = np.array([p.shape[0] for p in lines], dtype=np.int64)
    if dims is None:
        dims = int(line_dims.min()) if lines else 2
    label_ids = np.array([index.get(name, -1) for name in names], dtype=np.int64)
    bad = np.flatnonzero((line_dims < dims) | (label_ids < 0))
    if bad.size:  # the first malformed line, named by its sample and position
        first = int(bad[0])
        sample_index = int(np.searchsorted(np.cumsum(line_counts), first, side="right"))
        n = first - int(line_counts[:sample_index].sum())
        token = samples[sample_index].token
        if line_dims[first] < dims:
            raise ValueError(f"sample {token}: line {n} has {int(line_dims[first])} coordinates, need {dims}")
        raise ValueError(f"sample {token}: line {n} has class {names[first]!r}, not one of {class_names}")
    num_frames = len(samples)
    most = int(line_counts.max()) if num_frames else 0
    longest = int(line_lengths.max()) if lines else 1
    points = np.zeros((num_frames, most, longest, dims), dtype=np.float64)
    lengths = np.zeros((num_frames, most), dtype=np.int64)
    labels = np.zeros((num_frames, most), dtype=np.int64)
    scores = np.zeros((num_frames, most), dtype=np.float64)
    if lines:
        # slot of every line (frame, position in the frame), then of every point (line, position on the line)
        frame_of = np.repeat(np.arange(num_frames), line_counts)
        slot_of = np.arange(len(lines)) - np.repeat(np.cumsum(line_counts) - line_counts, line_counts)
        lengths[frame_of, slot_of] = line_lengths
        labels[frame_of, slot_of] = label_ids
        same_dims = bool((line_dims == dims).all())
        flat = np.concatenate(lines if same_dims else [p[:, :dims] for p in lines])
        point_line = np.repeat(np.arange(len(lines)), line_lengths)
        point_slot = np.arange(flat.shape[0]) - np.repeat(np.cumsum(line_lengths) - line_lengths, line_lengths)
        points[frame_of[point_line], slot_of[point_line], point_slot] = flat
    score_counts = np.array([len(s.scores) for s in samples], dtype=np.int64)
    if score_counts.sum():
        frame_of = np.repeat(np.arange(num_frames), score_counts)
        slot_of = np.arange(int(score_counts.sum())) - np.repeat(np.cumsum(score_counts) - score_counts, score_counts)
        scores[frame_of, slot_of] = np.array([v for s in samples for v in s.scores], dtype=np.float64)
    return {
        "points": torch.from_numpy(points).to(dtype=dtype, device=device),
        "lengths": torch.from_numpy(lengths).to(device=device),
        "labels": torch.from_numpy(labels).to(device=device),
        "scores": torch.from_numpy(scores).to(dtype=dtype, device=device),
    }
