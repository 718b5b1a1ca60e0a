"""One battery for every exported ``torchmetrics.Metric`` class (modelled on torchmetrics' ``MetricTester``).

Classes are discovered from the ``_EXPORTS`` (or ``__all__``) of the domain packages that exist (see ``DOMAINS``)
and their sub-packages, so a new Metric class joins automatically; its inputs come from the registry in
``tests/metric_inputs.py`` (read its docstring to register a class; an unregistered class FAILS here).

Per class, against reference values computed by the same class on one process from fresh instances (the numbers
themselves are checked by each metric's own tests; this battery checks the Metric mechanics):

- metadata: ``higher_is_better`` / ``is_differentiable`` / ``full_state_update`` are bools, plot bounds are
  declared, and they are constants (torchmetrics forbids reassigning them);
- ``forward`` returns the value of the batch alone and accumulates like ``update``;
- ``reset`` restores every state; pickling and ``clone`` keep the states; ``state_dict`` is empty by default and
  round-trips with ``persistent(True)``; ``merge_state`` of two halves equals one pass;
- float64 inputs give the float32 values, float16 inputs give finite values, and outputs carry gradients
  exactly when ``is_differentiable``;
- ``compute`` returns a tensor or a dict of tensors, and a dict-returning class has scalar subclasses that share
  its states: a ``MetricCollection`` of them forms one compute group and gives the standalone values;
- ``plot()`` draws the current value and a sequence of values;
- DDP (marked ``ddp``): two gloo processes, batches strided across ranks, give the one-process value, leave the
  local states untouched, and with ``dist_sync_on_step=True`` each ``forward`` gives the value of both ranks'
  batches. One process group serves every class.
- Spawn-shared states (marked ``ddp``, in the same process group), the way Lightning's ``ddp_spawn`` hands a
  model to its workers: the parent holds one instance of every class and passes it to
  ``torch.multiprocessing.spawn``, whose pickler moves the states into shared memory, so both workers start from
  the parent's storage. Uneven data (batches 0-2 on rank 0, batch 3 on rank 1) gives the one-process value, and
  the parent's instance keeps its default states (a worker writing into a state in place would change both).
  Updates keep every tensor state's dtype and shape (one process).
- Uneven DDP (marked ``ddp`` and ``slow``): three gloo processes, one of them without any update, or with
  different numbers of batches (see ``UNEVEN_SPLITS``), give the one-process value: exactly for integer values,
  to 1e-12 for floats. One process group serves every class and split.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import pickle
import pkgutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import Tensor
from torchmetrics import Metric, MetricCollection

from tests.ddp import run_distributed
from tests.metric_inputs import INPUT_FACTORIES, NUM_BATCHES, MetricCase, make_case

DOMAINS = ("road", "lane", "roadnet", "lanegraph", "attack", "detection", "lanetopology", "vectormap", "lane3d")
WORLD_SIZE = 2
#: split name -> the batches each of three ranks updates with (issue 30: empty and uneven ranks)
UNEVEN_SPLITS: dict[str, list[list[int]]] = {"one_rank_empty": [[0, 1], [], [2, 3]], "uneven": [[3], [0, 1], [2]]}
EXACT_RTOL = EXACT_ATOL = 1e-12
RTOL, ATOL = 1e-6, 1e-8
METADATA_FLAGS = ("higher_is_better", "is_differentiable", "full_state_update")

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*compute.*before.*update.*:UserWarning",
    "ignore:This property will be removed in 2.0.0:DeprecationWarning",  # torchmetrics' own copy / pickle path
)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny inputs: one intra-op thread is faster, and far faster on a loaded machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------------------------------------------
# discovery


def _domain_packages() -> Iterator[ModuleType]:
    for domain in DOMAINS:
        name = f"drivemetrics.{domain}"
        try:
            package = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:  # this domain does not exist (yet)
                continue
            raise
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.ispkg:
                yield importlib.import_module(info.name)


def discover_metric_classes() -> list[type[Metric]]:
    """Every ``Metric`` subclass exported by a domain package, once, sorted by name."""
    found: dict[str, type[Metric]] = {}
    for package in _domain_packages():
        for name in getattr(package, "_EXPORTS", None) or getattr(package, "__all__", ()):
            obj = getattr(package, name)
            if inspect.isclass(obj) and issubclass(obj, Metric):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(found.values(), key=lambda cls: (cls.__name__, cls.__module__))


METRIC_CLASSES = discover_metric_classes()


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _load_class(path: str) -> type[Metric]:
    module, qualname = path.split(":")
    return getattr(importlib.import_module(module), qualname)


def _case(cls: type[Metric]) -> MetricCase:
    if cls not in INPUT_FACTORIES:
        pytest.fail(
            f"{cls.__module__}.{cls.__name__} is an exported Metric without an input factory: register one in "
            "tests/metric_inputs.py (see its docstring)",
            pytrace=False,
        )
    return make_case(cls)


def _families() -> list[type[Metric]]:
    """Exported classes with exported subclasses (a dict Metric and its scalar classes)."""
    return [cls for cls in METRIC_CLASSES if any(c is not cls and issubclass(c, cls) for c in METRIC_CLASSES)]


by_class = pytest.mark.parametrize("cls", METRIC_CLASSES, ids=lambda cls: cls.__name__)


# ----------------------------------------------------------------------------------------------------------------
# values and reference results


def _values(out: Any) -> dict[str, Tensor]:
    """A compute / forward output as ``{key: tensor}`` (``""`` for a single tensor)."""
    if isinstance(out, Tensor):
        return {"": out}
    assert isinstance(out, dict), f"expected a tensor or a dict of tensors, got {type(out).__name__}"
    assert all(isinstance(v, Tensor) for v in out.values()), "a dict output must hold tensors only"
    return dict(out)


def assert_same_values(actual: Any, expected: Any, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    actual, expected = _values(actual), _values(expected)
    assert actual.keys() == expected.keys(), f"{what}: keys {sorted(actual)} != {sorted(expected)}"
    for key, value in expected.items():
        got = actual[key].detach().cpu().double()
        want = value.detach().cpu().double()
        assert got.shape == want.shape, f"{what}[{key}]: shape {tuple(got.shape)} != {tuple(want.shape)}"
        assert torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True), f"{what}[{key}]: {got} != {want}"


def _update(metric: Metric, batches: list) -> Metric:
    for args, kwargs in batches:
        metric.update(*args, **kwargs)
    return metric


class Reference:
    """One-process values of a class on its registered batches, each from a fresh instance."""

    def __init__(self, cls: type[Metric], case: MetricCase) -> None:
        self.cls, self.case = cls, case
        batches = case.batches
        self.per_batch = [self.fresh(batches[i : i + 1]) for i in range(NUM_BATCHES)]
        self.total_raw = self.fresh(batches)
        self.first_half = self.fresh(batches[:2])
        # dist_sync_on_step: step i sees rank 0's batch 2i and rank 1's batch 2i + 1
        self.per_step = [self.fresh(batches[WORLD_SIZE * i : WORLD_SIZE * (i + 1)]) for i in range(2)]

    def new(self, **extra: Any) -> Metric:
        return self.cls(**self.case.init_kwargs, **extra)

    def fresh(self, batches: list) -> Any:
        return _update(self.new(), batches).compute()


@functools.cache
def _reference(cls: type[Metric]) -> Reference:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Reference(cls, make_case(cls))


def _ref(cls: type[Metric]) -> Reference:
    _case(cls)  # fails clearly for an unregistered class
    return _reference(cls)


# ----------------------------------------------------------------------------------------------------------------
# registry and metadata


def test_every_exported_metric_has_an_input_factory():
    assert METRIC_CLASSES, "no Metric class discovered"
    missing = [f"{cls.__module__}.{cls.__name__}" for cls in METRIC_CLASSES if cls not in INPUT_FACTORIES]
    assert not missing, f"register input factories in tests/metric_inputs.py for: {', '.join(missing)}"


def test_discovery_sees_known_classes():
    names = {cls.__name__ for cls in METRIC_CLASSES}
    assert {"RoadPixelMaxFScore", "TuSimpleF1Score", "CULaneF1Score", "OptJF1Score", "PSLD"} <= names


@by_class
def test_metadata(cls):
    _case(cls)
    for flag in METADATA_FLAGS:
        assert isinstance(getattr(cls, flag), bool), f"{cls.__name__}.{flag} must be set to True or False"
    assert isinstance(cls.plot_lower_bound, float), f"{cls.__name__}.plot_lower_bound must be a float"
    declared = [c for c in cls.__mro__ if c is not Metric and "plot_upper_bound" in vars(c)]
    assert declared, f"{cls.__name__}.plot_upper_bound must be declared (a float, or None when unbounded)"
    assert cls.plot_upper_bound is None or cls.plot_upper_bound > cls.plot_lower_bound
    assert cls.plot is not Metric.plot, f"{cls.__name__} needs a plot() method"
    metric = _ref(cls).new()
    for flag in (*METADATA_FLAGS, "plot_lower_bound", "plot_upper_bound"):
        with pytest.raises(RuntimeError, match="Can't change const"):
            setattr(metric, flag, getattr(metric, flag))


@by_class
def test_compute_is_loggable(cls):
    ref = _ref(cls)
    total = ref.total_raw
    if isinstance(total, Tensor):
        assert total.ndim == 0, f"{cls.__name__}.compute() must return a 0-d tensor to be logged"
        return
    _values(total)  # a dict of tensors
    scalars = [c for c in METRIC_CLASSES if issubclass(c, cls) and c is not cls and c in INPUT_FACTORIES]
    scalars = [c for c in scalars if isinstance(_reference(c).total_raw, Tensor)]
    assert scalars, f"{cls.__name__} returns a dict: export scalar subclasses of it for self.log"


# ----------------------------------------------------------------------------------------------------------------
# one process


@by_class
def test_forward_gives_the_batch_value_and_accumulates(cls):
    ref = _ref(cls)
    metric = ref.new()
    for i, (args, kwargs) in enumerate(ref.case.batches):
        assert_same_values(metric(*args, **kwargs), ref.per_batch[i], f"forward on batch {i}")
    assert_same_values(metric.compute(), ref.total_raw, "compute after forward")


@by_class
def test_reset_restores_the_states(cls):
    ref = _ref(cls)
    metric = _update(ref.new(), ref.case.batches[:2])
    assert_same_values(metric.compute(), ref.first_half, "compute")
    metric.reset()
    assert metric._update_count == 0
    for name, default in metric._defaults.items():
        state = getattr(metric, name)
        if isinstance(default, Tensor):
            assert torch.equal(state, default), f"state {name} not reset"
        else:
            assert state == [], f"list state {name} not cleared"
    _update(metric, ref.case.batches[1:2])
    assert_same_values(metric.compute(), ref.per_batch[1], "compute after reset")


@by_class
def test_updates_keep_the_dtype_and_shape_of_every_state(cls):
    ref = _ref(cls)
    metric = _update(ref.new(), ref.case.batches)
    for name, default in metric._defaults.items():
        state = getattr(metric, name)
        if isinstance(default, Tensor):
            assert (state.dtype, state.shape) == (default.dtype, default.shape), f"state {name}"


@by_class
def test_pickle_and_clone_keep_the_states(cls):
    ref = _ref(cls)
    metric = _update(ref.new(), ref.case.batches[:2])
    restored = pickle.loads(pickle.dumps(metric))
    clone = metric.clone()
    assert type(restored) is cls
    assert type(clone) is cls
    assert clone is not metric
    _update(restored, ref.case.batches[2:])
    _update(clone, ref.case.batches[2:])
    assert_same_values(restored.compute(), ref.total_raw, "unpickled metric")
    assert_same_values(clone.compute(), ref.total_raw, "cloned metric")
    assert_same_values(metric.compute(), ref.first_half, "original after its clone was updated")
    assert_same_values(copy.deepcopy(metric).compute(), metric.compute(), "deepcopy")


@by_class
def test_state_dict_is_empty_by_default_and_round_trips_when_persistent(cls):
    ref = _ref(cls)
    metric = _update(ref.new(), ref.case.batches[:2])
    assert metric.state_dict() == {}, f"{cls.__name__}: states must not be persistent by default"
    metric.persistent(True)
    saved = metric.state_dict()
    assert set(metric._defaults) <= set(saved)
    loaded = ref.new()
    loaded.persistent(True)
    loaded.load_state_dict(saved)
    assert_same_values(loaded.compute(), ref.first_half, "metric loaded from a state_dict")


@by_class
def test_merge_state_of_two_halves_equals_one_pass(cls):
    ref = _ref(cls)
    if cls.full_state_update:
        pytest.skip("full_state_update metrics cannot merge states")
    first = _update(ref.new(), ref.case.batches[:2])
    second = _update(ref.new(), ref.case.batches[2:])
    first.merge_state(second)
    assert_same_values(first.compute(), ref.total_raw, "merged metric")


@by_class
def test_float64_inputs_match_and_float16_inputs_run(cls):
    ref = _ref(cls)
    if ref.case.cast is None:
        pytest.skip("inputs are not float tensors")
    double = _update(ref.new(), [ref.case.cast(batch, torch.float64) for batch in ref.case.batches[:2]]).compute()
    if ref.case.float64_rtol is not None:
        assert_same_values(double, ref.first_half, "float64 inputs", rtol=ref.case.float64_rtol, atol=1e-6)
    half = _update(ref.new(), [ref.case.cast(batch, torch.float16) for batch in ref.case.batches[:2]]).compute()
    expected = _values(ref.first_half)
    for key, value in [*_values(double).items(), *_values(half).items()]:
        assert value.is_floating_point() == expected[key].is_floating_point(), f"{key} is {value.dtype}"
        finite = torch.isfinite(expected[key])
        assert torch.isfinite(value[finite]).all(), f"{key} not finite"


@by_class
def test_outputs_carry_gradients_iff_differentiable(cls):
    ref = _ref(cls)
    if ref.case.grad_arg is None:
        pytest.skip("no float input to differentiate")
    args, kwargs = ref.case.cast(ref.case.batches[0], torch.float64)
    args = list(args)
    args[ref.case.grad_arg] = args[ref.case.grad_arg].detach().clone().requires_grad_(True)
    out = _values(ref.new()(*args, **kwargs))
    assert any(v.requires_grad for v in out.values()) == cls.is_differentiable, (
        f"{cls.__name__}.is_differentiable is {cls.is_differentiable}"
    )


@by_class
def test_self_log_refuses_a_dict_family_at_the_call_and_takes_a_scalar_class(cls):
    """Lightning's ``self.log`` (its result collection, the code ``LightningModule.log`` calls) with the metric."""
    pytest.importorskip("pytorch_lightning")
    from pytorch_lightning.trainer.connectors.logger_connector.result import _ResultCollection

    ref = _ref(cls)
    metric = _update(ref.new(), ref.case.batches[:1])
    results = _ResultCollection(training=False)

    def log() -> None:
        results.log("validation_step", "val/metric", metric, on_step=False, on_epoch=True, batch_size=1)

    if isinstance(ref.total_raw, Tensor):
        log()  # a scalar class: logged
        return
    scalars = [c.__name__ for c in METRIC_CLASSES if issubclass(c, cls) and isinstance(_ref(c).total_raw, Tensor)]
    with pytest.raises(TypeError) as raised:
        log()
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{cls.__name__} returns a dict from compute(), which Lightning's self.log cannot log")
    assert all(name in message for name in scalars), f"{message!r} does not name every scalar class {scalars}"


@pytest.mark.parametrize("family", _families(), ids=lambda cls: cls.__name__)
def test_scalar_classes_of_a_family_share_one_compute_group(family):
    scalars = [c for c in METRIC_CLASSES if issubclass(c, family) and c is not family and c in INPUT_FACTORIES]
    scalars = [c for c in scalars if isinstance(_reference(c).total_raw, Tensor)]
    if len(scalars) < 2:
        pytest.skip(f"{family.__name__} has fewer than two scalar classes")
    collection = MetricCollection({c.__name__: _reference(c).new() for c in scalars}, compute_groups=True)
    for args, kwargs in _reference(family).case.batches:
        collection.update(*args, **kwargs)
    groups = collection.compute_groups
    assert len(groups) == 1, f"{family.__name__}: scalar classes fell into {len(groups)} compute groups: {groups}"
    values = collection.compute()
    for c in scalars:
        assert_same_values(values[c.__name__], _reference(c).total_raw, f"{c.__name__} in a MetricCollection")


def test_differently_configured_metrics_stay_in_separate_compute_groups():
    """Perfect predictions count the same for any threshold: only the ``config_key`` state tells the metrics apart."""
    from drivemetrics.lane.culane import CULaneF1Score, CULanePrecision
    from drivemetrics.lane.tusimple import TuSimpleAccuracy, TuSimpleF1Score
    from drivemetrics.roadnet.opt_j import OptJF1Score, OptJPrecision

    (_, lanes), tusimple_keywords = _reference(TuSimpleAccuracy).case.batches[0]
    (_, culane), _ = _reference(CULaneF1Score).case.batches[0]
    (_, graph), _ = _reference(OptJF1Score).case.batches[0]
    small = _reference(CULaneF1Score).case.init_kwargs
    cases = [
        (TuSimpleAccuracy, TuSimpleF1Score, {}, {"pixel_threshold": 5.0}, (lanes, lanes), tusimple_keywords),
        (CULanePrecision, CULaneF1Score, small, {**small, "iou_threshold": 0.3}, (culane, culane), {}),
        (OptJPrecision, OptJF1Score, {}, {"d_max": 20.0}, (graph, graph), {}),
    ]
    for first, second, kwargs, other_kwargs, inputs, keywords in cases:
        same = MetricCollection({"a": first(**kwargs), "b": second(**kwargs)}, compute_groups=True)
        same.update(*inputs, **keywords)
        assert len(same.compute_groups) == 1, first.__name__
        different = MetricCollection({"a": first(**kwargs), "b": second(**other_kwargs)}, compute_groups=True)
        different.update(*inputs, **keywords)
        assert len(different.compute_groups) == 2, first.__name__


@by_class
def test_plot_draws_a_value_and_a_sequence(cls):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = _ref(cls)
    metric = ref.new()
    values = [metric(*args, **kwargs) for args, kwargs in ref.case.batches[:2]]
    try:
        fig, ax = metric.plot()
        assert fig is ax.figure
        assert ax.has_data()
        if all(v.numel() == 1 for value in values for v in _values(value).values()):
            fig, ax = metric.plot(values)
            assert fig is ax.figure
            assert ax.has_data()
    finally:
        plt.close("all")


# ----------------------------------------------------------------------------------------------------------------
# two processes (one gloo group for every class)


def _as_lists(out: Any) -> dict[str, list]:
    return {k: v.detach().cpu().double().tolist() for k, v in _values(out).items()}


def _same_state(value: Any, expected: Any) -> bool:
    """Tensor states equal, list states (of tensors) equal element by element."""
    if isinstance(expected, Tensor):
        return isinstance(value, Tensor) and torch.equal(value, expected)
    if isinstance(expected, list):
        return (
            isinstance(value, list)
            and len(value) == len(expected)
            and all(torch.equal(a, b) for a, b in zip(value, expected, strict=True))
        )
    return value == expected


#: batches of each rank in the spawn-shared check: uneven (three batches against one)
SPAWN_SPLIT = [[0, 1, 2], [3]]


def _ddp_worker(rank: int, world: int, class_paths: list[str], out_dir: str, shared: dict[str, Metric]) -> str:
    """The DDP checks of every class, then the spawn-shared check on ``shared`` (the parent's instances)."""
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    for path in class_paths:
        try:
            cls = _load_class(path)
            case = make_case(cls)
            metric = _update(cls(**case.init_kwargs), case.batches[rank::world])
            local = {name: copy.deepcopy(getattr(metric, name)) for name in metric._defaults}
            synced = _as_lists(metric.compute())
            kept = all(_same_state(getattr(metric, n), v) for n, v in local.items())
            on_step = cls(**case.init_kwargs, dist_sync_on_step=True)
            steps = [_as_lists(on_step(*args, **kwargs)) for args, kwargs in case.batches[rank::world]]
            results[path] = {
                "synced": synced,
                "local_kept": kept,
                "steps": steps,
                "final": _as_lists(on_step.compute()),
            }
        except Exception as error:  # reported by the test of that class
            results[path] = {"error": f"{type(error).__name__}: {error}"}
    for path, metric in shared.items():
        try:
            case = make_case(_load_class(path))
            _update(metric, [case.batches[i] for i in SPAWN_SPLIT[rank]])
            results[path, "spawn"] = {k: v.detach().cpu() for k, v in _values(metric.compute()).items()}
        except Exception as error:  # reported by the test of that class
            results[path, "spawn"] = {"error": f"{type(error).__name__}: {error}"}
    out = Path(out_dir) / f"rank{rank}.pt"
    torch.save(results, out)  # a file, not the queue: the results are too large for a pipe
    return str(out)


@pytest.fixture(scope="module")
def spawn_shared_metrics() -> dict[str, Metric]:
    """One instance of every class, held by this (the parent) process and handed to the spawned workers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {_class_path(cls): _reference(cls).new() for cls in METRIC_CLASSES if cls in INPUT_FACTORIES}


@pytest.fixture(scope="module")
def ddp_results(tmp_path_factory, spawn_shared_metrics) -> list[dict[Any, Any]]:
    paths = [_class_path(cls) for cls in METRIC_CLASSES if cls in INPUT_FACTORIES]
    out_dir = str(tmp_path_factory.mktemp("ddp"))
    files = run_distributed(_ddp_worker, paths, out_dir, spawn_shared_metrics, world=WORLD_SIZE)
    return [torch.load(f, weights_only=False) for f in files]


def _tensors(values: dict[str, list]) -> dict[str, Tensor]:
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in values.items()}


@pytest.mark.ddp
@by_class
def test_two_processes_equal_one_process(cls, ddp_results):
    ref = _ref(cls)
    for rank, results in enumerate(ddp_results):
        result = results[_class_path(cls)]
        assert "error" not in result, f"rank {rank}: {result.get('error')}"
        expected = _values(ref.total_raw)
        assert_same_values(_tensors(result["synced"]), expected, f"rank {rank}: synced compute")
        assert result["local_kept"], f"rank {rank}: compute() changed the local states"
        for step, values in enumerate(result["steps"]):
            assert_same_values(_tensors(values), _values(ref.per_step[step]), f"rank {rank}: dist_sync_on_step {step}")
        assert_same_values(_tensors(result["final"]), expected, f"rank {rank}: dist_sync_on_step compute")


@pytest.mark.ddp
@by_class
def test_spawned_workers_sharing_the_parents_states_equal_one_process(cls, ddp_results, spawn_shared_metrics):
    ref = _ref(cls)
    for rank, results in enumerate(ddp_results):
        result = results[_class_path(cls), "spawn"]
        assert "error" not in result, f"rank {rank}: {result.get('error')}"
        assert_same_exactly(result, ref.total_raw, f"rank {rank} of 2, states shared with the parent")
    parent = spawn_shared_metrics[_class_path(cls)]
    for name, default in parent._defaults.items():
        assert _same_state(getattr(parent, name), default), f"the workers wrote into the parent's state {name}"


def _uneven_worker(rank: int, world: int, class_paths: list[str], out_dir: str) -> str:
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    for path in class_paths:
        for split, batches_of_rank in UNEVEN_SPLITS.items():
            try:
                cls = _load_class(path)
                case = make_case(cls)
                metric = _update(cls(**case.init_kwargs), [case.batches[i] for i in batches_of_rank[rank]])
                results[path, split] = {k: v.detach().cpu() for k, v in _values(metric.compute()).items()}
            except Exception as error:  # reported by the test of that class
                results[path, split] = {"error": f"{type(error).__name__}: {error}"}
    out = Path(out_dir) / f"rank{rank}.pt"
    torch.save(results, out)
    return str(out)


@pytest.fixture(scope="module")
def uneven_ddp_results(tmp_path_factory) -> list[dict[Any, Any]]:
    paths = [_class_path(cls) for cls in METRIC_CLASSES if cls in INPUT_FACTORIES]
    files = run_distributed(_uneven_worker, paths, str(tmp_path_factory.mktemp("uneven")), world=3)
    return [torch.load(f, weights_only=False) for f in files]


def assert_same_exactly(actual: dict[str, Tensor], expected: Any, what: str) -> None:
    """Integer values equal, floating values within 1e-12 (relative or absolute), NaN where NaN."""
    expected = _values(expected)
    assert actual.keys() == expected.keys(), f"{what}: keys {sorted(actual)} != {sorted(expected)}"
    for key, want in expected.items():
        got, want = actual[key], want.detach().cpu()
        assert got.dtype == want.dtype, f"{what}[{key}]: dtype {got.dtype} != {want.dtype}"
        if want.is_floating_point():
            close = torch.allclose(got.double(), want.double(), rtol=EXACT_RTOL, atol=EXACT_ATOL, equal_nan=True)
            assert close, f"{what}[{key}]: {got} != {want}"
        else:
            assert torch.equal(got, want), f"{what}[{key}]: {got} != {want}"


@pytest.mark.ddp
@pytest.mark.slow
@by_class
def test_empty_and_uneven_ranks_equal_one_process(cls, uneven_ddp_results):
    ref = _ref(cls)
    for split in UNEVEN_SPLITS:
        for rank, results in enumerate(uneven_ddp_results):
            result = results[_class_path(cls), split]
            assert "error" not in result, f"{split}, rank {rank}: {result.get('error')}"
            assert_same_exactly(result, ref.total_raw, f"{split}, rank {rank} of 3")


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torchscript_is_not_supported_as_the_readme_says():
    from drivemetrics.lane.culane import CULaneF1Score
    from drivemetrics.road.pixel import RoadPixelMaxFScore

    # an annotation, a Python builtin or a statement (try) that TorchScript does not know
    unsupported = (ValueError, RuntimeError, torch.jit.frontend.NotSupportedError)
    with pytest.raises(unsupported):
        torch.jit.script(RoadPixelMaxFScore())
    with pytest.raises(unsupported):
        torch.jit.script(CULaneF1Score(height=64, width=168))
