from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """The top layer's ways in for agents: the MCP server and the OTLP/HTTP receiver.
    Owns no tables; it calls the apps' services and selectors with a key's tenant."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "integrations"
