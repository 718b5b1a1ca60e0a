"""Graph geometry shared by the road-network (``roadnet``) and lane-graph (``lanegraph``) metrics.

Layer 1 (a shared lower package, see ``docs/pages/conventions.md``, "Who imports whom"): it imports no metric
domain, and both graph domains import it instead of each other.

- :mod:`~drivemetrics.graph.geometry`: graphs as arrays (``GraphArrays``, ``node_positions``, ``validate_graph``),
  densifying, projection (``SegmentIndex``), cropping, chains, one-to-one point matching, the length csgraph.
- :mod:`~drivemetrics.graph.path_similarity`: the one APLS core (``path_differences``, ``apls_scores``) with the
  parameter sets of the road-network and UrbanLaneGraph variants.

The public names stay exported by their domains (``drivemetrics.roadnet.GraphArrays``); this package has no exports
of its own.
"""
