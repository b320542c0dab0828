"""Field factories shared by the models, so money and token columns look alike everywhere."""

from django.db import models


def money_field(**kwargs: object) -> models.DecimalField:
    """USD with micro-dollar precision to spare: per-step costs can be 1e-8 dollars."""
    options: dict[str, object] = {"max_digits": 20, "decimal_places": 10}
    options.update(kwargs)
    return models.DecimalField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept


def token_field(**kwargs: object) -> models.BigIntegerField:
    options: dict[str, object] = {"default": 0}
    options.update(kwargs)
    return models.BigIntegerField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
