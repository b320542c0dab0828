"""Tests: throwaway embedded servers (config.testing), the real model, fast hashing."""

from config.testing import ensure_test_services

ensure_test_services()

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import REST_FRAMEWORK  # noqa: E402

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tasks run inline unless a test starts a real worker; the broker is still real (Valkey).
CELERY_TASK_ALWAYS_EAGER = True
REST_FRAMEWORK = {**REST_FRAMEWORK, "PAGE_SIZE": 50}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
