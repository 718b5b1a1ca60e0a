# drivemetrics: `make demo` runs the demo on synthetic scenes, `make examples` the training examples (quick mode),
# `make test` runs lint + the test suite without the tests marked `slow` (under 15 minutes on 2 cores), `make test-slow`
# the slow ones; CI (.ci/run) runs both.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0

.PHONY: venv dev demo examples test test-slow lint bench gpu-check gpu-wheels docs docs-serve clean

# The CPU build of torch is installed first (available offline on the project's machines), so the range in
# pyproject.toml is already satisfied and pip never pulls a CUDA build.
$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[plot]"
	touch $@

$(VENV)/.examples: $(VENV)/.base pyproject.toml
	$(PY) -m pip install -q -e ".[lightning,plot]"
	touch $@

# the README's line: pyproject.toml's package-dir makes it a plain path entry, which mypy and pyright follow
$(VENV)/.dev: $(VENV)/.base pyproject.toml
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

$(VENV)/.docs: $(VENV)/.base pyproject.toml
	$(PY) -m pip install -q -e ".[docs]"
	touch $@

venv: $(VENV)/.base
dev: $(VENV)/.dev

demo: $(VENV)/.base
	$(VENV)/bin/drivemetrics demo --out demo_out

# Every training_examples/*.py (not _*.py) in quick mode, each writing examples_out/<example>.json; the examples
# that take --figure also save examples_out/<example>.png.
EXAMPLES ?= $(filter-out training_examples/_%,$(sort $(wildcard training_examples/*.py)))

examples: $(VENV)/.examples
	mkdir -p examples_out
	for f in $(EXAMPLES); do \
		name=$$(basename $$f .py); echo "== $$name"; \
		figure=$$(grep -q -- '"--figure"' $$f && echo "--figure examples_out/$$name.png"); \
		$(PY) $$f --quick --json examples_out/$$name.json $$figure || exit 1; \
	done

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: $(VENV)/.dev lint
	$(PY) -m pytest -q -m "not slow"

# The tests marked `slow` (built wheel in a clean venv, mypy / pyright, Lightning ddp and ddp_spawn, torchrun,
# the dataset commands on the full fixtures, the longer fuzzing campaigns, the training examples' quick modes).
test-slow: $(VENV)/.dev
	$(PY) -m pytest -q -m slow

# The documentation site in docs/site (warnings are errors: docs/mkdocs.yml sets strict); the API pages are generated
# from the packages' export lists by docs/gen_api.py. `make docs-serve` previews it on http://127.0.0.1:8000.
docs: $(VENV)/.docs
	cd docs && NO_MKDOCS_2_WARNING=1 $(abspath $(VENV))/bin/mkdocs build --strict

docs-serve: $(VENV)/.docs
	cd docs && NO_MKDOCS_2_WARNING=1 $(abspath $(VENV))/bin/mkdocs serve

bench: $(VENV)/.dev
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# On a CUDA machine whose Python already has torch (the lent GPU machines): the prepared GPU check, one JSON and a
# table (benchmarks/gpu_check.py). Without CUDA it prints one line and exits 0. `make gpu-wheels` (here) downloads
# the wheels that machine lacks (kornia, kornia-rs, pyspng for CPython 3.12) into .whl/ to carry there.
gpu-check:
	PYTHONPATH=$(CURDIR) $(PYTHON) benchmarks/gpu_check.py --json gpu_check.json

gpu-wheels:
	$(PYTHON) -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
		-d .whl kornia kornia-rs pyspng

clean:
	rm -rf $(VENV) demo_out examples_out docs/site .pytest_cache .ruff_cache
