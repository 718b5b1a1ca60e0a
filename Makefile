# drivemetrics: `make demo` runs the demo on synthetic scenes, `make examples` the training examples (quick mode),
# `make test` runs lint + the test suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0

.PHONY: venv dev demo examples test lint bench clean

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

# editable_mode=compat: a plain path entry instead of an import hook, so that mypy and pyright find the package
$(VENV)/.dev: $(VENV)/.base pyproject.toml
	$(PY) -m pip install -q -e ".[dev]" --config-settings editable_mode=compat
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
	$(PY) -m pytest -q

bench: $(VENV)/.dev
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) demo_out examples_out .pytest_cache .ruff_cache
