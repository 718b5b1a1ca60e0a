"""Road-network metrics on graphs (Citraro et al.; RoadTracer / SpaceNet / Sat2Graph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.roadnet.io`, shared geometry and kernel helpers in
:mod:`drivemetrics.graph.geometry`, the APLS core in :mod:`drivemetrics.graph.path_similarity`.

One module per family holds its kernel and its Metric classes (``opt_j``: :func:`~drivemetrics.roadnet.opt_j.opt_j`,
:class:`OptJMetrics`, :class:`OptJPrecision`, ...): ``opt_p``, ``opt_j``, ``opt_g``, ``apls``, ``ccq``, ``tlts``,
``junct``, ``subg``. This package exports the classes (Metric, result and data types); the kernels are in
:mod:`drivemetrics.functional` (``drivemetrics.functional.apls``) and in their modules
(``from drivemetrics.roadnet.apls import apls``), readers in :mod:`drivemetrics.roadnet.io`, dataset evaluation in
:mod:`drivemetrics.roadnet.evaluate`. UrbanLaneGraph lane-graph metrics (directed graphs) are in
:mod:`drivemetrics.lanegraph`.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "APLSMetrics": "drivemetrics.roadnet.apls",
    "APLSScore": "drivemetrics.roadnet.apls",
    "CCQCompleteness": "drivemetrics.roadnet.ccq",
    "CCQCorrectness": "drivemetrics.roadnet.ccq",
    "CCQMetrics": "drivemetrics.roadnet.ccq",
    "CCQQuality": "drivemetrics.roadnet.ccq",
    "JunctionFCorrect": "drivemetrics.roadnet.junct",
    "JunctionFError": "drivemetrics.roadnet.junct",
    "JunctionMetrics": "drivemetrics.roadnet.junct",
    "OptGF1Score": "drivemetrics.roadnet.opt_g",
    "OptGMetrics": "drivemetrics.roadnet.opt_g",
    "OptGPrecision": "drivemetrics.roadnet.opt_g",
    "OptGRecall": "drivemetrics.roadnet.opt_g",
    "OptJF1Score": "drivemetrics.roadnet.opt_j",
    "OptJMetrics": "drivemetrics.roadnet.opt_j",
    "OptJPrecision": "drivemetrics.roadnet.opt_j",
    "OptJRecall": "drivemetrics.roadnet.opt_j",
    "OptPF1Score": "drivemetrics.roadnet.opt_p",
    "OptPMetrics": "drivemetrics.roadnet.opt_p",
    "OptPPrecision": "drivemetrics.roadnet.opt_p",
    "OptPRecall": "drivemetrics.roadnet.opt_p",
    "SubgraphF1Score": "drivemetrics.roadnet.subg",
    "SubgraphMetrics": "drivemetrics.roadnet.subg",
    "TLTSAccuracy": "drivemetrics.roadnet.tlts",
    "TLTSMetrics": "drivemetrics.roadnet.tlts",
}
_EXPORTS = {
    **_METRICS,
    "GraphArrays": "drivemetrics.graph.geometry",
    "Projection": "drivemetrics.graph.geometry",
    "roadnet_example_inputs": "drivemetrics.roadnet.examples",
    "SegmentIndex": "drivemetrics.graph.geometry",
    "UnsafePickleError": "drivemetrics.roadnet.io",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
