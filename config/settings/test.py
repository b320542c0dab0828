"""Tests: throwaway embedded servers (config.testing), the real model, fast hashing."""

from config.testing import ensure_test_services

ensure_test_services()

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import REST_FRAMEWORK  # noqa: E402
from config.settings.env import env_str  # noqa: E402

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tasks run inline unless a test starts a real worker; the broker is still real (Valkey).
CELERY_TASK_ALWAYS_EAGER = True
REST_FRAMEWORK = {**REST_FRAMEWORK, "PAGE_SIZE": 50}
# Concurrency tests and benchmarks send thousands of requests with one key; the limit
# has its own tests, which set it.
ENGRAM_RATE_LIMIT = env_str("ENGRAM_RATE_LIMIT", "")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
