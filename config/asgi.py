import os

from django.core.asgi import get_asgi_application

from config.warmup import worker_warm

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
application = get_asgi_application()
worker_warm()
