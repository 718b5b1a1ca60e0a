"""Scalar Metric classes of the graph metrics, one headline value each, for Lightning's ``self.log``.

Each class subclasses its family's dict Metric (same arguments, same states) and returns one key of its
``compute()``; a ``MetricCollection`` of the classes of one family (e.g. ``OptJPrecision``, ``OptJRecall``,
``OptJF1Score``) runs the matching once per tile. A constant ``config_key`` state built from the family's options
keeps differently configured metrics out of one compute group.
"""

from __future__ import annotations

from drivemetrics._metric import ScalarFromDict
from drivemetrics.roadnet.apls import AveragePathLengthSimilarity
from drivemetrics.roadnet.ccq import CorrectnessCompletenessQuality
from drivemetrics.roadnet.junct import JunctionMetric
from drivemetrics.roadnet.metrics import OptG, OptJ, OptP
from drivemetrics.roadnet.subg import SubgraphMetric
from drivemetrics.roadnet.tlts import TooLongTooShort

__all__ = [
    "APLS",
    "CCQCompleteness",
    "CCQCorrectness",
    "CCQQuality",
    "JunctionFCorrect",
    "JunctionFError",
    "OptGF1Score",
    "OptGPrecision",
    "OptGRecall",
    "OptJF1Score",
    "OptJPrecision",
    "OptJRecall",
    "OptPF1Score",
    "OptPPrecision",
    "OptPRecall",
    "SubgraphF1Score",
    "TooLongTooShortCorrect",
]


class _GraphScalar(ScalarFromDict):
    """Graph scalar: not differentiable, a ratio in [0, 1], higher is better unless a class says otherwise."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def _state_config(self) -> object:
        options = getattr(self, "options", None)
        if options is None:  # CCQ keeps its options as attributes
            options = {"slack": self.slack, "scale": self.scale, "canvas": self.canvas}  # type: ignore[attr-defined]
        family = next(c.__name__ for c in type(self).__mro__ if c.__module__ != __name__ and c is not ScalarFromDict)
        return (family, sorted(options.items()), getattr(self, "compat", None))


class OptJPrecision(_GraphScalar, OptJ):
    """OPT-J junction precision, counts summed over tiles (arguments as :class:`OptJ`)."""

    key = "precision"


class OptJRecall(_GraphScalar, OptJ):
    """OPT-J junction recall, counts summed over tiles (arguments as :class:`OptJ`)."""

    key = "recall"


class OptJF1Score(_GraphScalar, OptJ):
    """OPT-J junction F1, counts summed over tiles (arguments as :class:`OptJ`)."""

    key = "f1"


class OptPPrecision(_GraphScalar, OptP):
    """OPT-P path precision, mean over tiles (arguments as :class:`OptP`)."""

    key = "precision"


class OptPRecall(_GraphScalar, OptP):
    """OPT-P path recall, mean over tiles (arguments as :class:`OptP`)."""

    key = "recall"


class OptPF1Score(_GraphScalar, OptP):
    """OPT-P F1 of the mean precision and recall (arguments as :class:`OptP`)."""

    key = "f1"


class OptGPrecision(_GraphScalar, OptG):
    """OPT-G subgraph precision, counts summed over tiles (arguments as :class:`OptG`)."""

    key = "precision"


class OptGRecall(_GraphScalar, OptG):
    """OPT-G subgraph recall, counts summed over tiles (arguments as :class:`OptG`)."""

    key = "recall"


class OptGF1Score(_GraphScalar, OptG):
    """OPT-G F1, counts summed over tiles (arguments as :class:`OptG`)."""

    key = "f1"


class APLS(_GraphScalar, AveragePathLengthSimilarity):
    """APLS from the path differences pooled over tiles (arguments as :class:`AveragePathLengthSimilarity`)."""

    key = "apls"


class CCQCorrectness(_GraphScalar, CorrectnessCompletenessQuality):
    """CCQ correctness (precision of predicted road pixels within the slack), arguments as the CCQ Metric."""

    key = "correctness"


class CCQCompleteness(_GraphScalar, CorrectnessCompletenessQuality):
    """CCQ completeness (recall of ground-truth road pixels within the slack), arguments as the CCQ Metric."""

    key = "completeness"


class CCQQuality(_GraphScalar, CorrectnessCompletenessQuality):
    """CCQ quality (``TP / (TP + FP + FN)`` of road pixels), arguments as the CCQ Metric."""

    key = "quality"


class JunctionFCorrect(_GraphScalar, JunctionMetric):
    """JUNCT ``F_correct`` (higher is better), scores summed over tiles (arguments as :class:`JunctionMetric`)."""

    key = "f_correct"


class JunctionFError(_GraphScalar, JunctionMetric):
    """JUNCT ``F_error`` (lower is better), scores summed over tiles (arguments as :class:`JunctionMetric`)."""

    key = "f_error"
    higher_is_better = False


class SubgraphF1Score(_GraphScalar, SubgraphMetric):
    """SUBG F1 of holes and marbles, counts summed over tiles (arguments as :class:`SubgraphMetric`)."""

    key = "f1"


class TooLongTooShortCorrect(_GraphScalar, TooLongTooShort):
    """TLTS fraction of correct paths, pooled over tiles (arguments as :class:`TooLongTooShort`)."""

    key = "correct"
