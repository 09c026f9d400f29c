# kbsite: `make run` brings the platform up, `make test` runs the whole suite.
# Both create .venv and install requirements on first use; no root needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
PORT ?= 8000

# Development defaults; set KB_SECRET_KEY (and unset KB_DEBUG) in production.
export KB_DEBUG ?= 1
export KB_SECRET_KEY ?= dev-only-not-for-production
export PYTHONUNBUFFERED := 1

.PHONY: run test setup migrate lint bench clean

$(BIN)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

setup: $(BIN)/.installed

migrate: setup
	$(MANAGE) migrate --noinput

# Web server and django-q2 cluster share the embedded PostgreSQL; Ctrl-C stops both,
# and the database stops with the last of them. The cluster runs in its own session
# and is stopped exactly once by `stop`: a second SIGTERM while django-q2 shuts down
# deadlocks its signal handler (django-q2 issue #346). Only the web server warms the
# model: the cluster forks its workers, and a fork must not inherit a model being loaded.
run: migrate
	@$(BIN)/python -m collections_app.ingestion.ocr  # says how to add Tesseract if missing; never fails
	$(MANAGE) setup_demo
	@stop() { trap - EXIT INT TERM; kill -TERM $$cluster 2>/dev/null; wait $$cluster 2>/dev/null; }; \
	trap stop EXIT INT TERM; \
	setsid $(MANAGE) qcluster & cluster=$$!; \
	KB_WARM_EMBEDDING=1 $(MANAGE) runserver 127.0.0.1:$(PORT) --noreload

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MANAGE) makemigrations --check --dry-run

bench: migrate
	$(BIN)/python bench/ingest_throughput.py
	$(BIN)/python bench/search_latency.py
	$(BIN)/python bench/calibrate_floor.py

clean:
	rm -rf $(VENV) var
