# The README's two commands: `make run` and `make test`.
# PYTHON= names the Python a venv is made with. Unset, `make run` takes the newest of
# these that runs here (a pyenv shim can exist for a version it will not run), and
# `make test` takes 3.11, the one Python that torch's CPU build on disk is for.
# An existing .venv is kept, whatever its Python: `rm -r .venv` to change it.
ifdef PYTHON
TEST_PYTHON := $(PYTHON)
else
PYTHON := $(firstword $(foreach p,python3.13 python3.12 python3.11,\
  $(if $(shell $(p) -c 'import sys' 2>/dev/null && echo ok),$(p))))
TEST_PYTHON := python3.11
endif
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# The runtime dependencies only (make run); $(INSTALLED) adds the test tools (make test).
RUNTIME := $(VENV)/.runtime
HOST ?= 127.0.0.1
PORT ?= 8000
# Where make run keeps its SQLite files and the first admin's password.
VAR_DIR := $(or $(DURABLE_VAR_DIR),var)
# The PostgreSQL + Redis pass of `make test`.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/durable
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test install lint chromium smoke js-runtime

# $(call venv,DIR,PYTHON): make the venv DIR with PYTHON unless it exists.
venv = @test -x $(1)/bin/python || { \
  test -n "$(2)" || { echo "No python3.13, python3.12 or python3.11 runs here: set PYTHON=" >&2; exit 1; }; \
  echo "Creating $(1) with $(2) ($$($(2) --version))"; $(2) -m venv $(1); }
# Which Python a venv's targets run on.
say_python = @echo "$(1): $$($(1)/bin/python --version)"

$(INSTALLED): pyproject.toml
	$(call venv,$(VENV),$(TEST_PYTHON))
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

$(RUNTIME): pyproject.toml
	$(call venv,$(VENV),$(PYTHON))
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The Node side of JS graphs (DURABLE_JS_GRAPHS), from its lock file: npm ci, again only
# when the lock file changed. Node 20 and npm must be on PATH.
JS_RUNTIME := durable/js/runtime
$(JS_RUNTIME)/node_modules/.installed: $(JS_RUNTIME)/package-lock.json
	cd $(JS_RUNTIME) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

js-runtime: $(JS_RUNTIME)/node_modules/.installed

# Set up, migrate, then serve the console and run a worker beside it (Ctrl-C stops both).
# uvicorn serves the ASGI application, so run pages and the API stream server-sent
# events; open streams get 5 s to end when it stops.
# The worker runs the reaper of stale runs itself; its embedded Celery beat (--beat)
# schedules the retention sweep and fires the crons, from the schedule django-celery-beat
# keeps in the database (CELERY_BEAT_SCHEDULER), so a new cron needs no restart.
# umask 077: the SQLite files hold password hashes, sessions and every tenant's data.
# setsid: the worker's pool processes are out of our process group, so a SIGTERM to the
# group (as a supervisor sends it) reaches only its main process through the trap, which
# stops them in order; a pool process killed by it directly could die holding the pool's
# queue lock, and the worker then hung at exit.
# Plain log lines to read in a terminal; the processes log JSON lines unless told
# (DURABLE_LOG_FORMAT=json make run gives those).
run: export DURABLE_LOG_FORMAT ?= text
run: $(RUNTIME)
	$(call say_python,$(VENV))
	$(if $(DURABLE_JS_GRAPHS),$(MAKE) js-runtime)
	umask 077 && mkdir -p $(VAR_DIR)
	umask 077 && $(BIN)/python manage.py migrate --noinput
	umask 077 && $(BIN)/python manage.py bootstrap
	@echo "Console: http://$(HOST):$(PORT)/ (the first admin's password is in $(VAR_DIR)/admin-password)"
	umask 077; setsid $(BIN)/celery -A dashboard worker --loglevel=INFO --concurrency=2 \
	  --beat & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	$(BIN)/uvicorn dashboard.asgi:application --host $(HOST) --port $(PORT) \
	  --lifespan off --timeout-graceful-shutdown 5

# Browser tests drive Debian's chromium; Playwright cannot download browsers here.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The whole suite twice: on SQLite with the embedded broker, then on PostgreSQL + Redis.
test: install chromium lint js-runtime
	$(call say_python,$(VENV))
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(BIN)/python -m pytest

# A short pass on another Python, in a venv of its own with the runtime and langgraph-sdk
# only: migrate, a real worker and uvicorn, a run to its interrupt answered through the API.
# CI: PYENV_VERSION=3.13.0 make smoke PYTHON=python3.13
SMOKE_VENV = var/smoke/$(notdir $(PYTHON))

$(SMOKE_VENV)/.installed: pyproject.toml
	$(call venv,$(SMOKE_VENV),$(PYTHON))
	$(SMOKE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SMOKE_VENV)/bin/python -m pip install --quiet -e '.[smoke]'
	touch $@

smoke: $(SMOKE_VENV)/.installed
	$(call say_python,$(SMOKE_VENV))
	$(SMOKE_VENV)/bin/python .ci/smoke.py
