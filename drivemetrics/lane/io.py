"""Lane files: CULane ``.lines.txt`` files and list files, TuSimple JSON-lines files (read and written).

CULane: one ``<image>.lines.txt`` per image, one lane per line as ``x1 y1 x2 y2 ...`` (pixels). TuSimple: one JSON
object per line with ``raw_file``, ``lanes`` (x per ``h_samples`` row, ``-2`` = missing), ``h_samples`` and
optionally ``run_time``.
"""

from __future__ import annotations

import io
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from drivemetrics._internal.files import atomic_open, read_text
from drivemetrics._internal.limits import check_coordinates, check_count, get_limits, load_json
from drivemetrics._internal.validation import check_shape

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "TuSimpleRecords",
    "curvelanes_image_sizes",
    "frame_key",
    "jpeg_size",
    "lane_name",
    "pad_lanes",
    "read_culane_file",
    "read_culane_frames",
    "read_culane_lines",
    "read_culane_list",
    "read_curvelanes_label",
    "read_curvelanes_list",
    "read_curvelanes_pred",
    "read_llamas_keys",
    "read_llamas_label",
    "read_tusimple_json",
    "write_tusimple_json",
]


def read_culane_file(path: str | Path, missing_ok: bool = False) -> list[np.ndarray]:
    """Read a CULane ``.lines.txt`` file as the official tool does: one ``(n, 2)`` float64 array per text line.

    A blank line is a 0-point lane and a line ``x y`` a 1-point lane (the caller decides whether to keep them).
    Numbers are checked: a non-number, an odd count or a non-finite value raises ``ValueError`` naming the file and
    the 1-based line. ``missing_ok``: a missing file reads as no lanes (the official tool's behaviour for
    prediction files); otherwise ``FileNotFoundError``.
    """
    path = path if isinstance(path, Path) else Path(path)
    try:
        text = read_text(path, what="CULane lane file")
    except FileNotFoundError:
        if missing_ok:
            return []
        raise FileNotFoundError(f"CULane lane file not found: {path}") from None
    lines = text.splitlines()
    check_count(len(lines), "max_lanes_per_frame", path, "lines (lanes)")
    try:  # the common case, every line well formed: checked all at once
        lanes = [np.array(line.split(), dtype=np.float64) for line in lines]
    except ValueError:
        lanes = None
    if lanes is not None and lanes:
        values = np.concatenate(lanes)
        longest = max(lane.size for lane in lanes)
        limits = get_limits()
        if (
            not any(lane.size % 2 for lane in lanes)
            and longest // 2 <= limits.max_lane_points
            and bool((np.abs(values) <= limits.max_abs_coordinate).all())  # NaN fails too
        ):
            return [lane.reshape(-1, 2) for lane in lanes]
    elif lanes is not None:
        return []
    lanes = []  # line by line: the first bad line named
    for number, line in enumerate(lines, start=1):
        try:
            values = np.array(line.split(), dtype=np.float64)
        except ValueError:
            raise ValueError(f"{path}:{number}: expected numbers `x1 y1 x2 y2 ...`") from None
        if values.size % 2 or not np.isfinite(values).all():
            raise ValueError(f"{path}:{number}: a lane needs an even number of finite values `x y`")
        check_count(values.size // 2, "max_lane_points", f"{path}:{number}", "points in one lane")
        check_coordinates(values, f"{path}:{number}")
        lanes.append(values.reshape(-1, 2))
    return lanes


def read_culane_lines(path: str | Path) -> Tensor:
    """Read a CULane ``.lines.txt`` file into ``(L, P, 2)`` float64 points ``(x, y)``, NaN-padded (default mode).

    Lines with fewer than 2 points (blank lines included) are dropped with a warning that counts them; a
    non-number or an odd number of values raises ``ValueError`` naming the file and 1-based line number. An empty
    file gives ``(0, 0, 2)``. :func:`read_culane_file` keeps every line.
    """
    import torch

    lanes = read_culane_file(path)
    kept = [lane for lane in lanes if len(lane) >= 2]
    if len(kept) < len(lanes):
        warnings.warn(f"{path}: {len(lanes) - len(kept)} line(s) with fewer than 2 points dropped", stacklevel=2)
    return _stack_lanes([kept])[0] if kept else torch.zeros(0, 0, 2, dtype=torch.float64)


def read_culane_frames(names: Sequence[str], gt_dir: str | Path, pred_dir: str | Path) -> tuple[Tensor, ...]:
    """Read the GT and prediction files of frames into padded tensors, every text line a lane slot.

    Args:
        names: relative ``.lines.txt`` paths (as :func:`read_culane_list` gives them).
        gt_dir, pred_dir: folders holding them; a missing prediction file reads as a frame without lanes, a
            missing GT file raises ``FileNotFoundError``.

    Returns:
        ``(preds, preds_mask, target, target_mask)``: ``(B, L, P, 2)`` float64 points ``(x, y)`` NaN-padded and
        ``(B, L)`` bools of the lane slots read (also the lines of 0 or 1 point, which the scoring kernel scores
        or drops by its ``compat``), as :func:`drivemetrics.lane.culane.culane_matches` takes them.
    """
    gts = [read_culane_file(Path(gt_dir, n)) for n in names]
    preds = [read_culane_file(Path(pred_dir, n), missing_ok=True) for n in names]
    return _stack_lanes(preds), _lane_slots(preds), _stack_lanes(gts), _lane_slots(gts)


def pad_lanes(frames: list[list[np.ndarray]]) -> tuple[Tensor, Tensor]:
    """Per-frame lists of ``(n, 2)`` lanes -> ``(B, L, P, 2)`` NaN-padded float64 points and ``(B, L)`` bools of
    the lanes given (also those of 0 or 1 point), as the lane kernels take them."""
    return _stack_lanes(frames), _lane_slots(frames)


def _lane_slots(frames: list[list[np.ndarray]]) -> Tensor:
    """``(B, L)`` bools of the lanes of :func:`_stack_lanes` (``L`` as there)."""
    import torch

    n_lanes = max([len(f) for f in frames] + [1])
    return torch.arange(n_lanes)[None, :] < torch.tensor([len(f) for f in frames], dtype=torch.long)[:, None]


def _stack_lanes(frames: list[list[np.ndarray]]) -> Tensor:
    """``(B, L, P, 2)`` NaN-padded float64 tensor of per-frame lists of ``(n, 2)`` lanes."""
    import torch

    n_lanes = max([len(f) for f in frames] + [1])
    n_points = max([len(lane) for f in frames for lane in f] + [2])
    out = np.full((len(frames), n_lanes, n_points, 2), np.nan)
    for i, frame in enumerate(frames):
        for k, lane in enumerate(frame):
            out[i, k, : len(lane)] = lane
    return torch.from_numpy(out)


def lane_name(name: str) -> str:
    """List entry (``/driver_x/y/00000.jpg`` or ``.lines.txt``) -> relative ``.lines.txt`` path."""
    name = name.strip().lstrip("/")
    if not name.endswith(".lines.txt"):
        name = str(Path(name).with_suffix(".lines.txt"))
    return name


def frame_key(name: str) -> str:
    """Frame name: the list entry (or relative ``.lines.txt`` path) as spelled, without extension."""
    name = name.strip()
    if name.endswith(".lines.txt"):
        return name[: -len(".lines.txt")]
    return name[: len(name) - len(PurePosixPath(name).suffix)]


def read_culane_list(path: str | Path, as_written: bool = False) -> list[str]:
    """Relative ``.lines.txt`` paths of a CULane list file (one image per line, first column; blank lines skipped).

    ``as_written``: return the entries as spelled in the file (``/driver_x/y/00000.jpg``); given to
    :func:`evaluate_culane_dirs`, they name its per-image frames the list's way (``/driver_x/y/00000``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CULane list file not found: {path}")
    text = read_text(path, what="CULane list file")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ValueError(f"{path}:{line}: a NUL byte in the list (expected one image name per line)")
    names = [line.split()[0] for line in text.splitlines() if line.strip()]
    if not names:
        raise ValueError(f"{path}: the list names no images")
    return names if as_written else [lane_name(n) for n in names]


@dataclass
class TuSimpleRecords:
    """Lanes of a TuSimple JSON-lines file as padded tensors.

    Attributes:
        raw_files: image names (``raw_file``), one per line.
        lanes: ``(B, L, N)`` float64 x coordinates (pixels), NaN = missing (negative values in the file) or padding.
        lane_mask: ``(B, L)`` bool, True for lanes present in the file (also all-missing ones).
        h_samples: ``(B, N)`` float64 rows (pixels), NaN-padded; None when the file has none (predictions).
        run_time: ``B`` float64 milliseconds; None when the file has none (labels).
        lane_lengths: ``(B, L)`` long, number of values each lane has in the file (0 for padding).
        line_numbers: 1-based line of each record in the file.
    """

    raw_files: list[str]
    lanes: Tensor
    lane_mask: Tensor
    h_samples: Tensor | None
    run_time: Tensor | None
    lane_lengths: Tensor
    line_numbers: list[int]

    def __len__(self) -> int:
        return len(self.raw_files)


def check_record_size(line: str, where: str) -> None:
    """Refuse a record holding more numbers than ``max_lanes_per_frame`` lanes of ``max_lane_points`` values (and
    their ``h_samples``) could, counted from its commas before it is parsed."""
    limits = get_limits()
    most = (limits.max_lanes_per_frame + 1) * (limits.max_lane_points + 1) + 100
    values = line.count(",") + 1
    if values > most:
        raise ValueError(
            f"{where}: a record of about {values:,} values, more than max_lanes_per_frame={limits.max_lanes_per_frame} "
            f"lanes of max_lane_points={limits.max_lane_points:,} values (raise them with --limit NAME=N)"
        )


def check_lanes(lanes: object, where: str, max_points: int | None) -> None:
    """Refuse a record of more lanes, or a lane of more values, than the limits (before anything is padded)."""
    if not isinstance(lanes, list):
        return
    check_count(len(lanes), "max_lanes_per_frame", where, "lanes in one record")
    for i, lane in enumerate(lanes):
        if isinstance(lane, list):
            check_count(len(lane), "max_lane_points", where, f"values in lanes[{i}]")
            if max_points is not None and len(lane) > max_points:
                raise ValueError(
                    f"{where}: lanes[{i}] has {len(lane)} values but the labels' `h_samples` have at most "
                    f"{max_points} rows"
                )


def _number_list(value: object, where: str, what: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{where}: `{what}` must be a list of numbers")
    return [float(v) for v in value]


def read_tusimple_json(
    path: str | Path, require_h_samples: bool | None = None, max_points: int | None = None
) -> TuSimpleRecords:
    """Read a TuSimple JSON-lines file (labels or predictions) into padded tensors.

    Each non-empty line is a JSON object with ``raw_file`` and ``lanes`` (lists of x or ``-2``), and either
    ``h_samples`` (labels) or ``run_time`` (predictions, a scalar in ms). Every lane must have one value per
    ``h_samples`` row (checked here for labels, against the labels in :func:`evaluate_tusimple_files` for
    predictions).

    Args:
        path: file to read.
        require_h_samples: True for label files, False for prediction files, None to accept either.
        max_points: refuse a lane of more values (the labels' rows, for predictions), before padding the records
            to their longest lane; every file is also held to :class:`drivemetrics._internal.limits.Limits`
            (``max_lane_points``, ``max_lanes_per_frame``, JSON nesting and integer size).

    Raises:
        FileNotFoundError: missing file.
        ValueError: malformed line, naming the file and 1-based line number.
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"TuSimple file not found: {path}")
    raw_files: list[str] = []
    all_lanes: list[list[list[float]]] = []
    all_h: list[list[float] | None] = []
    all_rt: list[float | None] = []
    line_numbers: list[int] = []
    for number, line in enumerate(io.StringIO(read_text(path, what="TuSimple file")), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        check_record_size(line, where)
        record = load_json(line, where)
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object per line")
        for key in ("raw_file", "lanes"):
            if key not in record:
                raise ValueError(f"{where}: missing key `{key}`")
        if not isinstance(record["raw_file"], str):
            raise ValueError(f"{where}: `raw_file` must be a string")
        if not isinstance(record["lanes"], list):
            raise ValueError(f"{where}: `lanes` must be a list of lanes")
        check_lanes(record["lanes"], where, max_points)
        lanes = [_number_list(lane, where, f"lanes[{i}]") for i, lane in enumerate(record["lanes"])]
        h = None
        if "h_samples" in record:
            h = _number_list(record["h_samples"], where, "h_samples")
            check_count(len(h), "max_lane_points", where, "`h_samples` rows")
            if not h:
                raise ValueError(f"{where}: `h_samples` is empty")
            for i, lane in enumerate(lanes):
                if len(lane) != len(h):
                    raise ValueError(f"{where}: lanes[{i}] has {len(lane)} values but `h_samples` has {len(h)} rows")
        elif require_h_samples:
            raise ValueError(f"{where}: missing key `h_samples`")
        rt = None
        if "run_time" in record:
            rt_value = record["run_time"]
            if isinstance(rt_value, bool) or not isinstance(rt_value, (int, float)):
                raise ValueError(f"{where}: `run_time` must be a number (milliseconds)")
            rt = float(rt_value)
        elif require_h_samples is False:
            raise ValueError(f"{where}: missing key `run_time`")
        raw_files.append(record["raw_file"])
        line_numbers.append(number)
        all_lanes.append(lanes)
        all_h.append(h)
        all_rt.append(rt)
    if not raw_files:
        raise ValueError(f"{path}: no records")
    has_h = [h is not None for h in all_h]
    has_rt = [rt is not None for rt in all_rt]
    if any(has_h) and not all(has_h):
        raise ValueError(f"{path}:{line_numbers[has_h.index(False)]}: `h_samples` missing on some lines only")
    n = max([len(h) for h in all_h if h is not None] + [len(lane) for lanes in all_lanes for lane in lanes] + [1])
    num_lanes = max([len(lanes) for lanes in all_lanes] + [0])
    lanes_t = torch.full((len(raw_files), num_lanes, n), torch.nan, dtype=torch.float64)
    mask = torch.zeros((len(raw_files), num_lanes), dtype=torch.bool)
    lengths = torch.zeros((len(raw_files), num_lanes), dtype=torch.long)
    for b, lanes in enumerate(all_lanes):
        for i, lane in enumerate(lanes):
            values = torch.tensor(lane, dtype=torch.float64)
            lanes_t[b, i, : len(lane)] = torch.where(values >= 0, values, torch.nan)
            mask[b, i] = True
            lengths[b, i] = len(lane)
    h_t = None
    if all(has_h):
        h_t = torch.full((len(raw_files), n), torch.nan, dtype=torch.float64)
        for b, h in enumerate(all_h):
            h_t[b, : len(h)] = torch.tensor(h, dtype=torch.float64)
    rt_t = torch.tensor([rt if rt is not None else 0.0 for rt in all_rt], dtype=torch.float64) if any(has_rt) else None
    return TuSimpleRecords(raw_files, lanes_t, mask, h_t, rt_t, lengths, line_numbers)


def write_tusimple_json(
    path: str | Path,
    raw_files: Sequence[str],
    lanes: Tensor,
    lane_mask: Tensor | None = None,
    h_samples: Tensor | None = None,
    run_time: Tensor | Sequence[float] | None = None,
) -> None:
    """Write lanes as TuSimple JSON lines (NaN -> ``-2``, x rounded to 0.01 px as in the dataset).

    Args:
        path: output file.
        raw_files: ``B`` image names.
        lanes: ``(B, L, N)`` x coordinates (pixels), NaN = missing.
        lane_mask: optional ``(B, L)`` bools of lanes to write (default: lanes with a non-NaN value).
        h_samples: optional ``N`` or ``(B, N)`` rows (labels); NaN-padded rows are dropped with their values.
        run_time: optional ``B`` milliseconds (predictions).
    """
    import torch

    from drivemetrics.lane.geometry import lane_slot_mask

    check_shape(lanes, "lanes", (len(raw_files), "L", "N"))
    mask = lane_slot_mask(lanes, lane_mask, "lanes").cpu()
    values = lanes.detach().to("cpu", torch.float64)
    h = None
    if h_samples is not None:
        h = h_samples.detach().to("cpu", torch.float64)
        if h.ndim == 1:
            h = h.unsqueeze(0).expand(len(raw_files), -1)
        check_shape(h, "h_samples", (len(raw_files), lanes.shape[2]))
    times = None if run_time is None else [float(t) for t in torch.as_tensor(run_time).reshape(-1).tolist()]
    if times is not None and len(times) != len(raw_files):
        raise ValueError(f"`run_time` must have {len(raw_files)} values, got {len(times)}")
    with atomic_open(path, "w", encoding="utf-8") as handle:
        for b, name in enumerate(raw_files):
            keep = torch.ones(lanes.shape[2], dtype=torch.bool) if h is None else ~torch.isnan(h[b])
            record: dict[str, object] = {"raw_file": name}
            record["lanes"] = [
                [round(v, 2) if v == v else -2 for v in values[b, i][keep].tolist()]
                for i in range(lanes.shape[1])
                if mask[b, i]
            ]
            if h is not None:
                record["h_samples"] = [int(v) if float(v).is_integer() else v for v in h[b][keep].tolist()]
            if times is not None:
                record["run_time"] = times[b]
            handle.write(json.dumps(record) + "\n")


# ------------------------------------------------------------------------------------------------------------ LLAMAS


def read_llamas_keys(labels_dir: str | Path) -> list[str]:
    """Frame keys ``<seq>/<name>`` of the ``*.json`` labels under ``labels_dir`` (``labels/valid``), sorted.

    The key is the label's last two path components without ``.json`` (the evaluator's ``get_label_base``); two
    labels giving the same key raise ``ValueError``.
    """
    labels_dir = Path(labels_dir)
    if not labels_dir.is_dir():
        raise FileNotFoundError(f"LLAMAS label folder not found: {labels_dir}")
    keys: dict[str, Path] = {}
    for path in sorted(labels_dir.rglob("*.json")):
        key = "/".join(path.with_suffix("").parts[-2:])
        if key in keys:
            raise ValueError(f"{path}: same frame key {key!r} as {keys[key]}")
        keys[key] = path
    if not keys:
        raise ValueError(f"no `.json` labels under {labels_dir}")
    return list(keys)


def read_llamas_label(path: str | Path) -> dict:
    """A LLAMAS label JSON, checked: ``lanes`` of ``{"lane_id", "markers"}`` whose markers have ``pixel_start``,
    ``pixel_end`` (``x``, ``y`` numbers) and ``world_start``, ``world_end`` (``x``, ``y``, ``z``); bad structure
    raises ``ValueError`` naming the file."""
    path = path if isinstance(path, Path) else Path(path)
    try:
        text = read_text(path, what="LLAMAS label")
    except FileNotFoundError:
        raise FileNotFoundError(f"LLAMAS label not found: {path}") from None
    label = load_json(text, path)
    lanes = label.get("lanes") if isinstance(label, dict) else None
    if not isinstance(lanes, list):
        raise ValueError(f"{path}: expected an object with a list `lanes`")
    check_count(len(lanes), "max_lanes_per_frame", path, "lanes")
    if _llamas_label_is_plain(lanes, path):
        return label
    for i, lane in enumerate(lanes):  # the slow path names what is wrong
        if (
            not isinstance(lane, dict)
            or not isinstance(lane.get("lane_id"), str)
            or not isinstance(lane.get("markers"), list)
        ):
            raise ValueError(f"{path}: lanes[{i}] needs a string `lane_id` and a list `markers`")
        check_count(len(lane["markers"]), "max_lane_points", path, f"markers in lanes[{i}]")
        values = []
        for j, marker in enumerate(lane["markers"]):
            for key, axes in (("pixel_start", "xy"), ("pixel_end", "xy"), ("world_start", "xyz"), ("world_end", "xyz")):
                point = marker.get(key) if isinstance(marker, dict) else None
                if not isinstance(point, dict) or not all(_finite_number(point.get(a)) for a in axes):
                    raise ValueError(f"{path}: lanes[{i}].markers[{j}].{key} needs finite numbers {', '.join(axes)}")
                values.extend(float(point[a]) for a in axes)
        check_coordinates(np.array(values), f"{path}: lanes[{i}]")
    return label


_MARKER_AXES = (("pixel_start", "xy"), ("pixel_end", "xy"), ("world_start", "xyz"), ("world_end", "xyz"))


def _llamas_label_is_plain(lanes: list, path: Path) -> bool:
    """Whether every lane is well formed with int / float (finite) marker values within the limits, checked at
    once (the common case); ``False`` sends the label through the checks that name the first fault."""
    limits = get_limits()
    try:
        values = []
        for lane in lanes:
            markers = lane["markers"]
            if type(lane["lane_id"]) is not str or type(markers) is not list:
                return False
            if len(markers) > limits.max_lane_points:
                return False
            for m in markers:  # _MARKER_AXES, spelled out (the label's hot loop)
                ps, pe, ws, we = m["pixel_start"], m["pixel_end"], m["world_start"], m["world_end"]
                values += (ps["x"], ps["y"], pe["x"], pe["y"], ws["x"], ws["y"], ws["z"], we["x"], we["y"], we["z"])
    except (TypeError, KeyError):
        return False
    if not set(map(type, values)) <= {int, float}:  # no bool, str, None, ...
        return False
    # finite and within max_abs_coordinate (NaN and infinities fail the comparison)
    return bool((np.abs(np.array(values, dtype=np.float64)) <= limits.max_abs_coordinate).all())


def _finite_number(value: object) -> bool:
    if type(value) is int or (type(value) is float and math.isfinite(value)):  # the common case, fast
        return True
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return False
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)


# -------------------------------------------------------------------------------------------------------- CurveLanes


def read_curvelanes_list(valid_dir: str | Path) -> list[str]:
    """Frame names (image file names without ``.jpg``) of ``VALID_DIR/valid.txt`` (``images/<name>.jpg`` lines),
    or of the ``labels/*.lines.json`` files when there is no list."""
    valid_dir = Path(valid_dir)
    listing = valid_dir / "valid.txt"
    if listing.is_file():
        text = read_text(listing, what="CurveLanes list")
        names = [PurePosixPath(line.split()[0]).name for line in text.splitlines() if line.strip()]
        names = [n[: -len(PurePosixPath(n).suffix)] if PurePosixPath(n).suffix else n for n in names]
    else:
        names = sorted(p.name[: -len(".lines.json")] for p in (valid_dir / "labels").glob("*.lines.json"))
    if not names:
        raise ValueError(f"{valid_dir}: no frames (valid.txt or labels/*.lines.json)")
    return list(dict.fromkeys(names))


def _curvelanes_points(points: object, where: str) -> np.ndarray:
    if not isinstance(points, list):
        raise ValueError(f"{where}: a lane must be a list of points {{'x', 'y'}}")
    check_count(len(points), "max_lane_points", where, "points in one lane")
    try:
        values = np.array([[float(p["x"]), float(p["y"])] for p in points], dtype=np.float64).reshape(-1, 2)
    except (TypeError, KeyError, ValueError):
        raise ValueError(f"{where}: a lane point must be {{'x': number, 'y': number}}") from None
    if not np.isfinite(values).all():
        raise ValueError(f"{where}: lane points must be finite")
    check_coordinates(values, where)
    return values


def read_curvelanes_label(path: str | Path, compat: str = "default") -> tuple[list[np.ndarray], int]:
    """GT lanes of a ``.lines.json`` label (``{"Lines": [[{"x": "..", "y": ".."}, ...], ...]}``, numbers or numeric
    strings): ``((n, 2) float64 lanes, number of empty lanes skipped)``.

    An empty lane: the converter the papers use writes an empty text line that makes its reader raise, unless it
    is the last lane (then it vanishes); ``compat="reference"`` raises ``ValueError`` where that reader raises, the
    default skips every empty lane and counts it.
    """
    path = Path(path)
    try:
        text = read_text(path, what="CurveLanes label")
    except FileNotFoundError:
        raise FileNotFoundError(f"CurveLanes label not found: {path}") from None
    record = load_json(text, path)
    lines = record.get("Lines") if isinstance(record, dict) else None
    if not isinstance(lines, list):
        raise ValueError(f"{path}: expected an object with a list `Lines`")
    check_count(len(lines), "max_lanes_per_frame", path, "lanes")
    lanes = [_curvelanes_points(line, f"{path}: Lines[{i}]") for i, line in enumerate(lines)]
    empty = [i for i, lane in enumerate(lanes) if len(lane) == 0]
    if compat == "reference" and any(i < len(lanes) - 1 for i in empty):
        raise ValueError(
            f"{path}: Lines[{empty[0]}] is empty (the official label converter writes an empty line and parse_anno "
            "raises `could not convert string to float: ''`)"
        )
    return [lane for lane in lanes if len(lane)], len(empty)


def read_curvelanes_pred(path: str | Path) -> tuple[list[np.ndarray], list[float], tuple[float, float] | None]:
    """A CurveLanes prediction ``.lines.json`` (vega's ``predict_spec``): ``{"Shape": {"height", "width"}, "Lines":
    [{"score": s, "points": [{"x", "y"}, ...]} or [{"x", "y"}, ...], ...]}``.

    Returns ``(lanes, scores (NaN = unscored), (width, height) of Shape or None)``; a missing file raises
    ``FileNotFoundError``, bad structure ``ValueError`` naming the file.
    """
    path = Path(path)
    try:
        text = read_text(path, what="CurveLanes prediction")
    except FileNotFoundError:
        raise FileNotFoundError(f"CurveLanes prediction not found: {path}") from None
    record = load_json(text, path)
    lines = record.get("Lines") if isinstance(record, dict) else None
    if not isinstance(lines, list):
        raise ValueError(f"{path}: expected an object with a list `Lines`")
    check_count(len(lines), "max_lanes_per_frame", path, "lanes")
    shape = record.get("Shape")
    size = None
    if shape is not None:
        if not isinstance(shape, dict) or not all(_finite_number(shape.get(k)) for k in ("width", "height")):
            raise ValueError(f"{path}: `Shape` needs numbers `width` and `height`")
        size = (float(shape["width"]), float(shape["height"]))
        if min(size) <= 0:
            raise ValueError(f"{path}: `Shape` width and height must be > 0")
    lanes, scores = [], []
    for i, line in enumerate(lines):
        where = f"{path}: Lines[{i}]"
        score = math.nan
        if isinstance(line, dict):
            if "score" in line:
                if not _finite_number(line["score"]):
                    raise ValueError(f"{where}: `score` must be a number")
                score = float(line["score"])
            line = line.get("points", [])
        lanes.append(_curvelanes_points(line, where))
        scores.append(score)
    return lanes, scores, size


def jpeg_size(path: str | Path) -> tuple[int, int] | None:
    """``(width, height)`` of a JPEG file from its SOF header (reads the markers only), ``None`` if not a JPEG."""
    with open(path, "rb") as stream:
        if stream.read(2) != b"\xff\xd8":
            return None
        while True:
            byte = stream.read(1)
            while byte and byte != b"\xff":
                byte = stream.read(1)
            while byte == b"\xff":
                byte = stream.read(1)
            if not byte:
                return None
            marker = byte[0]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                continue
            head = stream.read(2)
            if len(head) < 2:
                return None
            length = int.from_bytes(head, "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                data = stream.read(5)
                if len(data) < 5:
                    return None
                return int.from_bytes(data[3:5], "big"), int.from_bytes(data[1:3], "big")
            stream.seek(length - 2, 1)


def curvelanes_image_sizes(
    valid_dir: str | Path, names: Sequence[str], image_size: tuple[float, float] | None = None
) -> dict[str, tuple[float, float]]:
    """``{name: (width, height)}``: from ``valid_dir/images/<name>.jpg`` headers when present, else from
    ``valid_dir/image_sizes.json`` (``{name: {"width", "height"}}``), else ``image_size`` for every frame; a frame
    with none of them raises ``ValueError``."""
    valid_dir = Path(valid_dir)
    table: dict = {}
    listed = valid_dir / "image_sizes.json"
    if listed.is_file():
        table = load_json(read_text(listed, what="CurveLanes image sizes"), listed)
        if not isinstance(table, dict):
            raise ValueError(f"{listed}: expected {{name: {{'width', 'height'}}}}")
    out = {}
    for name in names:
        jpg = valid_dir / "images" / f"{name}.jpg"
        size = jpeg_size(jpg) if jpg.is_file() else None
        if size is None and name in table:
            entry = table[name]
            if not isinstance(entry, dict) or not all(_finite_number(entry.get(k)) for k in ("width", "height")):
                raise ValueError(f"{listed}: {name!r} needs numbers `width` and `height`")
            size = (float(entry["width"]), float(entry["height"]))
        if size is None:
            size = image_size
        if size is None:
            raise ValueError(f"no image size for frame {name!r}: no {jpg}, no entry in {listed}; give --image-size WxH")
        if min(size) <= 0:
            raise ValueError(f"frame {name!r}: image size must be > 0, got {size}")
        out[name] = (float(size[0]), float(size[1]))
    return out
