# Engram: `make run` brings the stack up (gunicorn), `make dev` with Django's reloading
# runserver, `make test` runs the suite (installing the system packages it needs first).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run dev test test-system-deps lint bench bench-full clean-data

# requirements.txt pulls in every layer of requirements/ (base: serving, embedding, local:
# the embedded stack, dev: tests and tools). pip says nothing but its errors (-qq: also
# no warnings, e.g. about index locations of the machine's pip configuration).
$(STAMP): requirements.txt $(wildcard requirements/*.txt) clients/python/pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "Installing Python packages into $(VENV) (torch and the embedding model take minutes)…"
	@$(PY) -m pip install -qq --upgrade pip
	@$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)
	@echo "Python packages installed."

run: $(STAMP)
	@$(PY) -m config.devstack

dev: $(STAMP)
	@$(PY) -m config.devstack --dev

# The browser tests drive Debian's chromium; the Docker test validates the compose file with
# docker-compose. Installed with apt-get when we are root, otherwise we say what to install.
SYSTEM_DEPS_MISSING = $(shell command -v chromium >/dev/null 2>&1 || echo chromium; \
	command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || echo docker-compose)
# The TypeScript client's tests (npm test, run by the suite) need Node.js 20+ and npm;
# distributions ship older ones, so we say what is missing rather than install it.
test-system-deps:
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null \
		&& command -v npm >/dev/null 2>&1 || { \
		echo "make test needs Node.js 20+ and npm (the TypeScript client's tests): https://nodejs.org/"; \
		exit 1; }
	@missing="$(strip $(SYSTEM_DEPS_MISSING))"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing $$missing with apt-get (needed by the browser and Docker tests)…"; \
			DEBIAN_FRONTEND=noninteractive apt-get update && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing || exit 1; \
		else \
			echo "make test needs: $$missing"; \
			echo "install it with: sudo apt-get install -y $$missing   (Debian/Ubuntu package names)"; \
			exit 1; \
		fi; \
	fi

# mypy's Django plugin imports the test settings; placeholder URLs stop those from
# starting throwaway servers just to type-check. import-linter holds the direction between
# the apps (contracts in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DATABASE_URL=postgres://typecheck@127.0.0.1:1/none REDIS_URL=redis://127.0.0.1:1 \
		$(VENV)/bin/mypy sessions_app memory_app analytics_app cockpit integrations config clients/python/src/engram
	$(VENV)/bin/lint-imports --no-cache --no-logo

test: test-system-deps lint
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench.run --size short

bench-full: $(STAMP)
	$(PY) -m bench.run --size full

clean-data:
	rm -rf .engram
