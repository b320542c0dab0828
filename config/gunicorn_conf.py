"""gunicorn settings for `make run` (and the Docker image): `gunicorn -c config/gunicorn_conf.py
config.wsgi:application`. Sizing comes from config.serving; logs go to stdout/stderr with the
request id of each response in the access log."""

import os

from config.gunicorn_metrics import child_exit, on_starting  # noqa: F401  gunicorn hooks
from config.serving import web_sizing

_sizing = web_sizing()

bind = f"{os.environ.get('ENGRAM_HOST', '127.0.0.1')}:{os.environ.get('ENGRAM_PORT', '8000')}"
worker_class = "gthread"
workers = _sizing.workers
threads = _sizing.threads
# A worker busy longer than this is restarted (the embedding model's first load included).
timeout = int(os.environ.get("ENGRAM_WEB_TIMEOUT_SECONDS", "120"))
graceful_timeout = 15
keepalive = 5
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("ENGRAM_WEB_LOG_LEVEL", "info")
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
# No control socket: its default path is per user, so two servers on one machine would clash.
control_socket_disable = True
# Request lines are not capped at gunicorn's 4094 bytes: a documented query parameter
# (the context `query`, up to 4000 characters) can be longer once percent-encoded. Bodies
# stay capped by ENGRAM_MAX_BODY_BYTES.
limit_request_line = 0
