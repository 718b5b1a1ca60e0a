"""Readers and writers for road-network graphs.

Every reader returns the project's one representation: an undirected :class:`networkx.Graph` with integer node ids
``0..N-1`` and a node attribute ``pos = (x, y)`` (a tuple of Python floats, pixels unless stated otherwise).

Formats:

- RoadTracer ``.graph`` text (node lines ``x y``, one blank line, edge lines ``i j``): :func:`read_roadtracer_graph`.
- GeoJSON ``LineString`` / ``MultiLineString`` features (SpaceNet, OSM): :func:`read_geojson`.
- Sat2Graph adjacency pickles ``{(row, col): [(row, col), ...]}``: :func:`read_sat2graph_pickle`.
- Pickled networkx graphs, e.g. UrbanLaneGraph ``R[city][split][sample_id] = nx.DiGraph``:
  :func:`read_networkx_pickle` (the raw object) and :func:`to_graph` (one graph to the representation).

Pickles are read with a restricted unpickler (:func:`safe_pickle_load`) that admits only networkx graph classes,
numpy arrays / scalars / dtypes and plain builtin containers; anything else (``os.system``, ``eval``, arbitrary
classes) raises :class:`UnsafePickleError` before it can run.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from drivemetrics._internal.files import atomic_write_text, read_text
from drivemetrics._internal.limits import check_graph_size, load_json, short_repr
from drivemetrics._internal.safe_pickle import UnsafePickleError, safe_pickle_load
from drivemetrics.graph.geometry import node_positions

__all__ = [
    "UnsafePickleError",
    "from_edges",
    "read_geojson",
    "read_graph",
    "read_networkx_pickle",
    "read_roadtracer_graph",
    "read_sat2graph_pickle",
    "safe_pickle_load",
    "to_graph",
    "write_roadtracer_graph",
]

EARTH_RADIUS_M = 6_378_137.0  # WGS84 equatorial radius, metres


def _check_xy(x: float, y: float, where: str) -> tuple[float, float]:
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"{where}: node position ({x}, {y}) is not finite")
    return (x, y)


def from_edges(positions: np.ndarray | Iterable[Iterable[float]], edges: Iterable[Iterable[int]]) -> nx.Graph:
    """Graph from an ``(N, 2)`` array of node positions and an iterable of ``(i, j)`` index pairs.

    Duplicate and reversed edges collapse; self-loops ``(i, i)`` are dropped; indices must lie in ``0..N-1``.
    """
    pos = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    if not np.isfinite(pos).all():
        raise ValueError("`positions` contains NaN or infinite coordinates")
    graph = nx.Graph()
    graph.add_nodes_from((i, {"pos": (float(x), float(y))}) for i, (x, y) in enumerate(pos.tolist()))
    pairs = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(pos)):
        raise ValueError(f"`edges` indices must lie in 0..{len(pos) - 1}, got {pairs.min()}..{pairs.max()}")
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    graph.add_edges_from(pairs.tolist())
    return graph


def read_roadtracer_graph(path: str | Path) -> nx.Graph:
    """Read a RoadTracer ``.graph`` text file: ``x y`` node lines, a blank line, ``i j`` edge lines (pixels).

    Edges listed in both directions collapse to one undirected edge. Malformed lines raise ``ValueError`` naming the
    file and line number.
    """
    path = Path(path)
    positions: list[tuple[float, float]] = []
    edges: list[tuple[int, int]] = []
    in_edges = False
    for number, raw in enumerate(io.StringIO(read_text(path, what="graph text file")), start=1):
        line = raw.strip()
        if not line:
            in_edges = True
            continue
        parts = line.split()
        where = f"{path}:{number}"
        if len(parts) != 2:
            raise ValueError(f"{where}: expected two numbers per line, got {short_repr(line)}")
        try:
            a, b = (int(parts[0]), int(parts[1])) if in_edges else (float(parts[0]), float(parts[1]))
        except ValueError:
            kind = "two integer node indices" if in_edges else "two coordinates"
            raise ValueError(f"{where}: expected {kind}, got {short_repr(line)}") from None
        if in_edges:
            edges.append((a, b))
        else:
            positions.append(_check_xy(a, b, where))
    try:
        return from_edges(np.asarray(positions, dtype=np.float64).reshape(-1, 2), edges)
    except ValueError as err:  # edge indices out of range
        raise ValueError(f"{path}: {err}") from None


def write_roadtracer_graph(graph: nx.Graph, path: str | Path) -> None:
    """Write ``graph`` (nodes with ``pos``) as a RoadTracer ``.graph`` file (each edge listed in both directions)."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    lines = [f"{float(graph.nodes[n]['pos'][0]):.6f} {float(graph.nodes[n]['pos'][1]):.6f}" for n in nodes]
    lines.append("")
    for u, v in graph.edges:
        if u != v:
            lines.append(f"{index[u]} {index[v]}")
            lines.append(f"{index[v]} {index[u]}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def _lonlat_to_local_metres(lonlat: np.ndarray) -> np.ndarray:
    """Equirectangular projection about the bounding-box center: x east, y north, metres (error < 0.1 % per km)."""
    lon0 = 0.5 * (lonlat[:, 0].min() + lonlat[:, 0].max())
    lat0 = 0.5 * (lonlat[:, 1].min() + lonlat[:, 1].max())
    scale = math.pi / 180.0 * EARTH_RADIUS_M
    x = (lonlat[:, 0] - lon0) * scale * math.cos(math.radians(lat0))
    y = (lonlat[:, 1] - lat0) * scale
    return np.stack([x, y], axis=1)


def read_geojson(path: str | Path, *, coordinates: str = "metres") -> nx.Graph:
    """Read ``LineString`` / ``MultiLineString`` features of a GeoJSON file as one graph.

    Consecutive vertices of a line become edges; vertices with identical coordinates (shared by several lines) become
    one node, so lines meeting at a common vertex form a junction. Other geometry types are ignored.

    Args:
        path: the ``.geojson`` file.
        coordinates: ``"metres"`` (default) projects lon/lat (CRS84) to a local east/north frame in metres centered on
            the data's bounding box (``graph.graph["origin_lonlat"]`` keeps the center); ``"raw"`` keeps the file's
            numbers (use it for files already in pixels or a projected CRS).
    """
    if coordinates not in ("metres", "raw"):
        raise ValueError(f"`coordinates` must be 'metres' or 'raw', got {coordinates!r}")
    path = Path(path)
    data = load_json(read_text(path, what="GeoJSON file"), path)
    features = data.get("features") if isinstance(data, dict) else None
    if not isinstance(features, list):
        got = type(data).__name__ if not isinstance(data, dict) else f"'features': {type(features).__name__}"
        raise ValueError(f"{path}: expected a GeoJSON FeatureCollection with a 'features' list, got {got}")
    lines: list[np.ndarray] = []
    for k, feature in enumerate(features):
        if feature is None:
            continue
        if not isinstance(feature, dict):
            raise ValueError(f"{path}: feature {k} must be a JSON object, got {type(feature).__name__}")
        geometry = feature.get("geometry")
        if geometry is None:
            continue  # a feature without geometry (GeoJSON allows null)
        if not isinstance(geometry, dict):
            raise ValueError(
                f"{path}: feature {k}: 'geometry' must be a JSON object or null, got {type(geometry).__name__}"
            )
        kind = geometry.get("type")
        value = geometry.get("coordinates")
        if kind not in ("LineString", "MultiLineString"):
            continue
        if not isinstance(value, list):
            raise ValueError(f"{path}: feature {k}: {kind} 'coordinates' must be a list, got {type(value).__name__}")
        parts = [value] if kind == "LineString" else value
        for part in parts:
            try:
                coords = np.asarray(part, dtype=np.float64)
            except (TypeError, ValueError):
                coords = np.empty(0)
            if coords.ndim != 2 or coords.shape[1] < 2 or len(coords) < 1:
                raise ValueError(f"{path}: feature {k} has malformed coordinates (expected a list of [x, y] numbers)")
            if not np.isfinite(coords[:, :2]).all():
                raise ValueError(f"{path}: feature {k} has non-finite coordinates")
            lines.append(coords[:, :2])
    if not lines:
        return nx.Graph()
    vertices = np.concatenate(lines)
    unique, inverse = np.unique(vertices, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    edges = []
    start = 0
    for line in lines:
        ids = inverse[start : start + len(line)]
        edges.append(np.stack([ids[:-1], ids[1:]], axis=1))
        start += len(line)
    positions = _lonlat_to_local_metres(unique) if coordinates == "metres" else unique
    graph = from_edges(positions, np.concatenate(edges).tolist())
    if coordinates == "metres":
        graph.graph["origin_lonlat"] = (
            float(0.5 * (unique[:, 0].min() + unique[:, 0].max())),
            float(0.5 * (unique[:, 1].min() + unique[:, 1].max())),
        )
    return graph


def read_sat2graph_pickle(path: str | Path, *, swap_xy: bool = True) -> nx.Graph:
    """Read a Sat2Graph adjacency pickle ``{(a, b): [(a, b), ...]}`` (Python 2 pickles are fine).

    Sat2Graph keys are ``(row, col)`` pixels; with ``swap_xy=True`` (default) ``pos = (col, row)`` = image ``(x, y)``.
    """
    data = safe_pickle_load(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a dict {{(x, y): [neighbours]}}, got {type(data).__name__}")
    keys: dict[tuple[float, float], int] = {}
    edges: list[tuple[int, int]] = []

    def node(key: Any) -> int:
        try:
            a, b = float(key[0]), float(key[1])
        except Exception:  # any key type: tuple too short, dict, string, array
            raise ValueError(f"{path}: node key {short_repr(key)} is not an (x, y) pair") from None
        xy = (b, a) if swap_xy else (a, b)
        _check_xy(*xy, str(path))
        return keys.setdefault(xy, len(keys))

    for key, neighbours in data.items():
        i = node(key)
        if not isinstance(neighbours, (list, tuple, set, frozenset)):
            raise ValueError(
                f"{path}: the neighbours of node {short_repr(key)} must be a list of (x, y) pairs, "
                f"got {type(neighbours).__name__}"
            )
        for other in neighbours:
            edges.append((i, node(other)))
    positions = np.asarray(list(keys), dtype=np.float64).reshape(-1, 2)
    return from_edges(positions, edges)


def read_networkx_pickle(path: str | Path) -> Any:
    """Unpickle a file holding networkx graphs (possibly nested in dicts/lists) with the restricted unpickler.

    Returns the raw object; convert each graph with :func:`to_graph`.
    """
    return safe_pickle_load(path)


def to_graph(graph: nx.Graph, *, pos_key: str = "pos", scale: float = 1.0) -> nx.Graph:
    """Convert any networkx graph (directed, multi, any node ids, ``pos`` as tuple / list / ndarray) to the project's
    representation: a new undirected simple :class:`networkx.Graph` with ids ``0..N-1`` and tuple ``pos`` multiplied
    by ``scale``. The input is not modified; the original ids are kept in the node attribute ``"source_id"``.

    Raises ``ValueError`` when a node lacks ``pos_key`` or its position is not two finite numbers.
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"`graph` must be a networkx graph, got {type(graph).__name__}")
    nodes, pos = node_positions(graph, "graph", pos_key, allow_extra=True)
    index = {n: i for i, n in enumerate(nodes)}
    out = nx.Graph()
    for i, (n, (x, y)) in enumerate(zip(nodes, pos.tolist(), strict=True)):
        out.add_node(i, pos=(x * scale, y * scale), source_id=n)
    out.add_edges_from((index[u], index[v]) for u, v in graph.edges() if u != v)
    return out


def read_graph(path: str | Path) -> nx.Graph:
    """Read one graph, choosing the reader from the file name.

    ``.graph`` / ``.txt``: RoadTracer text; ``.geojson`` / ``.json``: GeoJSON (lon/lat to local metres); ``.p`` /
    ``.pkl`` / ``.pickle`` / ``.gpickle``: a Sat2Graph adjacency dict or a single pickled networkx graph.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"graph file not found: {path}")
    graph = _read_graph_file(path)
    check_graph_size(graph.number_of_nodes(), graph.number_of_edges(), path)
    return graph


def _read_graph_file(path: Path) -> nx.Graph:
    suffix = path.suffix.lower()
    if suffix in (".graph", ".txt"):
        return read_roadtracer_graph(path)
    if suffix in (".geojson", ".json"):
        return read_geojson(path)
    if suffix in (".p", ".pkl", ".pickle", ".gpickle"):
        obj = safe_pickle_load(path)
        if isinstance(obj, nx.Graph):
            try:
                return to_graph(obj)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
        if isinstance(obj, dict) and all(isinstance(k, tuple) and len(k) == 2 for k in list(obj)[:10]):
            return read_sat2graph_pickle(path)
        raise ValueError(
            f"{path}: pickle holds {type(obj).__name__}, not a graph; use read_networkx_pickle() for containers"
        )
    raise ValueError(f"{path}: unknown graph format {suffix!r} (expected .graph, .geojson, .json, .p, .pickle)")
