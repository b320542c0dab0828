import os

from django.core.wsgi import get_wsgi_application

from config.warmup import worker_warm

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
application = get_wsgi_application()
worker_warm()
