# kbsite: `make run` brings the platform up, `make test` runs the whole suite.
# Both create .venv and install requirements on first use; no root needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
PORT ?= 8000

# Production defaults: DEBUG is off unless KB_DEBUG=1 is set by hand; without KB_SECRET_KEY every
# manage.py command reads the key generated once in var/secret_key. The tests use their own settings.
export PORT
export PYTHONUNBUFFERED := 1

.PHONY: run test setup migrate lint bench clean

# requirements-dev.txt (test and lint tools), when present, is installed too.
DEV_REQUIREMENTS := $(wildcard requirements-dev.txt)

$(BIN)/.installed: requirements.txt $(DEV_REQUIREMENTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt $(addprefix -r ,$(DEV_REQUIREMENTS))
	touch $@

setup: $(BIN)/.installed

migrate: setup
	$(MANAGE) migrate --noinput

# The Procfile's processes (gunicorn, and the django-q2 cluster that recovers ingestions that died)
# run as one unit under `manage.py serve`: Ctrl-C, a kill of make or of its whole process group stops
# them all, and the embedded PostgreSQL stops with the last of them. A second `make run` beside a live
# one refuses to start (var/run/kbsite.lock). `exec`: the supervisor's parent is make itself.
run: setup
	@$(BIN)/python -m kbsite.refuse_second_run kbsite  # refuses here, before migrating beside a live one
	$(MANAGE) migrate --noinput
	@$(BIN)/python -m ingestion.ocr  # says how to add Tesseract if missing; never fails
	$(MANAGE) embedding_convert  # with KB_EMBED_RUNTIME=torch: converted once, before the workers start
	$(MANAGE) setup_demo
	$(MANAGE) collectstatic --noinput --verbosity 0
	exec $(MANAGE) serve

test: setup
	$(BIN)/python -m pytest

# mypy reads the settings but needs no database: a DATABASE_URL that is never connected to keeps it from
# starting the embedded PostgreSQL.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports  # the import contracts in pyproject.toml: layers, leaf independence, no circles
	DATABASE_URL=postgres://typecheck@127.0.0.1:1/none KB_DEBUG=1 $(BIN)/mypy .
	$(MANAGE) makemigrations --check --dry-run

bench: migrate
	$(BIN)/python bench/ingest_throughput.py
	$(BIN)/python bench/search_latency.py
	$(BIN)/python bench/calibrate_floor.py
	$(BIN)/python bench/search_load.py

clean:
	rm -rf $(VENV) var
