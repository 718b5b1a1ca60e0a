"""KITTI object files: label / result lines, result folders, calibration, and the sensor projections.

A label line has 15 space-separated columns (devkit ``readme.txt``), a result line a 16th, the score::

    type truncated occluded alpha x1 y1 x2 y2 h w l x y z rotation_y [score]

``x1 y1 x2 y2`` is the 2D box in pixels, ``h w l`` the 3D box size in metres, ``x y z`` the center of the box's
**bottom face** in rectified camera-0 coordinates (x right, y down, z forward) and ``rotation_y`` the yaw around
the camera y axis. Invalid fields use the devkit's defaults (alpha -10, size -1, location -1000, rotation -10).

A calibration file holds ``P0`` .. ``P3`` (3 x 4), ``R0_rect`` (3 x 3), ``Tr_velo_to_cam`` and ``Tr_imu_to_velo``
(3 x 4). A velodyne point maps to the left colour image as ``P2 @ R0_rect @ Tr_velo_to_cam @ [x, y, z, 1]``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from drivemetrics._internal.files import decode_text, present_file, read_text
from drivemetrics._internal.limits import check_count, get_limits, short_repr
from drivemetrics._internal.progress import progress_bar

if TYPE_CHECKING:  # torch is imported where a function needs it: reading and parsing label files run without it
    import torch
    from torch import Tensor

__all__ = [
    "KITTI_OBJECT_CALIB_KEYS",
    "KittiObjects",
    "ObjectTable",
    "box3d_corners",
    "camera_to_image",
    "format_kitti_objects",
    "parse_kitti_objects",
    "read_kitti_object_calib",
    "read_kitti_object_folder",
    "read_kitti_objects",
    "read_object_table",
    "velodyne_to_camera",
    "velodyne_to_image",
    "write_kitti_object_calib",
    "write_kitti_object_folder",
    "write_kitti_objects",
]

#: The seven keys of a KITTI object calibration file, in file order.
KITTI_OBJECT_CALIB_KEYS: tuple[str, ...] = ("P0", "P1", "P2", "P3", "R0_rect", "Tr_velo_to_cam", "Tr_imu_to_velo")

_NUMERIC_COLUMNS = 14  # every column after the type, without the score


@dataclass
class KittiObjects:
    """The objects of one frame (one label or result file); arrays are float64 numpy, ``N`` rows.

    Attributes:
        type: ``N`` class names as written in the file (``Car``, ``Van``, ``DontCare``, ...).
        truncated: ``N`` truncation in [0, 1] (-1 for DontCare).
        occluded: ``N`` occlusion level 0..3 (-1 for DontCare).
        alpha: ``N`` observation angle in radians (-10: not given).
        bbox: ``(N, 4)`` 2D box ``x1, y1, x2, y2`` in pixels.
        dimensions: ``(N, 3)`` 3D size ``h, w, l`` in metres (the file's order).
        location: ``(N, 3)`` bottom-face center ``x, y, z`` in rectified camera coordinates, metres.
        rotation_y: ``N`` yaw around the camera y axis in radians.
        score: ``N`` confidences (results), or ``None`` (labels).
    """

    type: list[str]
    truncated: np.ndarray
    occluded: np.ndarray
    alpha: np.ndarray
    bbox: np.ndarray
    dimensions: np.ndarray
    location: np.ndarray
    rotation_y: np.ndarray
    score: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.type)

    @classmethod
    def empty(cls, with_score: bool = False) -> KittiObjects:
        """A frame without objects."""
        return cls.from_array([], np.zeros((0, 15 if with_score else _NUMERIC_COLUMNS)))

    @classmethod
    def from_array(cls, types: Sequence[str], values: np.ndarray) -> KittiObjects:
        """Build from ``N`` type names and an ``(N, 14)`` (label) or ``(N, 15)`` (result) array of numeric columns."""
        values = np.asarray(values, dtype=np.float64)
        if (
            values.ndim != 2
            or values.shape[0] != len(types)
            or values.shape[1] not in (_NUMERIC_COLUMNS, _NUMERIC_COLUMNS + 1)
        ):
            raise ValueError(f"expected {len(types)} x 14 or {len(types)} x 15 numeric values, got {values.shape}")
        return cls(
            type=list(types),
            truncated=values[:, 0].copy(),
            occluded=values[:, 1].copy(),
            alpha=values[:, 2].copy(),
            bbox=values[:, 3:7].copy(),
            dimensions=values[:, 7:10].copy(),
            location=values[:, 10:13].copy(),
            rotation_y=values[:, 13].copy(),
            score=values[:, 14].copy() if values.shape[1] == 15 else None,
        )

    def _rows(self, start: int, stop: int) -> KittiObjects:
        """The objects ``start:stop`` (their arrays are views of this one's)."""
        return KittiObjects(
            type=self.type[start:stop],
            truncated=self.truncated[start:stop],
            occluded=self.occluded[start:stop],
            alpha=self.alpha[start:stop],
            bbox=self.bbox[start:stop],
            dimensions=self.dimensions[start:stop],
            location=self.location[start:stop],
            rotation_y=self.rotation_y[start:stop],
            score=None if self.score is None else self.score[start:stop],
        )

    def to_array(self) -> np.ndarray:
        """The numeric columns as an ``(N, 14)`` (or ``(N, 15)`` with scores) float64 array, in file order."""
        cols = [
            (self.truncated, 1),
            (self.occluded, 1),
            (self.alpha, 1),
            (self.bbox, 4),
            (self.dimensions, 3),
            (self.location, 3),
            (self.rotation_y, 1),
        ]
        if self.score is not None:
            cols.append((self.score, 1))
        return np.concatenate([np.asarray(c, dtype=np.float64).reshape(len(self), w) for c, w in cols], axis=1)

    def with_score(self, score: float | np.ndarray) -> KittiObjects:
        """A copy carrying ``score`` (a constant or ``N`` values), e.g. to submit labels as detections."""
        scores = np.broadcast_to(np.asarray(score, dtype=np.float64), (len(self),)).copy()
        return KittiObjects.from_array(
            self.type, np.concatenate([self.to_array()[:, :_NUMERIC_COLUMNS], scores[:, None]], 1)
        )


def parse_kitti_objects(text: str, source: str = "<string>", with_score: bool | None = None) -> KittiObjects:
    """Parse the text of a label (15 columns) or result (16 columns) file.

    Columns may be separated by any whitespace; blank lines are skipped.

    Args:
        text: the file content.
        source: the file name used in error messages.
        with_score: ``True`` requires 16 columns (a result file), ``False`` 15 (a label file); ``None`` accepts
            either, but the same count on every line.

    Raises:
        ValueError: a line with a wrong column count or a non-number, naming ``source`` and the line number.
    """
    return _parse_texts([text], [source], with_score)[0]


def _parse_lines(text: str, source: str, with_score: bool | None) -> KittiObjects:
    """:func:`parse_kitti_objects` line by line: any file, and the message of the first bad line."""
    expected = None if with_score is None else (16 if with_score else 15)
    # line by line: the general case, and the exact message of the first bad line
    types: list[str] = []
    rows: list[list[float]] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if not fields:
            continue
        if expected is None:
            if len(fields) not in (15, 16):
                raise ValueError(
                    f"{source}:{line_no}: expected 15 (label) or 16 (result) columns, got {len(fields)}: "
                    f"{short_repr(raw)}"
                )
            expected = len(fields)
        if len(fields) != expected:
            what = "result (with score)" if expected == 16 else "label"
            raise ValueError(f"{source}:{line_no}: expected {expected} columns for a {what} line, got {len(fields)}")
        try:
            rows.append([float(v) for v in fields[1:]])
        except ValueError as err:
            raise ValueError(
                f"{source}:{line_no}: columns 2..{expected} must be numbers: {short_repr(raw.strip())}"
            ) from err
        if not all(np.isfinite(rows[-1])):
            raise ValueError(f"{source}:{line_no}: non-finite number in {short_repr(raw.strip())}")
        types.append(fields[0])
    width = (expected if expected is not None else (16 if with_score else 15)) - 1
    return KittiObjects.from_array(types, np.asarray(rows, dtype=np.float64).reshape(len(rows), width))


#: The bytes of the one-table fast path: printable ASCII, space, tab and newline (so that ``str.split`` and
#: ``str.splitlines`` cut exactly where the byte scan does).
_PLAIN_BYTES = np.zeros(256, dtype=bool)
_PLAIN_BYTES[[9, 10, *range(32, 127)]] = True


def _parse_plain_table(
    texts: Sequence[str] | Sequence[bytes], with_score: bool | None
) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """The objects of ``texts`` (strings, or the files' bytes) as one table ``(types, values, rows per file)`` when
    they are plain ASCII and every non-blank line of every file has the same valid column count and finite numbers
    (the usual folder): one scan of the bytes for the fields and the column counts, the numbers read as ``float``
    reads them (:func:`_parse_numbers`). ``None`` otherwise (then :func:`_parse_texts` goes file by file)."""
    if texts and isinstance(texts[0], str):
        text = "\n".join(texts) + "\n"  # type: ignore[arg-type]
        if not text.isascii():
            return None
        joined = text.encode("ascii")
    else:
        joined = b"\n".join(texts) + b"\n"  # type: ignore[arg-type]
    data = np.frombuffer(joined, dtype=np.uint8)
    if not _PLAIN_BYTES[data].all():  # plain ASCII: bytes and text split alike, no carriage return to translate
        return None
    blank = data <= 32  # space, tab or newline
    field_start = np.flatnonzero(~blank & np.concatenate([[True], blank[:-1]]))
    newline = np.flatnonzero(data == 10)
    line_of_field = np.searchsorted(newline, field_start)  # a newline ends its line (the text ends with one)
    fields_per_line = np.bincount(line_of_field, minlength=len(newline))
    filled = fields_per_line > 0
    widths = np.unique(fields_per_line[filled])
    if len(widths) > 1:
        return None
    expected = None if with_score is None else (16 if with_score else 15)
    width = int(widths[0]) if len(widths) else (expected or 15)
    if width != expected and (expected is not None or width not in (15, 16)):
        return None
    newline_char = "\n" if isinstance(texts[0], str) else b"\n"
    lines_per_file = np.array([t.count(newline_char) + 1 for t in texts], dtype=np.int64)  # type: ignore[arg-type]
    file_of_line = np.repeat(np.arange(len(texts)), lines_per_file)
    rows_per_file = np.bincount(file_of_line[filled], minlength=len(texts))
    starts = field_start.reshape(-1, width)
    stops = np.flatnonzero(~blank & np.concatenate([blank[1:], [True]])).reshape(-1, width) + 1
    first = zip(starts[:, 0].tolist(), stops[:, 0].tolist(), strict=True)
    types = b" ".join([joined[a:b] for a, b in first]).decode("ascii").split(" ") if len(starts) else []
    values = _parse_numbers(joined, starts[:, 1:].ravel(), stops[:, 1:].ravel())
    if values is None or not np.isfinite(values).all():
        return None
    values = values.reshape(-1, width - 1)
    return types, values, rows_per_file


#: ``10.0 ** k`` for ``k`` = 0..15, each exact in float64.
_POWERS_OF_TEN = np.array([float(10**k) for k in range(16)])
_MAX_DIGITS = 15  # a mantissa of at most 15 digits is below 2 ** 53: exact in float64
_MAX_TOKEN = _MAX_DIGITS + 2  # with a sign and a decimal point


def _parse_numbers(text: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray | None:
    """``float(text[a:b])`` for every token ``(a, b)``, bit for bit; ``None`` if one is not a number.

    Plain decimals (``-?digits[.digits]``, at most 15 digits: what a KITTI file holds) are read a character column
    at a time for all tokens together: the digits give the integer mantissa ``m`` and the digits after the point
    ``k``, and the value is ``m / 10**k``. Both are exact in float64 (``m < 2**53``, ``k <= 15``), so the one
    rounding of the division gives the correctly rounded value of the decimal, which is what ``float`` returns
    (``-0.00`` gives ``-0.0`` as well). Any other token (an exponent, ``+``, ``inf``, more digits) goes to
    ``float`` itself. The work is bounded by the number of tokens times 17 columns.
    """
    data = np.frombuffer(text + b" " * _MAX_TOKEN, dtype=np.uint8)  # the columns of the last token stay inside
    length = stops - starts
    count = len(starts)
    mantissa: np.ndarray = np.zeros(count)
    decimals = np.zeros(count, dtype=np.int64)
    digits = np.zeros(count, dtype=np.int64)
    after_point = np.zeros(count, dtype=bool)
    negative = data[starts] == 45  # "-"
    other = length > _MAX_TOKEN
    for column in range(int(min(length.max(initial=0), _MAX_TOKEN))):
        char = data[starts + column]
        inside = column < length
        digit = char - np.uint8(48)
        is_digit = (digit < 10) & inside
        is_point = (char == 46) & inside
        other |= is_point & after_point  # a second point
        other |= inside & ~is_digit & ~is_point & (~negative if column == 0 else True)
        after_point |= is_point
        mantissa = np.where(is_digit, mantissa * 10 + digit, mantissa)
        decimals += is_digit & after_point
        digits += is_digit
    other |= (digits == 0) | (digits > _MAX_DIGITS)
    values = mantissa / _POWERS_OF_TEN[np.minimum(decimals, _MAX_DIGITS)]
    values = np.where(negative, -values, values)
    for i in np.flatnonzero(other).tolist():
        try:
            values[i] = float(text[starts[i] : stops[i]])
        except ValueError:
            return None
    return values


def _split_table(types: list[str], values: np.ndarray, rows_per_file: np.ndarray) -> list[KittiObjects]:
    """The frames of one table (each column contiguous; the frames are slices of them)."""
    stops = np.cumsum(rows_per_file).tolist()
    starts = [0, *stops[:-1]]
    whole = KittiObjects.from_array(types, values)
    return [whole._rows(a, b) for a, b in zip(starts, stops, strict=True)]


def _parse_texts(texts: Sequence[str], sources: Sequence[str], with_score: bool | None) -> list[KittiObjects]:
    """:func:`parse_kitti_objects` of many files at once.

    The usual file, every non-blank line with the same valid column count, joins one table per column count whose
    numbers are converted by one numpy cast (the correctly rounded parse of ``float``); the other files, and those
    of a table with a bad or non-finite number, go line by line (:func:`_parse_lines`), which raises for the first
    bad line of the first bad file. The objects are the same either way.
    """
    if len(texts) > 1:
        plain = _parse_plain_table(texts, with_score)
        if plain is not None:
            return _split_table(*plain)
    expected = None if with_score is None else (16 if with_score else 15)
    out: list[KittiObjects | None] = [None] * len(texts)
    tables: dict[int, tuple[list[list[str]], list[tuple[int, int, int]]]] = {}  # width -> (rows, (file, start, stop))
    for i, text in enumerate(texts):
        fields = [f for f in map(str.split, text.splitlines()) if f]
        widths = set(map(len, fields))
        width = widths.pop() if len(widths) == 1 else 0
        if width != expected and (expected is not None or width not in (15, 16)):
            out[i] = _parse_lines(text, sources[i], with_score)  # empty, mixed or wrong column counts
            continue
        rows, members = tables.setdefault(width, ([], []))
        members.append((i, len(rows), len(rows) + len(fields)))
        rows.extend(fields)
    for rows, members in tables.values():
        table = np.array(rows)
        try:
            values = table[:, 1:].astype(np.float64)
            finite = np.isfinite(values).all(axis=1)
        except ValueError:
            finite = None
        types = table[:, 0].tolist()
        for i, start, stop in members:
            if finite is None or not finite[start:stop].all():
                out[i] = _parse_lines(texts[i], sources[i], with_score)
            else:
                out[i] = KittiObjects.from_array(types[start:stop], values[start:stop])
    return out  # type: ignore[return-value]


def _check_object_count(data: bytes, path: str, limit: int | None = None) -> None:
    """Refuse a file of more than ``max_objects_per_frame`` objects (non-blank lines), before it is parsed
    (``limit``: that limit, read once by a caller that checks many files)."""
    limit = get_limits().max_objects_per_frame if limit is None else limit
    if data.count(b"\n") >= limit:  # cheap bound first; then the non-blank lines
        check_count(
            sum(1 for line in data.splitlines() if line.strip()), "max_objects_per_frame", path, "objects in one frame"
        )


def read_kitti_objects(path: str | Path, with_score: bool | None = None) -> KittiObjects:
    """Read one label or result file (see :func:`parse_kitti_objects`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a malformed line (the message names the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"KITTI object file not found: {path}")
    text = read_text(path, what="KITTI object file")
    _check_object_count(text.encode("utf-8", "replace"), str(path))
    return parse_kitti_objects(text, source=str(path), with_score=with_score)


def format_kitti_objects(objects: KittiObjects, decimals: int = 2) -> str:
    """The file text of ``objects``: one line per object, numbers with ``decimals`` decimals (devkit: 2).

    Occlusion is written as an integer; the score (if any) with at least 4 decimals.
    """
    lines = []
    values = objects.to_array()
    for name, row in zip(objects.type, values, strict=True):
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"object type must be one word, got {name!r}")
        nums = [f"{row[0]:.{decimals}f}", f"{round(row[1]):d}"] + [f"{v:.{decimals}f}" for v in row[2:14]]
        if values.shape[1] == 15:
            nums.append(f"{row[14]:.{max(decimals, 4)}f}")
        lines.append(" ".join([name, *nums]))
    return "".join(line + "\n" for line in lines)


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then rename it over ``path``."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, text)


def write_kitti_objects(path: str | Path, objects: KittiObjects, decimals: int = 2) -> None:
    """Write a label or result file atomically (see :func:`format_kitti_objects`)."""
    _atomic_write(Path(path), format_kitti_objects(objects, decimals))


def write_kitti_object_folder(folder: str | Path, frames: Mapping[str, KittiObjects], decimals: int = 2) -> None:
    """Write one ``<frame>.txt`` per frame into ``folder`` (created if missing), each atomically (see
    :func:`write_kitti_objects`); the inverse of :func:`read_kitti_object_folder`. A frame without objects gives an
    empty file. Every file is formatted before the first is written, so a bad frame writes nothing.

    Args:
        folder: the output folder (e.g. a result ``data`` folder).
        frames: ``{frame: objects}``, frame names without ``.txt``.
        decimals: see :func:`format_kitti_objects`.

    Raises:
        ValueError: a frame name that is not a plain file name (empty, ``.``/``..``, a path separator), or an
            object type that is not one word.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"`folder` must be a folder, got the file {folder}")
    texts: dict[str, str] = {}
    for name, objects in frames.items():
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ValueError(f"`frames` keys must be plain file names without .txt, got {name!r}")
        try:
            texts[name] = format_kitti_objects(objects, decimals)
        except ValueError as err:
            raise ValueError(f"`frames[{name!r}]`: {err}") from err
    for name, text in texts.items():
        _atomic_write(folder / f"{name}.txt", text)


def read_kitti_object_folder(
    folder: str | Path,
    frames: Iterable[str] | None = None,
    with_score: bool | None = None,
    missing: str = "error",
    progress: bool | None = False,
) -> dict[str, KittiObjects]:
    """Read ``<frame>.txt`` files of a label or result folder.

    Args:
        folder: the folder (``label_2`` or a result ``data`` folder).
        frames: frame names without ``.txt`` (default: every ``*.txt`` in the folder, sorted).
        with_score: see :func:`parse_kitti_objects`.
        missing: for a listed frame without a file: ``"error"`` (FileNotFoundError), ``"empty"`` (no objects)
            or ``"warn"`` (no objects and a warning).
        progress: a tqdm bar over the frames on stderr (``None``: only when stdout and stderr are terminals).

    Returns:
        ``{frame: objects}`` in the order of ``frames``.
    """
    table = read_object_table(folder, frames, with_score, missing, progress)
    if table.absent and missing == "warn":
        warnings.warn(table.absent_message(), stacklevel=2)
    return table.frames()


@dataclass
class ObjectTable:
    """The objects of a folder's frames as one table (cheap to send between processes; no torch needed).

    Attributes:
        folder: the folder read.
        names: frame names in order.
        with_score: as given to :func:`read_object_table`.
        parsed: the frames read from files: one ``(types, values, rows per file)`` table when every file has the
            same column count (the usual folder), else one :class:`KittiObjects` per file.
        absent: the names of the frames without a file (they have no objects).
    """

    folder: str
    names: list[str]
    with_score: bool | None
    parsed: tuple[list[str], np.ndarray, np.ndarray] | list[KittiObjects]
    absent: list[str]

    def frames(self) -> dict[str, KittiObjects]:
        """``{frame: objects}`` in the order of :attr:`names` (the frames of a table are slices of its columns)."""
        parsed = _split_table(*self.parsed) if isinstance(self.parsed, tuple) else self.parsed
        absent = set(self.absent)
        present = [name for name in self.names if name not in absent]
        objects = dict(zip(present, parsed, strict=True))
        with_score = bool(self.with_score)
        return {name: objects[name] if name in objects else KittiObjects.empty(with_score) for name in self.names}

    def absent_message(self) -> str:
        """The warning for the frames without a file."""
        shown = ", ".join(self.absent[:5]) + (" ..." if len(self.absent) > 5 else "")
        return f"{len(self.absent)} frame(s) have no file in {self.folder} and count as having no objects: {shown}"


def read_object_table(
    folder: str | Path,
    frames: Iterable[str] | None = None,
    with_score: bool | None = None,
    missing: str = "error",
    progress: bool | None = False,
) -> ObjectTable:
    """:func:`read_kitti_object_folder` as one :class:`ObjectTable` (the frames without a file are listed, not
    warned about). Torch-free: ``kitti-object-eval`` runs it in a reader process while torch imports."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"KITTI object folder not found: {folder}")
    if missing not in ("error", "empty", "warn"):
        raise ValueError(f"`missing` must be 'error', 'empty' or 'warn', got {missing!r}")
    names = sorted(p.stem for p in folder.glob("*.txt")) if frames is None else list(frames)
    names = list(dict.fromkeys(names)) if frames is not None else names
    contents: dict[str, bytes] = {}
    absent = []
    limit = get_limits().max_objects_per_frame  # once, not per file
    with progress_bar(len(names), f"reading {folder.name}", "frame", progress) as bar:
        for name in names:
            bar.update()
            path = os.path.join(folder, f"{name}.txt")
            try:  # one open per file; a missing file (or a folder of that name) is what `missing` says
                with open(path, "rb") as stream:
                    contents[name] = stream.read()
                _check_object_count(contents[name], path, limit)
            except OSError:
                try:
                    read_text(path, what="KITTI object file")  # its message for an unreadable file
                except (FileNotFoundError, ValueError):
                    if present_file(path, "KITTI object file"):  # a folder or a broken link: refused, not "absent"
                        raise
                    if missing == "error":
                        raise FileNotFoundError(f"KITTI object file not found: {path}") from None
                    absent.append(name)
                    continue
                raise
    data = list(contents.values())
    table = _parse_plain_table(data, with_score) if len(data) > 1 else None
    if table is not None:
        return ObjectTable(str(folder), names, with_score, table, absent)
    # another encoding, line ends or column counts: file by file, with the exact messages
    sources = [os.path.join(folder, f"{n}.txt") for n in contents]
    texts = [decode_text(d, source, what="KITTI object file") for d, source in zip(data, sources, strict=True)]
    return ObjectTable(str(folder), names, with_score, _parse_texts(texts, sources, with_score), absent)


def read_kitti_object_calib(path: str | Path, dtype: torch.dtype | None = None) -> dict[str, Tensor]:
    """Read a KITTI object calibration file: the seven :data:`KITTI_OBJECT_CALIB_KEYS` (``Tr_imu_to_velo`` may be
    absent, as in the test split of some copies); matrices as 3 x 4 / 3 x 3 tensors of ``dtype`` (default float64).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a malformed line (naming file and line) or a missing key.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"calibration file not found: {path}")
    import torch

    from drivemetrics.geometry.calib import parse_kitti_calib

    required = KITTI_OBJECT_CALIB_KEYS[:6]
    text = read_text(path, what="calibration file")
    return parse_kitti_calib(text, source=str(path), required=required, dtype=dtype or torch.float64)


def write_kitti_object_calib(path: str | Path, calib: Mapping[str, Tensor]) -> None:
    """Write a calibration file (keys in :data:`KITTI_OBJECT_CALIB_KEYS` order first, ``%.12e`` values)."""
    import torch

    keys = [k for k in KITTI_OBJECT_CALIB_KEYS if k in calib] + [k for k in calib if k not in KITTI_OBJECT_CALIB_KEYS]
    lines = []
    for key in keys:
        values = torch.as_tensor(calib[key]).reshape(-1).tolist()
        lines.append(f"{key}: " + " ".join(f"{v:.12e}" for v in values))
    _atomic_write(Path(path), "\n".join(lines) + "\n")


def _homogeneous_4x4(matrix: Tensor) -> Tensor:
    """``(..., 3, 3)`` or ``(..., 3, 4)`` -> ``(..., 4, 4)`` with a ``[0 0 0 1]`` bottom row."""
    import torch

    out = torch.zeros(*matrix.shape[:-2], 4, 4, dtype=matrix.dtype, device=matrix.device)
    out[..., : matrix.shape[-2], : matrix.shape[-1]] = matrix
    out[..., 3, 3] = 1.0
    return out


def velodyne_to_camera(points: Tensor, calib: Mapping[str, Tensor]) -> Tensor:
    """Velodyne points ``(..., N, 3)`` (metres) -> rectified camera-0 coordinates ``(..., N, 3)``.

    ``R0_rect @ Tr_velo_to_cam @ [x, y, z, 1]`` (both extended to 4 x 4); batched calibrations broadcast.
    """
    import torch

    if points.shape[-1] != 3:
        raise ValueError(f"`points` must be ... x N x 3, got {tuple(points.shape)}")
    rect = _homogeneous_4x4(calib["R0_rect"].to(points)) @ _homogeneous_4x4(calib["Tr_velo_to_cam"].to(points))
    hom = torch.cat([points, torch.ones_like(points[..., :1])], dim=-1)
    return (hom @ rect.transpose(-1, -2))[..., :3]


def camera_to_image(points: Tensor, projection: Tensor) -> tuple[Tensor, Tensor]:
    """Rectified camera points ``(..., N, 3)`` -> pixels ``(..., N, 2)`` with a 3 x 4 projection (e.g. ``P2``).

    Divides by the homogeneous coordinate ``w = P[2] @ [x, y, z, 1]`` (not by the camera z; they differ by
    ``P[2, 3]``, a few mm for P2).

    Returns:
        ``(uv, w)``: pixels and the homogeneous depth ``w`` (points with ``w <= 0`` are behind the camera).
    """
    import torch

    if points.shape[-1] != 3:
        raise ValueError(f"`points` must be ... x N x 3, got {tuple(points.shape)}")
    if projection.shape[-2:] != (3, 4):
        raise ValueError(f"`projection` must be 3 x 4, got {tuple(projection.shape)}")
    hom = torch.cat([points, torch.ones_like(points[..., :1])], dim=-1)
    proj = hom @ projection.to(points).transpose(-1, -2)
    w = proj[..., 2]
    return proj[..., :2] / w.unsqueeze(-1), w


def velodyne_to_image(points: Tensor, calib: Mapping[str, Tensor], camera: str = "P2") -> tuple[Tensor, Tensor]:
    """Velodyne points ``(..., N, 3)`` -> pixels ``(..., N, 2)`` of ``camera`` (``"P2"``: left colour) and ``w``."""
    return camera_to_image(velodyne_to_camera(points, calib), calib[camera])


def box3d_corners(dimensions: Tensor, location: Tensor, rotation_y: Tensor) -> Tensor:
    """The 8 corners ``(N, 8, 3)`` of KITTI 3D boxes in camera coordinates (devkit ``computeBox3D``).

    Args:
        dimensions: ``(N, 3)`` ``h, w, l``.
        location: ``(N, 3)`` bottom-face center.
        rotation_y: ``N`` yaw; the box's length axis points along ``(cos ry, 0, -sin ry)``.

    Returns:
        Corners 0-3 on the bottom face (y = location y), 4-7 above them on the top face (y - h).
    """
    import torch

    h, w, l = dimensions.unbind(-1)
    sx = torch.tensor([1, -1, -1, 1, 1, -1, -1, 1], dtype=dimensions.dtype, device=dimensions.device) / 2
    sz = torch.tensor([1, 1, -1, -1, 1, 1, -1, -1], dtype=dimensions.dtype, device=dimensions.device) / 2
    sy = torch.tensor([0, 0, 0, 0, -1, -1, -1, -1], dtype=dimensions.dtype, device=dimensions.device)
    x = l[:, None] * sx
    y = h[:, None] * sy
    z = w[:, None] * sz
    cos, sin = torch.cos(rotation_y)[:, None], torch.sin(rotation_y)[:, None]
    rx = cos * x + sin * z
    rz = -sin * x + cos * z
    return torch.stack([rx, y, rz], dim=-1) + location[:, None, :]
