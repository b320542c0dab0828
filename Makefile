# Engram: `make run` brings the stack up, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-full clean-data

$(STAMP): requirements.txt clients/python/pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m config.devstack

# mypy's Django plugin imports the test settings; placeholder URLs stop those from
# starting throwaway servers just to type-check.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DATABASE_URL=postgres://typecheck@127.0.0.1:1/none REDIS_URL=redis://127.0.0.1:1 \
		$(VENV)/bin/mypy sessions_app memory_app analytics_app integrations config clients/python/src/engram

test: lint
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench.run --size short

bench-full: $(STAMP)
	$(PY) -m bench.run --size full

clean-data:
	rm -rf .engram
