"""Road-network metrics on graphs (Citraro et al.; RoadTracer / SpaceNet / Sat2Graph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.roadnet.io`, shared geometry and kernel helpers in
:mod:`drivemetrics.roadnet.geometry`, the APLS core in :mod:`drivemetrics.roadnet.path_similarity`.

One module per family holds its kernel and its Metric classes (``opt_j``: :func:`opt_j`, :class:`OptJMetrics`,
:class:`OptJPrecision`, ...): ``opt_p``, ``opt_j``, ``opt_g``, ``apls``, ``ccq``, ``tlts``, ``junct``, ``subg``.
The package attribute of a kernel's name is the kernel (``drivemetrics.roadnet.apls`` is the function); reach a
module's other names with ``from drivemetrics.roadnet.apls import PROTOCOLS``. UrbanLaneGraph lane-graph metrics
(directed graphs) are in :mod:`drivemetrics.lanegraph`.
"""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "apls": "drivemetrics.roadnet.apls",
    "APLSMetrics": "drivemetrics.roadnet.apls",
    "APLSResult": "drivemetrics.roadnet.apls",
    "APLSScore": "drivemetrics.roadnet.apls",
    "ccq": "drivemetrics.roadnet.ccq",
    "ccq_graph": "drivemetrics.roadnet.ccq",
    "CCQCompleteness": "drivemetrics.roadnet.ccq",
    "CCQCorrectness": "drivemetrics.roadnet.ccq",
    "CCQMetrics": "drivemetrics.roadnet.ccq",
    "CCQQuality": "drivemetrics.roadnet.ccq",
    "CCQResult": "drivemetrics.roadnet.ccq",
    "control_nodes": "drivemetrics.roadnet.geometry",
    "crop": "drivemetrics.roadnet.geometry",
    "crop_protocol": "drivemetrics.roadnet.evaluate",
    "decompose_into_paths": "drivemetrics.roadnet.opt_p",
    "densify": "drivemetrics.roadnet.geometry",
    "densify_arrays": "drivemetrics.roadnet.geometry",
    "endpoints": "drivemetrics.roadnet.geometry",
    "evaluate_dataset": "drivemetrics.roadnet.evaluate",
    "evaluate_pair": "drivemetrics.roadnet.evaluate",
    "graph_arrays": "drivemetrics.roadnet.geometry",
    "graph_from_arrays": "drivemetrics.roadnet.geometry",
    "graph_length": "drivemetrics.roadnet.geometry",
    "GraphArrays": "drivemetrics.roadnet.geometry",
    "junct": "drivemetrics.roadnet.junct",
    "JunctionFCorrect": "drivemetrics.roadnet.junct",
    "JunctionFError": "drivemetrics.roadnet.junct",
    "JunctionMetrics": "drivemetrics.roadnet.junct",
    "junctions": "drivemetrics.roadnet.geometry",
    "JUNCTResult": "drivemetrics.roadnet.junct",
    "match_points": "drivemetrics.roadnet.geometry",
    "max_matching_min_cost": "drivemetrics.roadnet.geometry",
    "opt_g": "drivemetrics.roadnet.opt_g",
    "opt_j": "drivemetrics.roadnet.opt_j",
    "opt_p": "drivemetrics.roadnet.opt_p",
    "OptGF1Score": "drivemetrics.roadnet.opt_g",
    "OptGMetrics": "drivemetrics.roadnet.opt_g",
    "OptGPrecision": "drivemetrics.roadnet.opt_g",
    "OptGRecall": "drivemetrics.roadnet.opt_g",
    "OptGResult": "drivemetrics.roadnet.opt_g",
    "OptJF1Score": "drivemetrics.roadnet.opt_j",
    "OptJMetrics": "drivemetrics.roadnet.opt_j",
    "OptJPrecision": "drivemetrics.roadnet.opt_j",
    "OptJRecall": "drivemetrics.roadnet.opt_j",
    "OptJResult": "drivemetrics.roadnet.opt_j",
    "OptPF1Score": "drivemetrics.roadnet.opt_p",
    "OptPMetrics": "drivemetrics.roadnet.opt_p",
    "OptPPrecision": "drivemetrics.roadnet.opt_p",
    "OptPRecall": "drivemetrics.roadnet.opt_p",
    "OptPResult": "drivemetrics.roadnet.opt_p",
    "perturb": "drivemetrics.roadnet.perturb",
    "PERTURBATIONS": "drivemetrics.roadnet.perturb",
    "project_points": "drivemetrics.roadnet.geometry",
    "Projection": "drivemetrics.roadnet.geometry",
    "read_geojson": "drivemetrics.roadnet.io",
    "read_graph": "drivemetrics.roadnet.io",
    "read_networkx_pickle": "drivemetrics.roadnet.io",
    "read_roadtracer_graph": "drivemetrics.roadnet.io",
    "read_sat2graph_pickle": "drivemetrics.roadnet.io",
    "resample_chains": "drivemetrics.roadnet.geometry",
    "road_chains": "drivemetrics.roadnet.geometry",
    "run_sensitivity": "drivemetrics.roadnet.sensitivity",
    "safe_pickle_load": "drivemetrics.roadnet.io",
    "SegmentIndex": "drivemetrics.roadnet.geometry",
    "snap_points": "drivemetrics.roadnet.geometry",
    "subg": "drivemetrics.roadnet.subg",
    "SubgraphF1Score": "drivemetrics.roadnet.subg",
    "SubgraphMetrics": "drivemetrics.roadnet.subg",
    "SUBGResult": "drivemetrics.roadnet.subg",
    "tlts": "drivemetrics.roadnet.tlts",
    "TLTSAccuracy": "drivemetrics.roadnet.tlts",
    "TLTSMetrics": "drivemetrics.roadnet.tlts",
    "TLTSResult": "drivemetrics.roadnet.tlts",
    "to_graph": "drivemetrics.roadnet.io",
    "translate": "drivemetrics.roadnet.geometry",
    "UnsafePickleError": "drivemetrics.roadnet.io",
    "validate_graph": "drivemetrics.roadnet.geometry",
    "write_roadtracer_graph": "drivemetrics.roadnet.io",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
