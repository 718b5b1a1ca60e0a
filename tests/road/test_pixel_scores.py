"""The kernels written once for numpy and torch (drivemetrics.road.pixel_scores): each against an independent count,
and numpy against tensors bit for bit."""

import math

import numpy as np
import pytest
import torch

from drivemetrics.road.pixel_counting import scores_from_counts
from drivemetrics.road.pixel_scores import (
    PixelCounts,
    buckets_from_value_histograms,
    counts_from_histograms,
    devkit_scores,
    threshold_grid,
    value_histograms,
)


def planes(seed, shape=(7, 37)):
    rng = np.random.default_rng(seed)
    preds = rng.integers(0, 256, shape, dtype=np.uint8)
    preds[:, :9] = 255  # a run of one value (the sub-histograms' case)
    red = rng.choice(np.array([0, 255, 17], dtype=np.uint8), shape)
    blue = rng.choice(np.array([0, 255, 1], dtype=np.uint8), shape)
    return preds, red, blue


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_value_histograms_count_each_valid_pixel_by_class_and_value(seed):
    preds, red, blue = planes(seed)
    expected = np.zeros((2, 256), dtype=np.int64)
    for v, r, b in zip(preds.ravel(), red.ravel(), blue.ravel(), strict=True):
        if r > 0:
            expected[int(b > 0), v] += 1
    got = value_histograms(preds, red, blue)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    tensors = value_histograms(*(torch.from_numpy(x) for x in (preds, red, blue)))
    assert tensors.dtype == torch.int64
    np.testing.assert_array_equal(tensors.numpy(), expected)
    strided = value_histograms(preds[:, ::2], red[:, ::2], blue[:, ::2])  # views, e.g. channels of an RGB image
    np.testing.assert_array_equal(strided, value_histograms(*(np.ascontiguousarray(x[:, ::2]) for x in planes(seed))))


def test_value_histograms_refuse_other_dtypes_and_shapes():
    preds, red, blue = planes(0)
    with pytest.raises(TypeError, match="`preds` must be uint8"):
        value_histograms(preds.astype(np.float32), red, blue)
    with pytest.raises(ValueError, match="one shape"):
        value_histograms(preds[1:], red, blue)


@pytest.mark.parametrize("thresholds", [threshold_grid(256), threshold_grid(11), np.array([0.0, 0.3, 0.5, 1.0])])
def test_bucket_histograms_from_values_match_a_direct_count(thresholds):
    rng = np.random.default_rng(3)
    hist = rng.integers(0, 50, (2, 256))
    expected = np.zeros((2, thresholds.size + 1), dtype=np.int64)
    for v in range(256):  # bucket = number of thresholds <= v / 255
        expected[:, int(np.sum(thresholds <= v / 255.0))] += hist[:, v]
    np.testing.assert_array_equal(buckets_from_value_histograms(hist, thresholds), expected)
    on_tensors = buckets_from_value_histograms(torch.from_numpy(hist), torch.from_numpy(thresholds))
    np.testing.assert_array_equal(on_tensors.numpy(), expected)


def test_threshold_grid_is_the_devkits():
    np.testing.assert_array_equal(threshold_grid(256), np.arange(256) / 255.0)
    with pytest.raises(ValueError, match="int >= 2"):
        threshold_grid(1)


@pytest.mark.parametrize("reference", [False, True])
def test_scores_on_numpy_equal_the_tensor_path_bit_for_bit(reference):
    rng = np.random.default_rng(4)
    hist = rng.integers(0, 10**6, (3, 2, 256))
    hist[1, 1] = 0  # a batch entry without any positive pixel: NaN scores
    thresholds = threshold_grid(256)
    counts = counts_from_histograms(buckets_from_value_histograms(hist, thresholds))
    with pytest.warns(RuntimeWarning, match="no valid ground-truth road pixel"):
        on_numpy = devkit_scores(counts, thresholds, reference=reference)
    compat = "reference" if reference else "default"
    with pytest.warns(RuntimeWarning, match="no valid ground-truth road pixel"):
        on_tensors = scores_from_counts(PixelCounts(*(torch.from_numpy(c) for c in counts)), compat=compat)
    assert set(on_numpy) == set(on_tensors)
    for key, value in on_numpy.items():
        expected = on_tensors[key].numpy()
        assert value.dtype == expected.dtype, key
        np.testing.assert_array_equal(value, expected, err_msg=key)  # NaN equals NaN here
    assert math.isnan(on_numpy["max_f"][1])
    assert not math.isnan(on_numpy["max_f"][0])
    # the tp of the first entry counts the positives at or above each threshold
    positives = hist[0, 1]
    assert on_numpy["total_positives"][0] == positives.sum()
    assert counts.tp[0, 128] == positives[128:].sum()
