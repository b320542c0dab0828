"""analytics_app models. The rollup models live in `models_rollups` so that they can be
built beside the model-price table without two branches editing one file."""

from analytics_app.models_rollups import *  # noqa: F403
from analytics_app.models_rollups import __all__ as _rollups_all

__all__ = [*_rollups_all]
