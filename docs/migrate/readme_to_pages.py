"""Move the long sections of a full README into docs/pages and write the landing-page README (issue 27).

Kept while branches written against the old README land: on a README conflict, take the branch's full README
(``git checkout --theirs README.md``), run ``python docs/migrate/readme_to_pages.py .``, then
``python docs/migrate/shape_tuples.py README.md docs/pages/*.md docs/pages/*/*.md`` and ``ruff format``. The pages
are regenerated from the README text (plus the additions at the end of this script), so edit a page's text in the
README of the branch, or, once no such branch is left, in the page itself and delete this folder.
"""

import re
import sys
from pathlib import Path

repo = Path(sys.argv[1])
readme = (repo / "README.md").read_text()
if "[start:metric-table]" not in readme:  # markers for the docs' conformance page (pymdownx.snippets)
    start = readme.index("| what | module | Metric class |")
    readme = readme[:start] + "<!-- --8<-- [start:metric-table] -->\n" + readme[start:]
    end = readme.index("\n\n", start + 40)
    readme = readme[: end + 1] + "<!-- --8<-- [end:metric-table] -->\n" + readme[end + 1 :]
pages_dir = repo / "docs" / "pages"

lines = readme.split("\n")
# split into (heading, text) by level-2 headings outside code fences
sections, current, fence = [("", [])], None, False
for line in lines:
    if line.startswith("```"):
        fence = not fence
    if not fence and line.startswith("## "):
        sections.append((line[3:].strip(), [line]))
    else:
        sections[-1][1].append(line)

KEEP = ("Quickstart", "Metrics and losses at a glance")
RULES = [  # (heading prefix, page, page title, intro)
    ("Layout", "conventions.md", "Layout and conventions", None),
    ("Conventions", "conventions.md", "Layout and conventions", None),
    ("Logging metrics", "logging.md", "Logging metrics", None),
    ("Road:", "domains/road.md", "Road", "road"),
    ("Lanes:", "domains/lane.md", "Lanes", "lane"),
    ("Attack:", "domains/attack.md", "Attack", "attack"),
    ("Road networks", "domains/roadnet.md", "Road networks", "roadnet"),
    ("Detection:", "domains/detection.md", "Detection", "detection"),
    ("Lane graphs:", "domains/lanegraph.md", "Lane graphs", "lanegraph"),
    ("Lane topology:", "domains/lanetopology.md", "Lane topology", "lanetopology"),
    ("Vectorised", "domains/vectormap.md", "Vectorised HD maps", "vectormap"),
    ("Vector", "domains/vectormap.md", "Vectorised HD maps", "vectormap"),
    ("HD map", "domains/vectormap.md", "Vectorised HD maps", "vectormap"),
    ("Training examples", "TUTORIALS", None, None),
    ("Distributed evaluation", "distributed.md", "Distributed evaluation", None),
    ("Synthetic scenes and the demo", "demo.md", "Synthetic scenes and the demo", "synthetic"),
    ("What drivemetrics promises", "promises.md", "What drivemetrics promises", None),
    ("Benchmarks", "benchmarks.md", "Benchmarks", None),
]


def fix_links(text: str, depth: int) -> str:
    up = "../" * depth
    text = re.sub(r"(?<![/\w])`configs/(\w)", r"`drivemetrics/configs/\1", text)  # the shipped configs moved
    text = re.sub(
        r"\| `configs/` \|[^\n]*",
        "| `drivemetrics/configs/` | the shipped configs (package data, `importlib.resources`): the corridor "
        "defaults (`corridor.toml`), the vehicle preset (`vehicles/rav4_2017.toml`) and the training examples' "
        "YAML configs; `drivemetrics config [NAME]` lists / prints them |\n"
        "| `configs/` | your own configs (a README points to the shipped ones) |",
        text,
    )
    text = text.replace("](docs/pages/figures/", f"]({up}figures/").replace("](docs/figures/", f"]({up}figures/")
    return text.replace("](benchmarks/results/", f"]({up}benchmarks/results/")  # served by gen_api.on_files


pages, kept, moved = {}, [], []
for heading, body in sections:
    text = "\n".join(body)
    if heading == "" or heading.startswith(KEEP):
        kept.append(text)
        continue
    rule = next((r for r in RULES if heading.startswith(r[0])), None)
    if rule is None:  # an unknown (new domain) section: its own page
        slug = re.sub(r"[^a-z0-9]+", "_", heading.split(":")[0].lower()).strip("_")
        rule = (heading, f"domains/{slug}.md", heading.split(":")[0], None)
    page, title, api = rule[1], rule[2], rule[3]
    moved.append((heading, page))
    if page == "TUTORIALS":
        parts = re.split(r"\n(?=\*\*\d\. )", text)
        intro = parts[0].split("\n", 1)[1].strip()
        names = ["lightning_logging.md", "losses.md", "drp_attack.md", "loss_study.md"]
        titles = [
            "Logging driving metrics during Lightning training",
            "PSLD and soft F as losses",
            "DRP attacks on lane detectors (GPU)",
            "Do the losses help? A seeded study",
        ]
        for i, part in enumerate(parts[1:]):
            name = names[i] if i < len(names) else f"example_{i + 1}.md"
            content = f"# {titles[i] if i < len(titles) else 'Example'}\n\n{intro}\n\n{part.strip()}\n"
            pages[f"tutorials/{name}"] = fix_links(content, 1)
        continue
    depth = page.count("/")
    if page not in pages:
        pages[page] = f"# {title}\n\n"
    pages[page] += fix_links(text.strip(), depth) + "\n\n"
    if api:
        pages[page] = pages[page]  # API link appended below
for page, content in pages.items():
    api = next((r[3] for r in RULES if r[1] == page and r[3]), None)
    if api:
        content = (
            content.rstrip()
            + f"\n\nAPI reference: [`drivemetrics.{api}`]("
            + ("../" * page.count("/"))
            + f"api/{api}.md).\n"
        )
    path = pages_dir / page
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content.rstrip() + "\n")
(repo / "README.md.kept").write_text("\n".join(kept))
for heading, page in moved:
    print(f"{page:32} <- {heading}")

# ---- additions that are not README text (kept in the script so that a re-run keeps them)
EXTRA = {
    "logging.md": (
        "prepend",
        """!!! warning "A dict family cannot be passed to `self.log`"
    Lightning logs a `Metric` whose `compute()` returns one tensor. A family class (`...Metrics`, whose
    `compute()` returns a dict) passed to `self.log` fails at that call with a `TypeError` that names the
    family's scalar classes (`self.log("val/f1", CULaneMetrics())` -> use `CULaneF1Score`, `CULanePrecision`,
    ...). Log the scalar classes, alone or in a `MetricCollection`, or call `self.log_dict(family.compute())`
    yourself in `on_validation_epoch_end`.
""",
    ),
    "tutorials/losses.md": (
        "append",
        """## Faster losses: `validate_args=False` and `torch.compile`

The losses check their inputs' values by default; each check is a host synchronisation and a graph break. Once
your pipeline is known to give valid inputs, build them with `validate_args=False`: they then compile as one graph
(`torch.compile(loss, fullgraph=True)`, forward and backward). Numbers and advice:
[Performance](../performance.md).
""",
    ),
    "tutorials/drp_attack.md": (
        "append",
        """## On a GPU

The attack runs where the clips' images are: every tensor it creates follows `drive.images.device`. Put the clips
and the detector on the GPU and run the same code:

```python
device = torch.device("cuda")
drive = DriveClips(c.images.to(device), c.speed, c.image_from_road, c.poses, c.centre_road, c.z_samples,
                   c.lane_width)  # the other fields follow images.device
detector = detector.to(device).requires_grad_(False)  # only the patch is optimised
result = drp_attack(drive, detector.lane_model(), DRPConfig(linf=0.5, iterations=200, direction="right"))
```

The expected-road-center objectives take `validate_args=False` (no host synchronisation per iteration, and
they compile as one graph, see [Performance](../performance.md)). `make gpu-check` (`benchmarks/gpu_check.py`)
runs the library's GPU paths, the attack included, and writes `gpu_check.json`.
""",
    ),
}
for page, (where, text) in EXTRA.items():
    path = pages_dir / page
    if not path.is_file():
        continue
    content = path.read_text()
    if where == "prepend":
        title, rest = content.split("\n", 1)
        content = f"{title}\n\n{text}\n{rest.lstrip()}"
    else:
        content = content.rstrip() + "\n\n" + text
    path.write_text(content)

# ---- the demo's figures (committed small PNGs, from `drivemetrics demo --out demo_out`)
demo = pages_dir / "demo.md"
if demo.is_file():
    demo.write_text(
        demo.read_text().rstrip()
        + """

## Figures of the demo

Made by `drivemetrics demo` (`make demo` writes them to `demo_out/`); the training examples' figures are on their
tutorial pages ([Lightning logging](tutorials/lightning_logging.md), [losses](tutorials/losses.md)).

![road: precision-recall curves, perspective and BEV](figures/demo/road_pr_curves.png)

![road: driving corridor scores against distance](figures/demo/corridor_fig13.png)

![lanes: closed-loop paths of detectors of different accuracy](figures/demo/lane_paths.png)

![lanes: TuSimple accuracy against the closed-loop deviation E2E-LD](figures/demo/lane_accuracy_vs_e2e.png)
"""
    )

# ---- the README as a landing page: what it is, install, quickstart, the metric table, links into docs/
DOCS_LINKS = """## Documentation

The documentation site is built from `docs/` by `make docs` (MkDocs; open `docs/site/index.html`), with an API
reference generated from the docstrings. Its pages, readable here too:

- Tutorials: [logging metrics during Lightning training](docs/pages/tutorials/lightning_logging.md),
  [PSLD and soft F as losses](docs/pages/tutorials/losses.md),
  [DRP attacks on lane detectors (GPU)](docs/pages/tutorials/drp_attack.md),
  [do the losses help? a seeded study](docs/pages/tutorials/loss_study.md)
- Guides: [logging metrics (scalar classes, `MetricCollection`, `plot()`)](docs/pages/logging.md),
  [performance (`validate_args`, `torch.compile`, cost of sampled metrics)](docs/pages/performance.md),
  [distributed evaluation](docs/pages/distributed.md), [layout and conventions](docs/pages/conventions.md),
  [install and shipped configs](docs/pages/install.md)
- Domains: {domains}
- [Conformance](docs/pages/conformance.md), [benchmarks](docs/pages/benchmarks.md),
  [synthetic scenes, the demo and its figures](docs/pages/demo.md), [what drivemetrics promises](docs/pages/promises.md)
"""
domain_pages = sorted({page for _, page in moved if page.startswith("domains/")})
links = ",\n  ".join(f"[{(pages_dir / p).read_text().splitlines()[0][2:]}](docs/pages/{p})" for p in domain_pages)
INSTALL = """## Install

```bash
pip install torch                      # the CPU or CUDA build you use, first
pip install drivemetrics               # extras: [plot] figures, [lightning] training examples, [culane] OpenCV
drivemetrics --version
drivemetrics config                    # the shipped configs (corridor defaults, vehicle preset, example settings)
```

```python
import torch
from drivemetrics.road import RoadPixelMaxFScore

metric = RoadPixelMaxFScore()  # a torchmetrics.Metric: update per batch, compute once, log from Lightning
target = torch.zeros(2, 8, 8, dtype=torch.bool)
target[:, 4:] = True
metric.update(torch.where(target, 0.9, 0.2), target)  # road probabilities (B, H, W), road ground truth
metric.compute()  # pooled MaxF: 1.0
```

"""
kept_text = "\n".join(kept).rstrip() + "\n"
kept_text = kept_text.replace("(see the next section)", "(see [Logging metrics](docs/pages/logging.md))")
kept_text = kept_text.replace(
    "details in each domain's section", "details on each domain's page under `docs/pages/domains/`"
)
first_kept = kept_text.index("## Quickstart")
readme_new = (
    kept_text[:first_kept] + INSTALL + kept_text[first_kept:].rstrip() + "\n\n" + DOCS_LINKS.format(domains=links)
)
(repo / "README.md").write_text(readme_new)
(repo / "README.md.kept").unlink()
