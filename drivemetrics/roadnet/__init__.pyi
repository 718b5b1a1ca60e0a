"""Type stub of the lazy exports of :mod:`drivemetrics.roadnet` (kept equal to ``_EXPORTS`` by a test)."""

from drivemetrics.roadnet.apls import APLSMetrics as APLSMetrics
from drivemetrics.roadnet.apls import APLSScore as APLSScore
from drivemetrics.roadnet.ccq import CCQCompleteness as CCQCompleteness
from drivemetrics.roadnet.ccq import CCQCorrectness as CCQCorrectness
from drivemetrics.roadnet.ccq import CCQMetrics as CCQMetrics
from drivemetrics.roadnet.ccq import CCQQuality as CCQQuality
from drivemetrics.roadnet.geometry import GraphArrays as GraphArrays
from drivemetrics.roadnet.geometry import Projection as Projection
from drivemetrics.roadnet.geometry import SegmentIndex as SegmentIndex
from drivemetrics.roadnet.io import UnsafePickleError as UnsafePickleError
from drivemetrics.roadnet.junct import JunctionFCorrect as JunctionFCorrect
from drivemetrics.roadnet.junct import JunctionFError as JunctionFError
from drivemetrics.roadnet.junct import JunctionMetrics as JunctionMetrics
from drivemetrics.roadnet.opt_g import OptGF1Score as OptGF1Score
from drivemetrics.roadnet.opt_g import OptGMetrics as OptGMetrics
from drivemetrics.roadnet.opt_g import OptGPrecision as OptGPrecision
from drivemetrics.roadnet.opt_g import OptGRecall as OptGRecall
from drivemetrics.roadnet.opt_j import OptJF1Score as OptJF1Score
from drivemetrics.roadnet.opt_j import OptJMetrics as OptJMetrics
from drivemetrics.roadnet.opt_j import OptJPrecision as OptJPrecision
from drivemetrics.roadnet.opt_j import OptJRecall as OptJRecall
from drivemetrics.roadnet.opt_p import OptPF1Score as OptPF1Score
from drivemetrics.roadnet.opt_p import OptPMetrics as OptPMetrics
from drivemetrics.roadnet.opt_p import OptPPrecision as OptPPrecision
from drivemetrics.roadnet.opt_p import OptPRecall as OptPRecall
from drivemetrics.roadnet.subg import SubgraphF1Score as SubgraphF1Score
from drivemetrics.roadnet.subg import SubgraphMetrics as SubgraphMetrics
from drivemetrics.roadnet.tlts import TLTSAccuracy as TLTSAccuracy
from drivemetrics.roadnet.tlts import TLTSMetrics as TLTSMetrics

__all__ = [
    "APLSMetrics",
    "APLSScore",
    "CCQCompleteness",
    "CCQCorrectness",
    "CCQMetrics",
    "CCQQuality",
    "GraphArrays",
    "JunctionFCorrect",
    "JunctionFError",
    "JunctionMetrics",
    "OptGF1Score",
    "OptGMetrics",
    "OptGPrecision",
    "OptGRecall",
    "OptJF1Score",
    "OptJMetrics",
    "OptJPrecision",
    "OptJRecall",
    "OptPF1Score",
    "OptPMetrics",
    "OptPPrecision",
    "OptPRecall",
    "Projection",
    "SegmentIndex",
    "SubgraphF1Score",
    "SubgraphMetrics",
    "TLTSAccuracy",
    "TLTSMetrics",
    "UnsafePickleError",
]
