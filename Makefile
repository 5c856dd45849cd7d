# Perspect: two commands on a fresh machine.
#   make demo   set up, fetch PERSPECTRUM, build the `default` index, run an example search
#   make test   set up, run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch first, pinned: pip finds the CPU build of 2.13.0 on this machine's disk. On another machine
# set TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu" to avoid a CUDA build.
TORCH_PIP_ARGS ?=
SHARED_PERSPECTRUM ?= ../shared/data/perspectrum
CLAIM ?= animals should have lawful rights

.PHONY: setup demo models test lint

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	@command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux >/dev/null; } \
	  || echo "tmux not installed: the tmux UI test will be skipped"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0 $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install -q -e '.[dev]'
	# PyLate without its fast-plaid dependency (needs another torch and crashes with this one);
	# its real dependencies are in pyproject.toml. `pip check` will mention fast-plaid: harmless.
	$(BIN)/python -m pip install -q --no-deps pylate==1.6.0
	touch $@

demo: setup
	@if [ -d "$(SHARED_PERSPECTRUM)" ]; then \
	  $(BIN)/perspect data fetch perspectrum --from "$(SHARED_PERSPECTRUM)"; \
	else \
	  $(BIN)/perspect data fetch perspectrum; \
	fi
	$(BIN)/perspect index build --name default \
	  --perspectives data/perspectrum/perspective_pool_v1.0.json \
	  $$(for f in data/perspectrum/evidence_pool_v1.0.json data/perspectrum/evidence_pool_partial_v1.0.json; do \
	       [ -f $$f ] && echo "--evidence $$f" && break; done)
	$(BIN)/perspect search "$(CLAIM)" --index default --k 10

# Fine-tune the dense bi-encoder (~25 min on 2 CPU cores), train the pairwise heads (~45 min), give
# stance STANCE_ROUNDS more rounds (`--profile continue`, 12-25 min each) and average the weights of
# the last two (the shipped model: 4 rounds, rounds 3 and 4 averaged), train the equivalence
# cross-encoder (~25 min) and the ColBERT model (~25 min), rebuild `default` with BM25 + dense +
# ColBERT (~15 min), then re-fit the pipeline's decisions on that index (its fused ranks and
# cosines, and the equivalence cross-encoder's scores; ~8 min). Needs the files fetched by
# `make demo`.
STANCE_ROUNDS ?= 4
models: setup
	$(BIN)/perspect train --task dense --profile full --data data/perspectrum
	$(BIN)/perspect train --task all --profile full --data data/perspectrum
	rm -rf models/pair-previous
	for i in $$(seq $(STANCE_ROUNDS)); do \
	  rm -rf models/pair-previous && cp -r models/pair models/pair-previous; \
	  $(BIN)/perspect train --profile continue --init models/pair --data data/perspectrum || exit 1; \
	done
	if [ -d models/pair-previous ]; then \
	  $(BIN)/perspect train --task average --models models/pair-previous models/pair --out models/pair; \
	fi
	$(BIN)/perspect train --task equivalence-ce --profile full --data data/perspectrum
	$(BIN)/perspect train --task colbert --profile full --data data/perspectrum
	$(MAKE) demo
	$(BIN)/perspect train --task calibrate --index default --data data/perspectrum \
	  --equivalence-model models/equivalence

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
