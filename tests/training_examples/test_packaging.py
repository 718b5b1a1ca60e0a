"""Lightning stays optional: the library never imports it; `make examples` covers every example."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_library_does_not_import_lightning():
    sources = sorted((REPO_ROOT / "drivemetrics").rglob("*.py"))
    assert sources
    pattern = re.compile(r"^\s*(import|from)\s+(pytorch_lightning|lightning)\b", re.MULTILINE)
    assert [p.name for p in sources if pattern.search(p.read_text())] == []
    code = (
        "import sys, drivemetrics.road, drivemetrics.lane, drivemetrics.geometry\n"
        "from drivemetrics.road import RoadPixelMaxFScore, DrivingCorridorMetrics\n"
        "from drivemetrics.lane import PSLD, TuSimpleMetrics\n"
        "print(sorted(m for m in sys.modules if 'lightning' in m and 'utilities' not in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stdout.strip() == "[]"


def test_every_example_takes_quick_and_json():
    examples = [p for p in sorted((REPO_ROOT / "training_examples").glob("*.py")) if not p.name.startswith("_")]
    assert {"road_segmentation.py", "lane_psld_aux.py"} <= {p.name for p in examples}
    for path in examples:
        text = path.read_text()
        assert '"--quick"' in text, path.name
        assert '"--json"' in text, path.name
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "wildcard training_examples/*.py" in makefile
    assert "--quick --json examples_out/$$name.json" in makefile
