"""The doctests' namespace: ``drivemetrics`` is a name in every ``>>>`` example, as ``kornia`` is in kornia's.

The scalar classes' examples call their domain's example inputs through it
(``OptGRecall()(**drivemetrics.roadnet.roadnet_example_inputs())``); see ``docs/pages/conventions.md``.
"""

import pytest

import drivemetrics


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    doctest_namespace["drivemetrics"] = drivemetrics
