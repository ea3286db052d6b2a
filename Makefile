# dpdl-replication — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-setup
KERNEL := dpdl-replication
# committed: render the paper-scale studies from the committed runs (minutes, computing
# nothing); smoke|cpu|paper: compute every notebook at that scale.
PROFILE ?= committed
# The profile whose outputs a report shows: the committed studies are the paper profile's.
REPORT_PROFILE := $(if $(filter committed,$(PROFILE)),paper,$(PROFILE))
# Notebook folders to run (make figures PAPER=dpdl, PAPER="dpdl pdsl" or PAPER=dpdl,pdsl); empty: all
# (overview, dpdl, pdsl, leasgd, straggler).
PAPER ?=
comma := ,
PAPERS := $(strip $(subst $(comma), ,$(PAPER)))
# Offline mirror folder with mnist.npz / cifar10.npz (CI: ../shared/data).
DATA_MIRROR ?=
ifneq ($(strip $(DATA_MIRROR)),)
export DPDL_DATA_MIRROR := $(abspath $(DATA_MIRROR))
endif

.PHONY: help setup test lint pytest nbval figures studies bench report clean distclean

help: ## List the targets
	@echo "dpdl-replication. Variables: PROFILE=committed|smoke|cpu|paper (default committed: render the committed paper-scale runs), PAPER=<folders of notebooks/, e.g. dpdl,pdsl> (default all), DATA_MIRROR=DIR"
	@grep -E '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN{FS=":.*## "}{printf "  make %-13s %s\n", $$1, $$2}'

setup: $(STAMP) ## Create .venv (Python 3.11), install the package with dev extras at the versions of requirements.lock, register the Jupyter kernel

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -c requirements.lock -e '.[dev]'
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python ($(KERNEL))"
	@# The registries' names, cached so that the first mistyped name answers before torch loads.
	@$(PY) -c "from dpdl_core.runs.config import registry_choices; registry_choices()"
	@touch $@

test: lint pytest nbval report-check ## Lint, then run the unit tests, every notebook under the smoke profile, and check the report in a browser

lint: $(STAMP) ## Lint the package, tests, benchmarks and notebooks with ruff (pyproject.toml)
	$(PY) -m ruff check .

pytest: $(STAMP) ## Unit, oracle and statistical tests only
	DPDL_PROGRESS=0 $(PY) -m pytest --durations=15 tests

nbval: $(STAMP) ## Execute every notebook (smoke profile) with nbval; cells assert their results
	DPDL_PROGRESS=0 DPDL_PROFILE=smoke DPDL_RESULTS_DIR=$(CURDIR)/build/smoke-results DPDL_FIGURES_DIR=$(CURDIR)/build/smoke-figures $(PY) -m pytest --nbval-lax \
		--nbval-kernel-name $(KERNEL) -p no:cacheprovider notebooks

figures: $(STAMP) ## Every paper's paper-scale figures and tables from the committed runs -> figures/paper/ (minutes); PROFILE=smoke|cpu|paper computes the notebooks of PAPER at that scale -> figures/PROFILE/
	$(if $(filter 1,$(ALLOW_SUBSET)),DPDL_REQUIRE_FULL_DATA=0) $(PY) -m dpdl_core figures $(if $(filter committed,$(PROFILE)),--committed,--profile $(PROFILE)) --kernel $(KERNEL) $(if $(PAPERS),--paper $(PAPERS))

# Data of the paper-scale studies: DATA_MIRROR if given, else the complete offline mirror
# ../shared/data_full where it exists, else torchvision's download into the data cache.
STUDY_MIRROR := $(if $(strip $(DATA_MIRROR)),$(abspath $(DATA_MIRROR)),$(abspath $(wildcard ../shared/data_full)))

studies: $(STAMP) ## Paper-scale studies of PAPER (default all; hours, resumable, one core, decisive runs first) -> results/<paper>/, then rewrites the README's answer table and docs/answer.md
	$(if $(STUDY_MIRROR),DPDL_DATA_MIRROR=$(STUDY_MIRROR)) nice -n 10 $(PY) -m dpdl_core study run $(if $(PAPERS),--paper $(PAPERS))
	$(PY) -m dpdl_core answer --allow-incomplete

bench: $(STAMP) ## Engine benchmarks: against per-edge and naive loops, the per-sample kernels, stacked runs, test-set evaluation, PDSL's strategies -> benchmarks/*.json
	$(PY) benchmarks/bench_engine.py --out benchmarks/results.json
	$(PY) benchmarks/bench_kernels.py --out benchmarks/kernels.json
	$(PY) benchmarks/bench_stacked.py --out benchmarks/stacked.json
	$(PY) benchmarks/bench_eval.py --out benchmarks/eval.json
	$(PY) benchmarks/bench_pdsl_strategies.py --out benchmarks/pdsl_strategies.json

report: $(STAMP) ## Site of PROFILE's figures, tables and executed notebooks (after make figures) -> build/report/index.html
	$(PY) -m dpdl_core report --profile $(REPORT_PROFILE)

.PHONY: report-check
report-check: $(STAMP) ## Build the site of the smoke outputs (after nbval: build/smoke-figures/smoke) in build/report-smoke; check it in headless chromium
	$(PY) -m dpdl_core report --profile smoke --out build/report-smoke --figures build/smoke-figures
	$(PY) tests/browser_check.py build/report-smoke/index.html --screenshot build/report_screenshot.png

clean: ## Remove executed notebooks, smoke results and caches (keeps data/ and the venv)
	rm -rf build .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +

distclean: clean ## Also remove the venv, your runs in data/results and generated figures (the committed results/<paper>/ stay)
	rm -rf $(VENV) data/results figures/smoke figures/cpu figures/paper
