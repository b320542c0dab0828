"""`make run`: the whole stack in one terminal.

Starts embedded PostgreSQL and Valkey (unless DATABASE_URL / REDIS_URL are set), migrates,
loads the demo once, then runs web, Celery worker and Celery beat with prefixed logs.
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
    for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
        say(name, raw.decode(errors="replace").rstrip())


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True)  # noqa: S603


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    DATA.mkdir(parents=True, exist_ok=True)
    servers: list[EmbeddedPostgres | EmbeddedValkey] = []
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = threading.Event()

    def stop(*_: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if not os.environ.get("DATABASE_URL"):
            port = int(os.environ.get("ENGRAM_PG_PORT", "54329"))
            postgres = EmbeddedPostgres(DATA / "pgdata", port)
            servers.append(postgres)
            os.environ["DATABASE_URL"] = postgres.start()
            say("stack", f"embedded PostgreSQL on 127.0.0.1:{port} (data in {DATA / 'pgdata'})")
        if not os.environ.get("REDIS_URL"):
            port = int(os.environ.get("ENGRAM_VALKEY_PORT", "63799"))
            if port_is_open(port):
                raise SystemExit(f"port {port} is taken; set ENGRAM_VALKEY_PORT or REDIS_URL")
            valkey = EmbeddedValkey(DATA / "valkey", port)
            servers.append(valkey)
            os.environ["REDIS_URL"] = valkey.start()
            say("stack", f"embedded Valkey on 127.0.0.1:{port}")
        host = os.environ.get("ENGRAM_HOST", "127.0.0.1")
        web_port = os.environ.get("ENGRAM_PORT", "8000")
        # Links Engram prints or hands out (demo banner, cart links) point at this server.
        os.environ.setdefault("ENGRAM_PUBLIC_BASE_URL", f"http://{host}:{web_port}")
        _manage("migrate", "--no-input", "-v", "0")
        _manage("sync_schedules")
        _manage("load_demo")
        commands = {
            "web": [sys.executable, "manage.py", "runserver", f"{host}:{web_port}", "--noreload"],
            "worker": [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-l",
                "info",
                "--concurrency",
                "2",
                "-n",
                "engram@%h",
            ],
            "beat": [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "-l",
                "info",
                "--schedule",
                str(DATA / "celerybeat-schedule"),
            ],
        }
        for name, command in commands.items():
            process = subprocess.Popen(  # noqa: S603
                command,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            children[name] = process
            threading.Thread(target=_pump, args=(name, process.stdout), daemon=True).start()
        say("stack", f"web on http://{host}:{web_port}/  (admin /admin/, docs /api/docs/)")
        say("stack", "Ctrl-C stops everything")
        while not stopping.is_set():
            for name, process in children.items():
                if process.poll() is not None:
                    say("stack", f"{name} exited with {process.returncode}; stopping")
                    stopping.set()
            stopping.wait(0.5)
        return 0
    finally:
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
