"""Development and `make run`: debug on unless DJANGO_DEBUG says otherwise (`make run` turns
it off), a per-checkout secret key, everything else as base."""

import os
from pathlib import Path

from config.settings.base import *  # noqa: F403
from config.settings.base import BASE_DIR
from config.settings.env import env_bool, stored_secret_key

DEBUG = env_bool("DJANGO_DEBUG", True)

# Cart links and admin sessions are signed with SECRET_KEY: a key from the repository would
# let anyone forge them, so without DJANGO_SECRET_KEY each checkout generates its own once.
if not os.environ.get("DJANGO_SECRET_KEY"):
    SECRET_KEY = stored_secret_key(
        Path(os.environ.get("ENGRAM_DATA_DIR", BASE_DIR / ".engram")) / "secret_key"
    )

# Static files straight from the apps and sidecar packages, no collectstatic needed.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
