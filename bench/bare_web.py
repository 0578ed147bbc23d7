"""The baseline of bench/api.py: a bare Flask app answering one HGETALL as JSON, served by gunicorn with
exactly the settings `copydesk web` uses (bot.web.options: gevent workers, access log and its logger).

Run as `python bench/bare_web.py PORT REDIS_URL` (a fresh interpreter, so gevent patches before redis loads).
"""

import sys
from pathlib import Path

from gunicorn.app.base import BaseApplication

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.web import default_workers, options  # noqa: E402

RECORD = "bench:bare:record"


class _Bare(BaseApplication):
    def __init__(self, redis_url: str, chosen: dict) -> None:
        self._redis_url = redis_url
        self._options = chosen
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self):
        return bare_app(self._redis_url)


def bare_app(redis_url: str):
    """The bare Flask app: `GET /record` answers the hash RECORD as JSON (one HGETALL); `GET /healthz`."""
    # Imported here: in gunicorn's worker, after gevent has patched the standard library.
    import redis
    from flask import Flask, jsonify

    client = redis.Redis.from_url(redis_url)
    app = Flask(__name__)

    @app.get("/record")
    def record():
        return jsonify({k.decode(): v.decode() for k, v in client.hgetall(RECORD).items()})

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return app


if __name__ == "__main__":
    port, redis_url = int(sys.argv[1]), sys.argv[2]
    _Bare(redis_url, options(host="127.0.0.1", port=port, workers=default_workers())).run()
