"""Shared pieces of the ``torchmetrics.Metric`` classes: the family / scalar pattern, config keys and ``plot``.

One way to write a family (see ``docs/pages/conventions.md``):

- the family class derives from :class:`MetricFamily` and does all the work: its states, ``update``, a ``compute``
  that returns a dict of named values, and its ``plot`` (inherited unless it draws something special);
- a scalar class, for Lightning's ``self.log(name, metric)`` (which cannot log a dict), is one declaration:
  ``class CULaneF1Score(ScalarMetric, CULaneMetrics)`` with a docstring (one line and a ``>>>`` example) and its
  ``key`` in the family's dict. ``compute`` and ``plot`` come from :class:`ScalarMetric`, the constructor and the
  states from the family, so a ``MetricCollection`` of several scalar classes of one family counts once per batch
  (torchmetrics compute groups). A key may name the instance's attributes (``"{cls}_{metric}_r{recall_points}"``):
  a scalar that picks its value by an argument adds that argument in an ``__init__`` (validated, stored), and
  nothing else.

Compute groups are formed by comparing state values after the first update, so two metrics of one family that
count differently (another threshold, another image size, ...) could be merged by accident when their first
counts coincide. :func:`add_config_state` adds a constant state derived from the counting options to prevent it.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.extras import require
from drivemetrics._internal.torchmetrics_base import base_metric

if TYPE_CHECKING:
    from torchmetrics import Metric
else:
    Metric = base_metric()  # torchmetrics.Metric without the rest of torchmetrics (start-up: see the module)

__all__ = [
    "CheckedStateMetric",
    "DictFamilyLogCheck",
    "MetricFamily",
    "ScalarMetric",
    "add_config_state",
    "config_key",
    "plot_metric",
]

CONFIG_STATE = "config_key"
#: The constant states that say what a family counts (``counting_config``: the road pixel metrics' own form).
CONFIG_STATES = (CONFIG_STATE, "counting_config")


def config_key(config: object) -> Tensor:
    """An int64 tensor of 8 values in 0..255 identifying ``repr(config)`` (a sha256 prefix).

    Small integers, so torchmetrics' ``allclose`` state comparison tells any two different keys apart.
    """
    digest = hashlib.sha256(repr(config).encode("utf-8")).digest()[:8]
    return torch.tensor(list(digest), dtype=torch.int64)


def add_config_state(metric: Metric, config: object) -> None:
    """Add the constant state ``config_key`` (see :func:`config_key`) to ``metric``, once.

    ``config`` holds everything that changes what the metric counts (not what ``compute`` reads from the counts).
    The state is reduced with ``max`` (equal on every process) and restored by ``reset``.
    """
    if CONFIG_STATE not in metric._defaults:
        metric.add_state(CONFIG_STATE, config_key(config), dist_reduce_fx="max")
    metric.__dict__["_config"] = config  # named in the errors of merge_state / load_state_dict


def plot_metric(metric: Metric, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
    """torchmetrics' ``plot``: a value, a sequence of values (one per epoch) or a dict of scalars, with matplotlib.

    Args:
        metric: the metric whose name, bounds and ``higher_is_better`` label the plot.
        val: a value from ``compute`` / ``forward``, or a sequence of them; default: ``metric.compute()``.
        ax: matplotlib axes to draw into (default: a new figure).

    Returns:
        ``(figure, axes)``.
    """
    require("plot", "matplotlib.pyplot", "plot()")
    if isinstance(val, Sequence) and not isinstance(val, str) and not arrays.is_tensor(val):
        val = list(val)
    return metric._plot(val, ax)


class ScalarMetric(Metric):
    """One value of a family's dict, for ``self.log``: put it first in the bases, ``(ScalarMetric, <Family>)``.

    A subclass sets ``key``: the name of its value in the family's ``compute()`` dict, or a ``str.format`` template
    over the instance's attributes (``"precision_lat_{distance:g}m"``).
    """

    key: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_") and not cls.key:
            raise TypeError(f"{cls.__name__} is a scalar class without a `key` (the name of its value)")

    @property
    def family_key(self) -> str:
        """The name of this metric's value in the family's dict (``key`` filled in from the instance)."""
        return self.key.format_map(self.__dict__)

    def compute(self) -> Tensor:
        """The value named by :attr:`family_key` in the family's dict (0-d)."""
        return super().compute()[self.family_key]

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> tuple[Any, Any]:
        """Plot a value, or a sequence of values over epochs (default: the current value); ``(fig, ax)``."""
        return plot_metric(self, val, ax)


#: Lightning's packages. Lightning gives a logged Metric no hook: during ``self.log`` it only checks
#: ``isinstance(value, Metric)``, reads ``value.device`` and copies ``value._forward_cache`` (its result collection,
#: ``_ResultMetric.update``); ``compute`` runs at the end of the epoch. The read of ``_forward_cache`` by Lightning
#: code is the one signal of a log call, so the check keys on the reading module's package, not on its path inside
#: Lightning (which has moved between releases).
_LIGHTNING_PACKAGES = ("pytorch_lightning", "lightning.pytorch")


def _read_by_lightning(frame: FrameType | None) -> bool:
    """Whether ``frame`` (the reader of ``_forward_cache``) runs code of a Lightning package (False when unknown)."""
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return isinstance(module, str) and any(module == p or module.startswith(p + ".") for p in _LIGHTNING_PACKAGES)


class DictFamilyLogCheck:
    """Mixin of a dict family (``compute() -> dict``): ``self.log(name, family)`` fails at the call, not at epoch end.

    Lightning can only log a Metric whose ``compute`` returns one tensor, and it finds out at the end of the epoch,
    after the whole epoch has run. The one thing ``self.log`` reads from a logged Metric during the call is its
    ``_forward_cache``; this mixin turns that read, when Lightning's code makes it and the class returns a dict,
    into a ``TypeError`` that names the family's scalar classes (its subclasses that return one value). Everything
    else (``forward``, ``.to()``, user code) reads and writes ``_forward_cache`` as usual. On a Python without frame
    introspection (``inspect.currentframe()`` is None) the check is skipped and Lightning fails at epoch end as
    without it. Put it first in the bases of the family: ``class CULaneMetrics(DictFamilyLogCheck, Metric)``
    (:class:`MetricFamily` is that pair).
    """

    @property
    def _forward_cache(self) -> Any:
        frame = inspect.currentframe()
        reader = frame.f_back if frame is not None else None
        try:
            if _read_by_lightning(reader) and _dict_family_of(type(self)) is not None:
                raise TypeError(_log_message(type(self)))
        finally:
            del frame, reader  # no reference cycle through the frames
        return self.__dict__.get("_dict_family_forward_cache")

    @_forward_cache.setter
    def _forward_cache(self, value: Any) -> None:
        self.__dict__["_dict_family_forward_cache"] = value


class CheckedStateMetric(Metric):
    """``merge_state`` and ``load_state_dict`` that refuse the states of a metric made with another configuration
    (one ``ValueError`` naming the difference: :func:`add_config_state`'s configuration, a configuration state, or
    a state of another shape) and drop the cached ``compute()`` value, which torchmetrics keeps (its ``SumMetric``
    returns the value from before the merge). Every family has it through :class:`MetricFamily`."""

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """torchmetrics' ``merge_state``, after checking that both were made with the same configuration (one
        ``ValueError`` naming the difference), and without a stale ``compute()`` value afterwards."""
        if isinstance(incoming_state, Metric) and isinstance(incoming_state, type(self)):
            _check_same_config(self, getattr(incoming_state, "_config", None), incoming_state.metric_state, "merge")
        elif isinstance(incoming_state, dict):
            _check_same_config(self, None, incoming_state, "merge")
        super().merge_state(incoming_state)
        self._computed = None  # the cached value counted without the merged state

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Refuse the states of a metric made with another configuration (one ``ValueError`` naming the state that
        differs) before loading them, and drop the cached ``compute()`` value."""
        states = {key: state_dict[prefix + key] for key in self._defaults if prefix + key in state_dict}
        _check_same_config(self, None, states, "load")
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        self._computed = None


class MetricFamily(DictFamilyLogCheck, CheckedStateMetric):
    """Base of a family: its subclass holds the states, ``update`` and ``compute() -> dict[str, Tensor]``.

    ``plot`` draws the dict's values (or a sequence of dicts, one per epoch); ``self.log(name, family)`` fails at
    the call with a message naming the family's scalar classes (:class:`DictFamilyLogCheck`).
    """

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Plot the values (default: the current ones), or a sequence of them over epochs; ``(fig, ax)``."""
        return plot_metric(self, val, ax)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_same_config(metric: Metric, config: object, states: dict[str, Any], action: str) -> None:
    """One ``ValueError`` when ``states`` (of another metric of ``metric``'s class, or a state dict) were counted
    with another configuration: the configurations differ (named where known), a configuration state differs, or a
    tensor state has another shape (another threshold count, another number of classes)."""
    name = type(metric).__name__
    what = "merge the state of" if action == "merge" else "load a state_dict of"
    mine = metric.__dict__.get("_config")
    if config is not None and mine is not None and repr(config) != repr(mine):
        if isinstance(config, tuple) and isinstance(mine, tuple) and len(config) == len(mine):
            config, mine = next((a, b) for a, b in zip(config, mine, strict=True) if repr(a) != repr(b))
        raise ValueError(
            f"cannot {what} a {name} made with another configuration: {_short(config)} there, {_short(mine)} here"
        )
    for key, value in states.items():
        default = metric._defaults.get(key)
        if not arrays.is_tensor(default) or not arrays.is_tensor(value):
            continue
        ours = getattr(metric, key)
        if key in CONFIG_STATES and (value.shape != ours.shape or not torch.equal(value.cpu(), ours.cpu())):
            raise ValueError(
                f"cannot {what} a {name} made with another configuration (its `{key}` differs; this one: "
                f"{_short(mine) if mine is not None else 'see its arguments'})"
            )
        if value.shape != ours.shape:
            raise ValueError(
                f"cannot {what} a {name} made with another configuration: state `{key}` has shape "
                f"{tuple(value.shape)} there, {tuple(ours.shape)} here (other thresholds or classes?)"
            )


def _dict_family_of(cls: type) -> type | None:
    """The dict family ``cls`` belongs to if ``cls`` still returns its dict, else ``None`` (a scalar class).

    The family is the topmost class of the chain (below the shared bases) that defines ``compute``; a class with
    another ``compute``, or a :class:`ScalarMetric`, returns one value.
    """
    if issubclass(cls, ScalarMetric):
        return None
    chain = [
        c for c in cls.__mro__ if issubclass(c, DictFamilyLogCheck) and c not in (DictFamilyLogCheck, MetricFamily)
    ]
    definers = [c for c in chain if "compute" in vars(c)]
    if not definers or cls.compute is not definers[-1].compute:  # type: ignore[attr-defined]
        return None
    return definers[-1]


def _scalar_classes(family: type) -> list[str]:
    """Names of the public subclasses of ``family``, at any depth, that return one value (another ``compute``).

    Private intermediate classes (``_Scalar``) are left out; their public subclasses are named.
    """
    names, pending = set(), list(family.__subclasses__())
    while pending:
        sub = pending.pop()
        pending += sub.__subclasses__()
        if sub.compute is not family.compute and not sub.__name__.startswith("_"):  # type: ignore[attr-defined]
            names.add(sub.__name__)
    return sorted(names)


def _log_message(cls: type) -> str:
    scalars = _scalar_classes(cls)
    use = f"log one of its scalar classes ({', '.join(scalars)})" if scalars else "log its scalar values"
    return (
        f"{cls.__name__} returns a dict from compute(), which Lightning's self.log cannot log (it would fail at the "
        f"end of the epoch): {use}, alone or in a MetricCollection, or call self.log_dict(metric.compute()) "
        "in on_validation_epoch_end"
    )
