"""Serves the Flask app with gunicorn, the production server."""

from gunicorn.app.base import BaseApplication

from bot.app import create_app
from service.settings import Settings


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings, options: dict) -> None:
        self._settings = settings
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self):
        return create_app(self._settings)


def serve(settings: Settings, *, host: str, port: int, workers: int) -> None:
    """Run the web app under gunicorn until interrupted."""
    # Threads, not more processes: requests mostly wait on Redis, and a process each is costly.
    options = {"bind": f"{host}:{port}", "workers": workers, "threads": 8, "worker_class": "gthread",
               "timeout": 30, "graceful_timeout": 10, "accesslog": "-", "errorlog": "-"}
    _Gunicorn(settings, options).run()
