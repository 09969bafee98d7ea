# The README's two commands: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# The runtime dependencies only (make run); $(INSTALLED) adds the test tools (make test).
RUNTIME := $(VENV)/.runtime
HOST ?= 127.0.0.1
PORT ?= 8000
# Where make run keeps its SQLite files, the beat schedule and the first admin's password.
VAR_DIR := $(or $(DURABLE_VAR_DIR),var)
# The PostgreSQL + Redis pass of `make test`.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/durable
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test install lint chromium

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# Set up, migrate, then serve the console and run a worker beside it (Ctrl-C stops both).
# uvicorn serves the ASGI application, so run pages and the API stream server-sent
# events; open streams get 5 s to end when it stops.
# The worker runs the reaper of stale runs itself; its embedded Celery beat (--beat)
# schedules the retention sweep.
# umask 077: the SQLite files hold password hashes, sessions and every tenant's data.
run: $(RUNTIME)
	umask 077 && mkdir -p $(VAR_DIR)
	umask 077 && $(BIN)/python manage.py migrate --noinput
	umask 077 && $(BIN)/python manage.py bootstrap
	@echo "Console: http://$(HOST):$(PORT)/ (the first admin's password is in $(VAR_DIR)/admin-password)"
	umask 077; $(BIN)/celery -A dashboard worker --loglevel=INFO --concurrency=2 \
	  --beat --schedule=$(VAR_DIR)/celerybeat-schedule & worker=$$!; \
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
test: install chromium lint
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(BIN)/python -m pytest
