"""Development: `make run`. Debug on, everything else as base."""

from config.settings.base import *  # noqa: F403
from config.settings.env import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)

# Static files straight from the apps and sidecar packages, no collectstatic needed.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
