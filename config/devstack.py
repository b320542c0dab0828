"""`make run` / `make dev`: the whole stack in one terminal.

Starts embedded PostgreSQL and Valkey (unless DATABASE_URL / REDIS_URL are set), migrates,
loads the demo once, then runs web, Celery worker and Celery beat with prefixed logs.
`make run` serves the web with gunicorn (gthread workers sized to the machine, Django's
psycopg pool, DEBUG off; see config/serving.py); `make dev` (`--dev`) with Django's
runserver, which reloads on code changes, and DEBUG on.
Ctrl-C (or SIGTERM) stops the three processes, then the embedded servers; nothing is left
behind. Data lives under `.engram/` (git-ignored), so a second run keeps it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from config.embedded import EmbeddedPostgres, EmbeddedValkey, port_is_open
from config.serving import pool_env, web_sizing
from config.settings.env import embedded_pg_port, embedded_valkey_port

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ENGRAM_DATA_DIR", ROOT / ".engram"))
COLORS = {"web": "36", "worker": "33", "beat": "35", "stack": "32"}


def say(name: str, line: str) -> None:
    color = COLORS.get(name, "0")
    use_color = sys.stdout.isatty()
    label = f"\033[{color}m{name:>6} |\033[0m" if use_color else f"{name:>6} |"
    sys.stdout.write(f"{label} {line}\n")
    sys.stdout.flush()


def _pump(name: str, stream: object) -> None:
    for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
        say(name, raw.decode(errors="replace").rstrip())


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True)  # noqa: S603


def _manage_quietly(*args: str, announce: str) -> None:
    """A command whose chatter stays off the console: the first run's ONNX export logs a
    few hundred lines of exporter passes. One line before, the command's last line after;
    everything it printed only if it fails."""
    say("stack", announce)
    run = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True
    )
    if run.returncode != 0:
        sys.stdout.write(run.stdout + run.stderr)
        raise subprocess.CalledProcessError(run.returncode, run.args)
    for line in run.stdout.strip().splitlines()[-1:]:
        say("stack", line)


def web_command(dev: bool, host: str, port: str) -> tuple[list[str], dict[str, str]]:
    """The web process's argv and the environment it adds."""
    if dev:
        return [sys.executable, "manage.py", "runserver", f"{host}:{port}"], {}
    sizing = web_sizing()
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        str(ROOT / "config" / "gunicorn_conf.py"),
        "config.wsgi:application",
    ]
    # Several workers: /metrics adds up every worker's samples from this folder (cleared
    # by the gunicorn hook at start; see sessions_app/metrics.py).
    metrics = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(DATA / "prometheus")
    return argv, {
        **pool_env(sizing),
        "ENGRAM_HOST": host,
        "ENGRAM_PORT": port,
        "PROMETHEUS_MULTIPROC_DIR": metrics,
    }


def describe_sizing() -> str:
    sizing = web_sizing()
    return (
        f"{sizing.workers} workers x {sizing.threads} threads, "
        f"DB pool {sizing.pool_max_size} per worker"
    )


def main(argv: list[str] | None = None) -> int:
    dev = "--dev" in (sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    # `make run` is the production-grade default: no debug pages, tracebacks to the log.
    os.environ.setdefault("DJANGO_DEBUG", "true" if dev else "false")
    DATA.mkdir(parents=True, exist_ok=True)
    servers: list[EmbeddedPostgres | EmbeddedValkey] = []
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = threading.Event()

    def stop(*_: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        _start_servers(servers)
        host = os.environ.get("ENGRAM_HOST", "127.0.0.1")
        web_port = os.environ.get("ENGRAM_PORT", "8000")
        # Links Engram prints or hands out (demo banner, cart links) point at this server.
        os.environ.setdefault("ENGRAM_PUBLIC_BASE_URL", f"http://{host}:{web_port}")
        _prepare_database_and_model()
        web_argv, web_env = web_command(dev, host, web_port)
        commands = {"web": web_argv, "worker": WORKER_ARGV, "beat": beat_argv()}
        for name, command in commands.items():
            children[name] = _spawn(name, command, web_env if name == "web" else {})
        served_by = "runserver (reloads on change)" if dev else "gunicorn " + describe_sizing()
        say("stack", f"web on http://{host}:{web_port}/  via {served_by}")
        say("stack", "admin /admin/, API docs /api/docs/")
        say("stack", "Ctrl-C stops everything")
        while not stopping.is_set():
            for name, process in children.items():
                if process.poll() is not None:
                    say("stack", f"{name} exited with {process.returncode}; stopping")
                    stopping.set()
            stopping.wait(0.5)
        return 0
    finally:
        _stop_all(children, servers)


WORKER_ARGV = [
    sys.executable,
    *("-m", "celery", "-A", "config", "worker", "-l", "info"),
    *("--concurrency", "2", "-n", "engram@%h"),
]


def beat_argv() -> list[str]:
    return [
        sys.executable,
        *("-m", "celery", "-A", "config", "beat", "-l", "info"),
        *("--schedule", str(DATA / "celerybeat-schedule")),
    ]


def _start_servers(servers: list[EmbeddedPostgres | EmbeddedValkey]) -> None:
    """The embedded PostgreSQL and Valkey, unless DATABASE_URL / REDIS_URL name servers;
    each started one is appended to `servers` (stopped in reverse order)."""
    if not os.environ.get("DATABASE_URL"):
        port = embedded_pg_port()
        postgres = EmbeddedPostgres(DATA / "pgdata", port)
        servers.append(postgres)
        os.environ["DATABASE_URL"] = postgres.start()
        say("stack", f"embedded PostgreSQL on 127.0.0.1:{port} (data in {DATA / 'pgdata'})")
    if not os.environ.get("REDIS_URL"):
        port = embedded_valkey_port()
        if port_is_open(port):
            raise SystemExit(f"port {port} is taken; set ENGRAM_VALKEY_PORT or REDIS_URL")
        valkey = EmbeddedValkey(DATA / "valkey", port)
        servers.append(valkey)
        os.environ["REDIS_URL"] = valkey.start()
        say("stack", f"embedded Valkey on 127.0.0.1:{port}")


def _prepare_database_and_model() -> None:
    """Migrations, the periodic schedule, the embedding model and the demo data."""
    _manage("migrate", "--no-input", "-v", "0")
    _manage("sync_schedules")
    _manage_quietly(
        "prepare_embedder",
        announce="loading the embedding model (the first run exports it to ONNX: "
        "a minute or more)…",
    )
    _manage("load_demo")


def _spawn(name: str, command: list[str], extra_env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start one process of the stack, its output prefixed with `name`."""
    process = subprocess.Popen(  # noqa: S603
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
        env={**os.environ, "PYTHONUNBUFFERED": "1", **extra_env},
    )
    threading.Thread(target=_pump, args=(name, process.stdout), daemon=True).start()
    return process


def _stop_all(
    children: dict[str, subprocess.Popen[bytes]], servers: list[EmbeddedPostgres | EmbeddedValkey]
) -> None:
    """SIGTERM to every process group, SIGKILL to those still up after 15 s, then the
    servers in reverse order of start."""
    say("stack", "stopping…")
    for process in children.values():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in children.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for server in reversed(servers):
        server.stop()
    say("stack", "stopped")


if __name__ == "__main__":
    raise SystemExit(main())
