"""Every ``>>>`` example is copy-paste runnable (issue 50): it runs in a fresh namespace, its imports in it.

The doctests of ``drivemetrics/`` run through ``--doctest-modules`` with ``tests/fresh_doctests.py`` (loaded by the
repository's ``conftest.py``), which empties each example's namespace. These tests check that plugin on a module
whose example forgets its import: the example passes with pytest's usual namespace and fails with the plugin.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

BROKEN = '''
import math


def double(x):
    """Twice ``x``.

    Examples:
        >>> double(math.pi) > 6
        True
    """
    return 2 * x
'''

FIXED = '''
def double(x):
    """Twice ``x``.

    Examples:
        >>> import math
        >>> from example_module import double
        >>> double(math.pi) > 6
        True
    """
    return 2 * x
'''


def _pytest(tmp_path: Path, source: str, *plugin: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "example_module.py").write_text(source, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(tmp_path)])}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *plugin,
            "--doctest-modules",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "example_module.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_example_without_its_imports_passes_only_with_the_module_namespace(tmp_path):
    assert _pytest(tmp_path, BROKEN).returncode == 0  # pytest's own namespace: the module's globals
    fresh = _pytest(tmp_path, BROKEN, "-p", "tests.fresh_doctests")
    assert fresh.returncode == 1, fresh.stdout
    assert "NameError: name 'double' is not defined" in fresh.stdout


def test_an_example_with_its_imports_passes_in_a_fresh_namespace(tmp_path):
    result = _pytest(tmp_path, FIXED, "-p", "tests.fresh_doctests")
    assert result.returncode == 0, result.stdout


def test_the_repository_loads_the_plugin():
    text = (REPO_ROOT / "conftest.py").read_text(encoding="utf-8")
    assert 'pytest_plugins = ["tests.fresh_doctests"]' in text
    assert "doctest_namespace" not in text  # no injected names
