"""A pytest plugin: every ``>>>`` example runs in a fresh namespace, as when copied into a new interpreter (issue 50).

``--doctest-modules`` hands an example its module's globals (the class it documents, ``torch``, the module's own
imports), so an example that forgot an import still passed, and failed for a reader who copied it. The repository's
``conftest.py`` loads this plugin, which empties each doctest's namespace before it runs: an example must import
everything it uses. ``tests/test_examples.py`` checks that the plugin catches an example without its import.
"""

from __future__ import annotations

import pytest
from _pytest.doctest import DoctestItem


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, DoctestItem) and item.dtest is not None:
            item.dtest.globs = {"__name__": "__main__"}
