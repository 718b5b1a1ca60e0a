"""Size limits on inputs, so that the cost of a file is bounded by its size, never by the values it holds.

Every reader checks what a file *declares* (a PNG's width and height, the points of a lane, the lanes of a frame,
the nodes and edges of a graph, the nesting and the integers of a JSON document) against :class:`Limits` before
allocating anything for it, and raises one ``ValueError`` naming the file, the limit and how to raise it.

The defaults are far above the public datasets (KITTI-ROAD PNGs have 0.47 M pixels, CULane / TuSimple lanes fewer
than 100 points, RoadTracer regions 8192 px) and can be raised for one process:

- in Python, ``with set_limits(max_lane_points=50_000): ...`` (or ``set_limits(...)`` once, without ``with``);
- for a command, ``drivemetrics --limit max_lane_points=50000 culane-eval ...`` (repeatable);
- for any process and its workers, the environment variable ``DRIVEMETRICS_LIMITS="max_lane_points=50000,..."``.

Examples:
    >>> from drivemetrics._internal.limits import get_limits, set_limits
    >>> get_limits().max_lanes_per_frame
    64
    >>> with set_limits(max_lanes_per_frame=1000):
    ...     get_limits().max_lanes_per_frame
    1000
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import re
import reprlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from drivemetrics._internal.gc_pause import gc_paused

__all__ = [
    "ENV_VAR",
    "Limits",
    "check_canvas",
    "check_coordinates",
    "check_count",
    "check_graph_area",
    "check_graph_extent",
    "check_graph_size",
    "check_image_fits_camera",
    "check_image_size",
    "check_window",
    "get_limits",
    "how_to_raise",
    "json_depth",
    "limit_options",
    "load_json",
    "png_size",
    "set_limits",
    "short_repr",
]

#: Environment variable read by :func:`get_limits`: ``"name=value,name=value"``.
ENV_VAR = "DRIVEMETRICS_LIMITS"


@dataclasses.dataclass(frozen=True)
class Limits:
    """The documented input limits (each overridable, see the module doc).

    Attributes:
        max_png_pixels: width x height a PNG may declare in its header (checked before decoding).
        max_lane_points: points of one lane (CULane line, TuSimple lane or ``h_samples``).
        max_lanes_per_frame: lanes of one frame (CULane file, TuSimple record).
        max_abs_coordinate: largest absolute lane coordinate, pixels (CULane; a lane may run far off the canvas,
            but values beyond this are a unit error, and their squares overflow).
        max_graph_nodes: nodes of one road or lane graph.
        max_graph_edges: edges of one road or lane graph.
        max_graph_extent: side, in pixels, of the bounding box of one road graph's nodes (``graph-eval``: the
            CCQ canvas and every resampling along edges grow with it).
        max_json_depth: nesting of arrays / objects in a JSON document.
        max_json_int_digits: decimal digits of a JSON integer.
        max_lane3d_points: points of one 3D lane (OpenLane annotations have at most a few hundred).
        max_lane3d_lanes: lanes of one 3D lane frame (OpenLane frames have at most about 20).
        max_lane3d_abs_metres: largest absolute 3D lane coordinate, metres (the evaluator reads +-200 m).
        max_map_line_points: points of one lane or map line (``openlanev2-eval`` lanes, lanelines and areas,
            ``map-eval`` lines). Real inputs: OpenLane-V2 lanes have 11 points (submissions as many as the model
            decodes, 10-50), MapTR lines 20-100, Argoverse 2 challenge lines fewer than 100.
        max_map_lines_per_frame: lanes (and traffic elements, areas) of one OpenLane-V2 frame, lines of one map
            sample, predictions or ground truth. Real inputs: at most ~300 (OpenLane-V2 submissions keep 100-300
            lanes, MapTR 50-100 lines, the ground truth fewer than 100).
        max_map_frames: frames of one OpenLane-V2 file, samples of one map file (nuScenes val 6,019 samples,
            OpenLane-V2 val 4,806 frames, Argoverse 2 val about 24,000).
        max_map_coordinate: largest absolute lane / map-line coordinate, metres (ego frame; the evaluated ranges
            reach 50 m, long-range variants 100 m). Beyond it a value is a unit error, and resampling every 0.3 m
            (``av2-cvpr23``) would grow with it.
        max_graph_area: area, in square pixels, of the bounding box of one road graph's nodes (or of a GT and a
            prediction together), plus 16,000 px² per node: the CCQ canvas (at scale 1/4) grows with the area, not
            with the input (two nodes 32,000 px apart diagonally drew a 1.5 GB canvas). RoadTracer's 8,192 px regions
            cover 67 M px²; a city-wide graph has enough nodes for its area.
        max_objects_per_frame: objects of one KITTI label or result file (KITTI frames hold fewer than 100, kept
            detections a few hundred): the box overlaps of a frame grow with GT x detections.
        max_samples_per_mb: samples a lane-graph pickle may hold per megabyte of its size, on top of 1,000 (a
            pickle can share one graph between any number of samples, each evaluated again; the UrbanLaneGraph
            pickles hold a few hundred samples per megabyte).
    """

    max_png_pixels: int = 50_000_000
    max_lane_points: int = 10_000
    max_lanes_per_frame: int = 64
    max_abs_coordinate: int = 1_000_000_000
    max_graph_nodes: int = 2_000_000
    max_graph_edges: int = 4_000_000
    max_graph_extent: int = 32_768
    max_json_depth: int = 64
    max_json_int_digits: int = 20
    max_lane3d_points: int = 5_000
    max_lane3d_lanes: int = 200
    max_lane3d_abs_metres: int = 1_000_000
    max_map_line_points: int = 1_000
    max_map_lines_per_frame: int = 1_000
    max_map_frames: int = 200_000
    max_map_coordinate: int = 1_000
    max_objects_per_frame: int = 1_000
    max_graph_area: int = 128_000_000
    max_samples_per_mb: int = 10_000


_overrides: list[dict[str, int]] = []


def _parse_assignments(text: str, origin: str) -> dict[str, int]:
    """``{"name": value}`` from ``"name=value,name=value"`` (names of :class:`Limits`, positive integers)."""
    names = {f.name for f in dataclasses.fields(Limits)}
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in names:
            raise ValueError(f"{origin}: expected NAME=VALUE with NAME in {sorted(names)}, got {item[:80]!r}")
        try:
            number = int(value.strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"{origin}: {name} must be a positive integer, got {value[:80]!r}") from None
        if number < 1:
            raise ValueError(f"{origin}: {name} must be >= 1, got {number}")
        out[name] = number
    return out


def get_limits() -> Limits:
    """The limits in force: the defaults, then ``DRIVEMETRICS_LIMITS``, then :func:`set_limits` (innermost last).

    Readers call it per item (a lane's points): the value is cached per environment text and override layers.
    """
    layers = tuple(tuple(layer.items()) for layer in _overrides)
    return _limits_of(os.environ.get(ENV_VAR, ""), layers)


@functools.lru_cache(maxsize=16)
def _limits_of(env_text: str, layers: tuple[tuple[tuple[str, int], ...], ...]) -> Limits:
    values: dict[str, int] = _parse_assignments(env_text, ENV_VAR)
    for layer in layers:
        values.update(layer)
    return Limits(**values)


@contextlib.contextmanager
def _restore(layer: dict[str, int]) -> Iterator[None]:
    try:
        yield
    finally:
        _overrides.remove(layer)


def set_limits(**values: int) -> contextlib.AbstractContextManager[None]:
    """Raise (or lower) limits for this process: ``with set_limits(max_lane_points=50_000): ...``.

    Called without ``with`` the values stay in force. Spawned worker processes do not see them: a command passes
    ``--limit`` on through ``DRIVEMETRICS_LIMITS`` (see :func:`limit_options`).
    """
    layer = _parse_assignments(",".join(f"{k}={v}" for k, v in values.items()), "set_limits")
    _overrides.append(layer)
    return _restore(layer)


@contextlib.contextmanager
def limit_options(assignments: list[str]) -> Iterator[None]:
    """The CLI's ``--limit NAME=VALUE`` options, in force inside the ``with`` block: over :func:`set_limits` in
    this process, and through ``DRIVEMETRICS_LIMITS`` in the worker processes it starts (restored afterwards)."""
    if not assignments:
        yield
        return
    layer = _parse_assignments(",".join(assignments), "--limit")
    previous = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = ",".join(filter(None, [previous or "", *assignments]))
    _overrides.append(layer)
    try:
        yield
    finally:
        _overrides.remove(layer)
        if previous is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = previous


def short_repr(value: Any, limit: int = 80) -> str:
    """A ``repr`` of ``value`` of at most ``limit`` characters (``...`` marks a cut), for error messages: every
    message quotes at most 80 characters of its input.

    A key or line of a hostile file can be megabytes long or deeply nested; :mod:`reprlib` abbreviates long strings,
    big containers and deep nesting without building the full ``repr`` first.

    Examples:
        >>> from drivemetrics._internal.limits import short_repr
        >>> short_repr("a" * 1000, limit=12)
        "'aaaaaaaa..."
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # e.g. an int beyond Python's digit limit, a hostile __repr__
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REPR = reprlib.Repr()
_REPR.maxlevel = 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80


def how_to_raise(name: str) -> str:
    """The hint every limit error ends with: how to raise limit ``name``."""
    return f"raise it with --limit {name}=N, DRIVEMETRICS_LIMITS or drivemetrics._internal.limits.set_limits"


def check_count(count: int, name: str, where: object, what: str) -> None:
    """Raise ``ValueError`` ``"WHERE: COUNT WHAT exceed the limit ..."`` when ``count`` is above limit ``name``."""
    limit = getattr(get_limits(), name)
    if count > limit:
        raise ValueError(f"{where}: {count:,} {what}, more than {name}={limit:,} ({how_to_raise(name)})")


def check_canvas(height: float, width: float, where: object, line_width: float | None = None) -> None:
    """Refuse a raster of ``height x width`` pixels (a CULane or CCQ canvas) that is empty, not finite or larger
    than ``max_png_pixels``, and a ``line_width`` that is not positive or wider than the canvas's longer side (a
    wider line covers the same pixels); ``where`` names the options or the file."""
    limit = get_limits().max_png_pixels
    if not (math.isfinite(height) and math.isfinite(width) and height >= 1 and width >= 1):
        raise ValueError(f"{where}: a {height:.6g} x {width:.6g} px canvas; both sides must be at least 1 px")
    if height * width > limit:
        raise ValueError(
            f"{where}: a {height:.6g} x {width:.6g} px canvas, more than max_png_pixels={limit:,} "
            f"({how_to_raise('max_png_pixels')})"
        )
    if line_width is not None and not (0 < line_width <= max(height, width)):
        raise ValueError(f"{where}: line width {line_width:.6g} px, expected in (0, {max(height, width):g}] px")


def check_window(window: Any, where: object) -> None:
    """Refuse a crop window ``(xmin, ymin, xmax, ymax)`` (pixels) that is empty, not finite or whose side exceeds
    ``max_graph_extent`` (its raster and resampling grow with it, not with the input's size)."""
    xmin, ymin, xmax, ymax = (float(v) for v in window)
    if not all(map(math.isfinite, (xmin, ymin, xmax, ymax))) or xmax <= xmin or ymax <= ymin:
        raise ValueError(
            f"{where}: ({xmin:.6g}, {ymin:.6g}, {xmax:.6g}, {ymax:.6g}) is not a window "
            "(XMIN < XMAX and YMIN < YMAX, finite)"
        )
    limit = get_limits().max_graph_extent
    if max(xmax - xmin, ymax - ymin) > limit:
        raise ValueError(
            f"{where}: a {xmax - xmin:.6g} x {ymax - ymin:.6g} px window, more than max_graph_extent={limit:,} px "
            f"({how_to_raise('max_graph_extent')})"
        )


# ---------------------------------------------------------------------------------------------------------------
# PNG header


def png_size(path: str | Path) -> tuple[int, int] | None:
    """``(width, height)`` declared by a PNG file's header, ``None`` when the file is not a PNG."""
    with open(path, "rb") as stream:
        head = stream.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def check_image_size(path: str | Path, width: int, height: int) -> None:
    """Refuse an image that declares more than ``max_png_pixels`` pixels (before decoding it)."""
    limit = get_limits().max_png_pixels
    if width * height > limit:
        raise ValueError(
            f"{path}: the image declares {width} x {height} = {width * height:,} pixels, more than "
            f"max_png_pixels={limit:,} ({how_to_raise('max_png_pixels')})"
        )


# ---------------------------------------------------------------------------------------------------------------
# JSON

#: a JSON string, or an unterminated one up to the end of the text: every ``"`` starts a match that ends at its
#: closing quote or at the end, so :meth:`re.Pattern.sub` scans each byte once (a pattern requiring the closing quote
#: rescans to the end from every quote of an unterminated string of escaped quotes: quadratic, 35 s for 128 KB)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)


def _without_strings(text: str) -> str:
    """``_STRING.sub("", text)``: a text without backslashes has no escapes, so its strings are the odd pieces
    between double quotes (an unterminated last string included), dropped by one split (the regex costs several
    times more on a few kB)."""
    if "\\" in text:
        return _STRING.sub("", text)
    return "".join(text.split('"')[::2])


# brackets kept, every other byte deleted: the nesting is read from a much shorter byte string
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# digits -> "0", exponent letters -> "e", signs -> "+", anything else -> " ": long numbers are found by bytes.find
_NUMBER_SHAPES = bytes(
    ord("0") if chr(b).isdigit() else ord("e") if b in b"eE" else ord("+") if b in b"+-" else ord(" ")
    for b in range(256)
)


def _skeleton_depth(skeleton: bytes) -> int:
    """Deepest nesting of a JSON text whose strings were removed (``_STRING.sub("", text)``, UTF-8)."""
    import numpy as np

    brackets = skeleton.translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    step = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(step).max(initial=0))


def json_depth(text: str) -> int:
    """Deepest nesting of arrays / objects in a JSON text (strings skipped), in time linear in its length."""
    return _skeleton_depth(_without_strings(text).encode("utf-8", "replace"))


def _may_exceed_number_limits(skeleton: bytes, max_int_digits: int) -> bool:
    """Whether a JSON text without strings (UTF-8) may hold an integer of more than ``max_int_digits`` digits or a
    number overflowing a float. ``False`` is a guarantee: no run of more than ``min(max_int_digits, 200)`` digits
    and no exponent of 3 or more digits (a mantissa of at most 200 integer digits times ``10 ** 99`` is finite)."""
    shapes = skeleton.translate(_NUMBER_SHAPES)
    long_run = b"0" * (min(max_int_digits, 200) + 1)
    if long_run in shapes:
        return True
    return b"e" in shapes and (b"e000" in shapes or b"e+000" in shapes)  # one byte first: most texts have no exponent


@functools.cache
def _fast_json_loads() -> Callable[[str], Any] | None:
    """``orjson.loads`` where the optional ``orjson`` wheel is installed (``pip install drivemetrics[fast]``):
    2-2.5x the standard decoder on the map files, same values (both round every number correctly). It refuses what
    :func:`load_json` must judge itself (NaN / Infinity, integers beyond 64 bits, lone surrogates), which then goes
    through the standard decoder."""
    if os.environ.get("DRIVEMETRICS_FAST_JSON", "1").strip() == "0":
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


def load_json(text: str, where: object, *, allow_non_finite: bool = False) -> Any:
    """``json.loads(text)`` within the limits: nesting at most ``max_json_depth``, integers of at most
    ``max_json_int_digits`` digits, no ``NaN`` / ``Infinity`` (unless ``allow_non_finite``: then the reader's own
    checks name the record and field holding them) and no number overflowing a float.

    Every failure is a ``ValueError`` naming ``where`` (the file, with a line for JSON lines). Numbers are parsed by
    ``orjson`` where installed (else the standard C decoder) unless a scan of the text without its strings finds a
    long digit run or a 3-digit exponent; only then each number goes through the checks below (several times
    slower on large files).
    """
    limits = get_limits()
    skeleton = _without_strings(text).encode("utf-8", "replace")
    depth = _skeleton_depth(skeleton)
    if depth > limits.max_json_depth:
        raise ValueError(
            f"{where}: JSON nested {depth} levels deep, more than max_json_depth={limits.max_json_depth} "
            f"({how_to_raise('max_json_depth')})"
        )
    checked = _may_exceed_number_limits(skeleton, limits.max_json_int_digits)
    del skeleton

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_json_int_digits:
            raise ValueError(
                f"{where}: a JSON integer of {len(digits.lstrip('-'))} digits ({digits[:20]}...), more than "
                f"max_json_int_digits={limits.max_json_int_digits} ({how_to_raise('max_json_int_digits')})"
            )
        return int(digits)

    def parse_float(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise ValueError(f"{where}: the JSON number {digits[:40]} overflows a float")
        return value

    def parse_constant(name: str) -> float:
        if allow_non_finite:
            return float(name)
        raise ValueError(f"{where}: {name} is not a finite number (not allowed in the JSON input)")

    try:
        with gc_paused():
            if not checked:
                fast = _fast_json_loads()
                if fast is not None:
                    try:
                        return fast(text)
                    except ValueError:  # NaN / Infinity, an integer beyond 64 bits, bad JSON: the path below decides
                        pass
                return json.loads(text, parse_constant=parse_constant)
            return json.loads(text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant)
    except json.JSONDecodeError as err:
        msg = err.msg.removesuffix(" at")  # "Unterminated string starting at"
        raise ValueError(f"{where}: not valid JSON ({msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply") from None


# ---------------------------------------------------------------------------------------------------------------
# graphs (positions as an ``(N, 2)`` array, so that this module imports neither networkx nor torch)


def check_graph_size(n_nodes: int, n_edges: int, where: object) -> None:
    """Refuse a graph of more than ``max_graph_nodes`` nodes or ``max_graph_edges`` edges."""
    check_count(n_nodes, "max_graph_nodes", where, "nodes in one graph")
    check_count(n_edges, "max_graph_edges", where, "edges in one graph")


def check_graph_extent(pos: Any, where: object) -> None:
    """Refuse node positions (``(N, 2)``, pixels) whose bounding box is wider or taller than ``max_graph_extent``.

    Every canvas (CCQ) and every resampling along edges (APLS, TLTS, OPT-*) of ``graph-eval`` grows with it.
    """
    import numpy as np

    pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
    if not len(pos):
        return
    limit = get_limits().max_graph_extent
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        span = hi - lo
    if not (span <= limit).all():
        far = int(np.argmax(np.abs(pos).max(axis=1)))
        raise ValueError(
            f"{where}: the nodes span {span[0]:.6g} x {span[1]:.6g} px (e.g. a node at ({pos[far, 0]:.6g}, "
            f"{pos[far, 1]:.6g})), more than max_graph_extent={limit:,} px ({how_to_raise('max_graph_extent')})"
        )
    check_graph_area(pos, where)


#: square pixels of bounding box each node of a road graph adds to ``max_graph_area``
AREA_PER_NODE = 16_000


def check_graph_area(pos: Any, where: object) -> None:
    """Refuse node positions (``(N, 2)``, pixels) whose bounding box covers more than ``max_graph_area`` +
    :data:`AREA_PER_NODE` per node square pixels: a raster of the graph (the CCQ canvas) would cost more than the
    input's size allows."""
    import numpy as np

    pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
    if len(pos) < 2:
        return
    limit = get_limits().max_graph_area
    with np.errstate(over="ignore", invalid="ignore"):
        span = pos.max(axis=0) - pos.min(axis=0)
        area = float(span[0]) * float(span[1])
    allowed = limit + AREA_PER_NODE * len(pos)
    if not area <= allowed:
        raise ValueError(
            f"{where}: {len(pos):,} nodes spread over {span[0]:.6g} x {span[1]:.6g} px, more than "
            f"max_graph_area={limit:,} px² + {AREA_PER_NODE:,} px² per node ({how_to_raise('max_graph_area')})"
        )


def check_image_fits_camera(
    path: str | Path, width: int, height: int, principal_point: tuple[float, float], calib: str | Path
) -> None:
    """Refuse an image whose size does not fit the camera of its calibration.

    KITTI calibrations do not state the image size; the principal point ``(cx, cy)`` of ``P2`` lies near the
    image center (609.6, 172.9 for 1242 x 375 px), so an image of that camera has ``cx`` in ``[W / 4, 3 W / 4]``
    and ``cy`` in ``[H / 4, 3 H / 4]``. Anything else (a 12,000 x 12,000 px input for a 1242 x 375 px camera) is
    another camera's image or a resized one, and its BEV would be wrong.
    """
    cx, cy = principal_point
    if not (width / 4 <= cx <= 3 * width / 4 and height / 4 <= cy <= 3 * height / 4):
        raise ValueError(
            f"{path}: a {width} x {height} px image does not fit the camera of {calib} (principal point "
            f"({cx:.1f}, {cy:.1f}) px, expected near the image center): the image size must be the calibration's"
        )


def check_coordinates(values: Any, where: object) -> None:
    """Refuse coordinates (any array, pixels) larger in magnitude than ``max_abs_coordinate``."""
    import numpy as np

    limit = get_limits().max_abs_coordinate
    values = np.asarray(values, dtype=np.float64)
    if values.size and not (np.abs(values) <= limit).all():
        worst = float(values.flat[int(np.argmax(np.abs(values)))])
        raise ValueError(
            f"{where}: the coordinate {worst:.6g} px is larger than max_abs_coordinate={limit:.3g} "
            f"({how_to_raise('max_abs_coordinate')})"
        )


# ---------------------------------------------------------------------------------------------------------------
# lanes and map lines (metres): OpenLane-V2 and map-eval readers


def check_map_points(points: Any, where: object) -> None:
    """Refuse one lane / map line ``(N, D)`` (metres) of more than ``max_map_line_points`` points, or with a
    non-finite coordinate or one larger in magnitude than ``max_map_coordinate``."""
    import numpy as np

    limits = get_limits()
    count = len(points)
    if count > limits.max_map_line_points:
        raise ValueError(
            f"{where}: {count:,} points in one line, more than max_map_line_points={limits.max_map_line_points:,} "
            f"({how_to_raise('max_map_line_points')})"
        )
    check_map_coordinates(np.asarray(points, dtype=np.float64), where)


def check_map_coordinates(values: Any, where: object) -> None:
    """Refuse lane / map-line coordinates (any float array, metres) that are NaN, infinite or larger in magnitude
    than ``max_map_coordinate``; the message names the first bad value."""
    import numpy as np

    limit = get_limits().max_map_coordinate
    with np.errstate(invalid="ignore"):
        ok = np.abs(values) <= limit
    if values.size and not ok.all():
        worst = float(values.flat[int(np.argmin(ok.reshape(-1)))])
        if not math.isfinite(worst):
            raise ValueError(f"{where}: contains NaN or infinite values")
        raise ValueError(
            f"{where}: the coordinate {worst:.6g} m is larger than max_map_coordinate={limit:,} m "
            f"({how_to_raise('max_map_coordinate')})"
        )
