# Two commands do all the set-up on a fresh machine that has only python3:
#   make run   -> creates .venv, installs the locked environment, runs the shortest-path experiment
#   make test  -> same set-up, then the test suite
#   make test-fast -> the unit tests only, in about 95 CPU-seconds (no Kedro runs, browser, notebook)
#   make compare-smoke BASE=<rev> -> the smoke run's tables of <rev> and HEAD compared bit for bit
#   make lock  -> re-resolves requirements.lock from pyproject.toml (after changing a dependency)
#   make notebook -> installs JupyterLab (the `notebook` extra) and opens notebooks/redraw_figure.ipynb
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
export KEDRO_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := 1
export MPLBACKEND := Agg

.PHONY: run test test-fast compare-smoke notebook bench bench-methods bench-inverse bench-experiments bench-footprint bench-text-features install lock viz clean-venv clean-data data-size

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The exact versions of requirements.lock (the project with its test extra), installed by uv
# (a pip-compatible installer, itself from PyPI: 20 s instead of pip's 4 min), then the project
# itself without resolving again. The packages are compiled to bytecode once here: uv does not
# by default, and where PYTHONDONTWRITEBYTECODE is set Python never caches it, so every process
# (each `kedro run`, each loky worker, each test worker) compiled its imports again: 11 of the
# 15 s before a `kedro run`'s first node (docs/decisions/014-bytecode-at-install.md).
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "uv>=0.5,<1"

$(STAMP): $(LOCK) pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r $(LOCK)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# Re-pins every dependency (and theirs) of the project and its test extra, after a change to
# pyproject.toml's dependencies; `make lock ARGS=--upgrade` moves every pin to the newest release.
lock: | $(BIN)/uv
	$(BIN)/uv pip compile --quiet --python $(BIN)/python --extra test $(ARGS) --output-file $(LOCK) pyproject.toml

run: $(STAMP)
	$(BIN)/kedro run --pipelines=shortest_path

# One BLAS thread in every test process (and the Kedro runs and workers they start): a second
# BLAS thread spinning on the tests' small matrices costs more CPU than it saves, the more so
# beside a second test process on 2 cores (measured with one process: 134 -> 103 CPU-s for the
# unit tests, 129 -> 103 for tests/solvers). The tests that check that thread counts change
# nothing set their own.
ONE_BLAS_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

# The tests keep their bytecode even where PYTHONDONTWRITEBYTECODE is set: without it each
# test process rewrote and compiled every test module again (pytest's assertion rewriting,
# 8.3 -> 5.9 CPU-s to collect the suite) and each Kedro run or worker compiled the project's
# own sources (0.4 CPU-s a process). The caches go to the gitignored __pycache__ folders.
TEST_ENV := $(ONE_BLAS_THREAD) PYTHONDONTWRITEBYTECODE=

# One test process per core (pytest-xdist, work stealing for the uneven tests): most of the
# suite's wall time is Kedro runs in subprocesses and project copies, independent of each other.
test: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -n auto --dist worksteal

# The inner loop: the suite without the tests marked (pyproject.toml) as whole Kedro runs,
# browser, notebook or slow solver checks. One process: on 2 cores a second worker's imports
# cost more CPU than they save.
FAST_TESTS := not (slow or pipeline or browser or notebook)
test-fast: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -n 0 -m "$(FAST_TESTS)"

# Behaviour unchanged by a refactor: `kedro run --env=smoke` at BASE and at HEAD_REV (default
# HEAD), each in a temporary git worktree of its own with this venv, every evaluation table,
# trial summary, hyperparameter table and online-step table compared exactly (timing columns left
# out); exits 1 naming the tables that differ. About 40 CPU-s.
HEAD_REV ?= HEAD
ifneq ($(filter compare-smoke,$(MAKECMDGOALS)),)
ifeq ($(BASE),)
$(error give the revision to compare with: make compare-smoke BASE=<rev> [HEAD_REV=<rev>])
endif
endif
compare-smoke: $(STAMP)
	$(BIN)/python scripts/compare_smoke.py --base $(BASE) --head $(HEAD_REV)

# Every benchmark: the hot paths against references timed in the same run (a few minutes),
# then the end-to-end wall time, peak memory and disk of every paper figure (hours at the full
# tuning protocol: docs/performance.md).
bench: bench-methods bench-inverse bench-experiments

bench-methods: $(STAMP)
	$(BIN)/python benchmarks/lp_oracles.py
	$(BIN)/python benchmarks/mom_fit.py
	$(BIN)/python benchmarks/methods_speed.py
	$(BIN)/python benchmarks/solver_policy.py
	$(BIN)/python benchmarks/dense_cholesky.py
	$(BIN)/python benchmarks/page_faults.py
	$(BIN)/python benchmarks/dfl_speed.py
	$(BIN)/python benchmarks/spo_plus_grid.py
	$(BIN)/python benchmarks/kernel_mom_cells.py --data-degree 1 --kernel rbf --cells 0.1 2
	$(BIN)/python benchmarks/kernel_mom_cells.py --data-degree 6 --kernel poly --cells 4:0.1 4:0.5 4:1 4:2
	$(BIN)/python benchmarks/startup.py

# Inverse LP from x* alone: lambda tuned without costs on the shipped example (and with a
# feature in other units), the dual formulation's 9-lambda grid against the basis
# formulation's (the dual/basis ratio), the block method's two factorizations, the scale-up
# table, then RouteMOM on grids and the real road networks of MOM_NETWORKS_DIR
# (benchmarks/route_fit.py; up to ~25 minutes in all).
bench-inverse: $(STAMP)
	$(BIN)/python benchmarks/inverse_tuning.py
	$(BIN)/python benchmarks/dual_fit.py
	$(BIN)/python benchmarks/tuning_folds.py
	$(BIN)/python benchmarks/inverse_scale.py
	$(BIN)/python benchmarks/route_fit.py

# End-to-end wall time and peak memory of the whole paper at the paper's settings, as one
# `kedro run --pipelines=paper` (each figure's stages from its run report; `benchmarks/experiments.py
# --figures fig1,fig4` runs figures one by one), then the training CPU minutes per method and figure.
bench-experiments: $(STAMP)
	$(BIN)/python benchmarks/experiments.py --pipeline paper
	$(BIN)/python scripts/training_profile.py

# The disk footprint of a whole paper run in minutes: every figure with its trials, sizes and
# stored artefacts, but one grid cell per method (conf/footprint; docs/runs_and_storage.md).
bench-footprint: $(STAMP)
	$(BIN)/python benchmarks/experiments.py --env footprint --figures fig1,fig2,fig3,fig4,fig5,fig6,fig7

# The knapsack figures again with the paper text's settings: features U[0,1]^4, the squared RBF
# norm, figure 3 up to T = 5000 (a sensitivity run; its reports go to
# data/08_reporting/text_features/, see docs/results_sensitivity.md).
bench-text-features: $(STAMP)
	$(BIN)/python benchmarks/experiments.py --env text_features --figures fig3,fig4,fig5,fig6

viz: $(STAMP)
	$(BIN)/kedro viz run

# JupyterLab and ipywidgets (the `notebook` extra, resolved with every package the lock pins kept
# at its pin), then the notebook that redraws a figure from the catalog. Not part of the lock:
# `make test` runs the notebook in a bare kernel. NOTEBOOK_ARGS: e.g. --no-browser on a server.
NOTEBOOK := notebooks/redraw_figure.ipynb
notebook: $(STAMP)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c $(LOCK) -e ".[notebook]"
	$(BIN)/jupyter lab $(NOTEBOOK_ARGS) $(NOTEBOOK)

clean-venv:
	rm -rf $(VENV)

# Disk: keep the newest KEEP versions of every dataset under data/ and the model files they
# list (docs/runs_and_storage.md); data-size prints the size per experiment and in total.
KEEP ?= 3
clean-data: $(STAMP)
	$(BIN)/python -m mom_pipeline.data_cleanup --keep $(KEEP)

data-size: $(STAMP)
	$(BIN)/python -m mom_pipeline.data_cleanup --report
