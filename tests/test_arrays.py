"""The array layer (drivemetrics/_internal/arrays.py, issue 46): each function gives the same values on numpy arrays
and on torch tensors, and the numpy path never imports torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import torch

from drivemetrics._internal import arrays as xp


def test_host_and_device_moves():
    values = np.array([1.0, 2.0])
    assert xp.on_device(values, None) is values  # the torch-free path: the array itself
    moved = xp.on_device(values, "cpu")
    assert isinstance(moved, torch.Tensor)
    assert moved.tolist() == [1.0, 2.0]
    assert xp.to_numpy(moved.requires_grad_()).tolist() == [1.0, 2.0]  # detached, on the host
    assert xp.to_numpy(values) is values
    tensor = torch.arange(4.0)
    view = xp.host(tensor)
    assert isinstance(view, np.ndarray)
    assert np.shares_memory(view, tensor.numpy())
    back = xp.from_host(view, tensor.device)
    assert back.data_ptr() == tensor.data_ptr()  # no copy on the CPU
    assert xp.float64_like(values, np.zeros(1, np.float32)) is values
    as_tensor = xp.float64_like(values, torch.zeros(1, dtype=torch.float32))
    assert as_tensor.dtype == torch.float64
    assert as_tensor.tolist() == [1.0, 2.0]


def test_segment_searchsorted_repeat_floor_and_scatter_agree():
    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 5, 30)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    values = rng.normal(size=int(ends[-1]))
    mask = values > 0
    t = torch.from_numpy
    want_min = [values[s:e].min() for s, e in zip(starts, ends, strict=True)]
    want_count = [int(mask[s:e].sum()) for s, e in zip(starts, ends, strict=True)]
    for lib in (lambda x: x, t):
        assert xp.segment_min(lib(values), lib(starts), lib(ends)).tolist() == want_min
        assert xp.segment_count(lib(mask), lib(starts), lib(ends)).tolist() == want_count
        assert xp.repeat(lib(np.array([7, 8])), lib(np.array([2, 1]))).tolist() == [7, 7, 8]
        assert xp.searchsorted(lib(np.array([0.0, 1.0, 2.0])), lib(np.array([1.0, 1.5]))).tolist() == [1, 2]
        assert xp.floor(lib(np.array([1.5, -0.5]))).tolist() == [1.0, -1.0]
        x = lib(np.zeros((3, 2), dtype=bool))
        xp.set_true_rows(x, lib(np.array([[0, 2]])))
        assert x.tolist() == [[True, False], [False, False], [False, True]]


def test_the_map_kernel_operations_agree():
    # the operations vectormap/lines.py needs (issue 46): the same values on both sides, against hand-computed ones
    values = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    counts = np.array([2, 3, 3])
    starts = np.array([0, 2, 5])
    ints = np.array([2, 0, 2, 5, 0])
    for side in (lambda x: x, torch.from_numpy):
        v, c, s, i = side(values), side(counts), side(starts), side(ints)
        assert xp.segment_reduce(v, "min", s, c).tolist() == [1.0, 1.0, 2.0]
        assert xp.segment_reduce(v[:, None], "max", s, c)[:, 0].tolist() == [3.0, 5.0, 9.0]
        assert xp.stable_argsort(i).tolist() == [1, 4, 0, 2, 3]  # ties in input order
        assert xp.bincount(i, 7).tolist() == [2, 0, 2, 0, 0, 1, 0]
        assert xp.searchsorted(side(np.array([1, 2, 2, 3])), side(np.array([2])), right=True).tolist() == [3]
        assert xp.searchsorted(side(np.array([1, 2, 2, 3])), side(np.array([2]))).tolist() == [1]
        assert xp.ceil(v / 4).tolist() == [1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 1.0, 2.0]
        assert xp.nan_to_num(side(np.array([np.nan, 1.5]))).tolist() == [0.0, 1.5]
        copied = xp.copy(v)
        copied[0] = -1.0
        assert float(v[0]) == 3.0
        a = [side(np.array([[0.0, 1.0]])), side(np.array([[0.0, 0.0]]))]  # one pair, 2 points, x and y planes
        b = [side(np.array([[3.0]])), side(np.array([[4.0]]))]
        out, scratch = xp.full((1, 2, 1), 0.0, like=v), xp.full((1, 2, 1), 0.0, like=v)
        assert xp.sum_squared_differences(a, b, out, scratch)[0, :, 0].tolist() == [25.0, 20.0]


def test_type_predicates_and_detach():
    tensor = torch.ones(2, requires_grad=True)
    assert xp.is_tensor(tensor)
    assert not xp.is_tensor(np.ones(2))
    assert not xp.is_tensor([1.0])
    assert xp.is_ndarray(np.ones(2))
    assert not xp.is_ndarray(np.float64(1.0))
    assert not xp.is_ndarray(tensor)
    assert not xp.detach(tensor).requires_grad
    array = np.ones(2)
    assert xp.detach(array) is array


def test_the_numpy_path_never_imports_torch():
    code = (
        "import sys, numpy as np\n"
        "from drivemetrics._internal import arrays as xp\n"
        "v = xp.on_device(np.arange(5.0), None)\n"
        "xp.segment_min(v, np.array([0, 2]), np.array([2, 5])); xp.to_numpy(v); xp.is_tensor(v); xp.detach(v)\n"
        "xp.repeat(v, np.ones(5, dtype=np.int64)); xp.searchsorted(v, v); xp.floor(v); xp.sqrt(v)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def _nearest_by_scipy(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row / column minima of scipy's ``cdist`` for each pair of ``a (K, Pa, D)``, ``b (K, Pb, D)`` (the reference
    values of the map evaluators)."""
    from scipy.spatial.distance import cdist

    pairs = [cdist(x, y) for x, y in zip(a, b, strict=True)]
    return np.stack([d.min(1) for d in pairs]), np.stack([d.min(0) for d in pairs])


def test_nearest_distances_are_scipys_cdist_bits_on_every_path(monkeypatch):
    rng = np.random.default_rng(3)
    for dims in (2, 3):
        a, b = rng.normal(size=(7, 31, dims)) * 20, rng.normal(size=(7, 23, dims)) * 20
        expected = _nearest_by_scipy(a, b)
        planes_a, planes_b = list(np.moveaxis(a, -1, 0)), list(np.moveaxis(b, -1, 0))
        buffers = np.empty((7, 31, 23)), np.empty((7, 31, 23))
        numpy_result = xp.nearest_distances(planes_a, planes_b, *buffers)  # torch imported: cdist in 2-D
        tensor_result = xp.nearest_distances(
            [torch.from_numpy(x) for x in planes_a],
            [torch.from_numpy(x) for x in planes_b],
            *(torch.from_numpy(x) for x in buffers),
        )
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, "torch", None)  # a torch-free process: the elementwise passes
            no_torch_result = xp.nearest_distances(planes_a, planes_b, *buffers)
        for result in (numpy_result, tensor_result, no_torch_result):
            assert np.array_equal(np.asarray(result[0]), expected[0])
            assert np.array_equal(np.asarray(result[1]), expected[1])
