"""The documentation site builds with warnings as errors (``make docs``), its API pages cover every export, and
every ```python block of README.md and docs/pages runs as printed in an empty folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

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


# ---------------------------------------------------------------------------------------------- docs that run
#: The pages whose ```python blocks must run as printed.
PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "pages").rglob("*.md"))]
#: A block that truly cannot run here (e.g. it needs several GPUs) is preceded by this comment with its reason:
#: ``<!-- docs-test: skip needs 2 CUDA GPUs -->``. Keep the set tiny (see ALLOWED_SKIPS).
SKIP_MARK = re.compile(r"<!--\s*docs-test:\s*skip\s+(?P<reason>[^>]*?)\s*-->\s*$")
ALLOWED_SKIPS = 2
FENCE = re.compile(r"^```python[^\n]*\n(?P<code>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
#: Modules of the extras a block may import; without them the block is skipped (``make test`` has them all).
EXTRA_IMPORTS = {"pytorch_lightning": "lightning", "matplotlib": "plot", "cv2": "culane", "rtree": "lanegraph"}


class DocBlock(NamedTuple):
    page: Path
    line: int
    code: str
    skip_reason: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def python_blocks(page: Path) -> list[DocBlock]:
    """The ```python blocks of a Markdown page, with their first line and an optional skip mark above them."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = SKIP_MARK.search(before)
        blocks.append(DocBlock(page, line, match.group("code"), mark.group("reason") if mark else None))
    return blocks


BLOCKS = [block for page in PAGES for block in python_blocks(page)]


def test_no_block_reads_an_environment_variable():
    """A reader copies a block into an interpreter: it runs without ``DRIVEMETRICS_FIXTURES`` or any other variable."""
    reading = [b.name for b in BLOCKS if re.search(r"os\.environ|os\.getenv|DRIVEMETRICS_FIXTURES", b.code)]
    assert not reading, reading


def test_blocks_are_found_and_skips_stay_rare(tmp_path):
    assert len(BLOCKS) >= 19, [b.name for b in BLOCKS]
    skipped = [b for b in BLOCKS if b.skip_reason is not None]
    assert len(skipped) <= ALLOWED_SKIPS, [(b.name, b.skip_reason) for b in skipped]
    assert all(b.skip_reason for b in skipped), "a skip mark needs its reason"
    # the collector sees a marked block and the code between the fences
    page = tmp_path / "sample.md"
    page.write_text("x\n<!-- docs-test: skip needs 2 GPUs -->\n```python\nprint(1)\n```\n", encoding="utf-8")
    (block,) = python_blocks(page)
    assert (block.line, block.code, block.skip_reason) == (3, "print(1)\n", "needs 2 GPUs")


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_python_block_runs_in_an_empty_folder(block, tmp_path):
    """Each block runs as printed, alone (a fresh interpreter), in an empty working directory."""
    if block.skip_reason is not None:
        pytest.skip(f"marked in the page: {block.skip_reason}")
    for module, extra in EXTRA_IMPORTS.items():
        if re.search(rf"^\s*(import|from) {module}\b", block.code, re.MULTILINE):
            pytest.importorskip(module, reason=f"the block needs the {extra} extra")
    # no DRIVEMETRICS_* variable: a block synthesises or writes what it reads (issue 50)
    env = {key: value for key, value in os.environ.items() if not key.startswith("DRIVEMETRICS")}
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    done = subprocess.run(
        [sys.executable, "-c", block.code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{block.name}\n{done.stderr[-4000:]}"


# ------------------------------------------------------------------------------------ the README metric table
#: Packages whose exports are tools, not metrics or losses (the synthetic detectors are nn.Modules).
NOT_METRIC_PACKAGES = ("synthetic",)


def exported_metric_and_loss_classes() -> dict[str, str]:
    """``{name: module}`` of every exported ``torchmetrics.Metric`` or loss (``nn.Module``) class: the
    export list of every domain package (the top level re-exports each domain's ``_METRICS``), so a new domain's
    classes are included without a change here."""
    import importlib

    import torch
    from torchmetrics import Metric

    names: dict[str, str] = {}
    for domain in gen_api.domains():
        if domain not in NOT_METRIC_PACKAGES:
            names.update(gen_api.package_exports(REPO / "drivemetrics" / domain))
    found = {}
    for name, module in names.items():
        obj = getattr(importlib.import_module(module), name, None) if name[:1].isupper() else None
        if isinstance(obj, type) and issubclass(obj, (Metric, torch.nn.Module)):
            found[name] = module
    return found


def readme_metric_table() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- --8<-- [start:metric-table] -->", "<!-- --8<-- [end:metric-table] -->"
    assert start in text, "the README's metric table lost its snippet markers (the conformance page includes it)"
    assert end in text, "the README's metric table lost its snippet markers (the conformance page includes it)"
    return text[text.index(start) : text.index(end)]


def test_every_exported_metric_and_loss_class_is_in_the_readme_table():
    classes = exported_metric_and_loss_classes()
    assert {"RoadPixelMetrics", "PSLDLoss", "OpenLaneV2Score", "MapChamferLoss", "LaneMatchingLoss"} <= set(classes)
    named = set(re.findall(r"`(\w+)`", readme_metric_table()))
    missing = sorted(set(classes) - named)
    assert not missing, f"exported but not in the README metric table: {missing}"


def test_readme_points_only_to_existing_sections_and_pages():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "next section" not in readme_metric_table()
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", text):
        assert (REPO / link).is_file(), link
