"""Road-network metrics on graphs (RoadTracer / SpaceNet / Sat2Graph / UrbanLaneGraph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.graph.io`, shared geometry in :mod:`drivemetrics.graph.geometry`.
"""

from __future__ import annotations

from drivemetrics.graph.geometry import (
    SegmentIndex,
    control_nodes,
    crop,
    densify,
    endpoints,
    graph_arrays,
    junctions,
    project_points,
    snap_points,
    validate_graph,
)
from drivemetrics.graph.io import (
    UnsafePickleError,
    read_geojson,
    read_graph,
    read_networkx_pickle,
    read_roadtracer_graph,
    read_sat2graph_pickle,
    safe_pickle_load,
    to_graph,
    write_roadtracer_graph,
)

__all__ = [
    "SegmentIndex",
    "UnsafePickleError",
    "control_nodes",
    "crop",
    "densify",
    "endpoints",
    "graph_arrays",
    "junctions",
    "project_points",
    "read_geojson",
    "read_graph",
    "read_networkx_pickle",
    "read_roadtracer_graph",
    "read_sat2graph_pickle",
    "safe_pickle_load",
    "snap_points",
    "to_graph",
    "validate_graph",
    "write_roadtracer_graph",
]
