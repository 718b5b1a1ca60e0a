"""The documentation site builds with warnings as errors (``make docs``), and its API pages cover every export."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs"))
gen_api = pytest.importorskip("gen_api")


def test_api_pages_list_every_export_of_every_domain():
    pages = gen_api.api_pages()
    assert "api/index.md" in pages
    road = pages["api/road.md"]
    for name, module in gen_api.package_exports(REPO / "drivemetrics" / "road").items():
        assert f"::: {module}.{name}\n" in road
    assert all(f"api/{d}.md" in pages for d in gen_api.domains() if gen_api.package_exports(REPO / "drivemetrics" / d))
    if (REPO / "drivemetrics" / "functional.py").is_file():
        assert "api/functional.md" in pages


@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra (pip install -e '.[docs]')")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    done = subprocess.run(command, cwd=REPO / "docs", env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "site" / "api" / "road" / "index.html").is_file()
