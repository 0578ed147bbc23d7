"""gunicorn's access log without secrets: one-time tokens and codes in URLs, credentials in headers."""

import re

from gunicorn.glogging import Logger

# Query parameters that carry a one-time credential: the registration link's token, GitHub's manifest code
# and the state bound to it, an OAuth code.
SECRET_PARAMETERS = ("token", "code", "state", "client_secret", "access_token")
_SECRET_VALUE = re.compile(r"(?i)((?:^|[?&;])(?:" + "|".join(SECRET_PARAMETERS) + r")=)[^&;#\s\"]*")
_SECRET_HEADERS = ("authorization", "cookie", "set-cookie", "x-hub-signature-256", "x-hub-signature")
# The atom names gunicorn gives those headers: request (`{name}i`), response (`{name}o`) and environ
# (`{http_name}e`). Built once: checking each of a request's ~40 atoms against them is on every request's path.
_SECRET_ATOMS = frozenset(
    atom for name in _SECRET_HEADERS for atom in (f"{{{name}}}i", f"{{{name}}}o", f"{{http_{name.replace('-', '_')}}}e")
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """`text` (a URL, a request line or a query string) with the values of secret parameters replaced."""
    return _SECRET_VALUE.sub(lambda match: match.group(1) + REDACTED, text)


class RedactingLogger(Logger):
    """The access log atoms with secret query values and credential headers replaced before formatting."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        for key, value in atoms.items():
            if key in _SECRET_ATOMS:
                atoms[key] = REDACTED
            elif isinstance(value, str) and "=" in value:  # every secret parameter _SECRET_VALUE finds has one
                atoms[key] = redact(value)
        return atoms


class JsonLogger(RedactingLogger):
    """gunicorn's error and access logs as one JSON object per line (COPYDESK_LOG_FORMAT=json): the access line
    carries the request id, status and duration as fields, with the same redaction as the text line."""

    def setup(self, cfg) -> None:
        from bot.logs import JsonFormatter  # here, not at import: bot.logs is the app's, loaded in the worker

        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())

    def access(self, resp, req, environ, request_time) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        query = atoms.get("q") or ""
        fields = {
            "request_id": atoms.get("{x-request-id}o"),
            "method": atoms.get("m"),
            "path": atoms.get("U") + (f"?{query}" if query else ""),
            "status": _status(atoms.get("s")),
            "duration_ms": round(request_time.total_seconds() * 1000, 1),
            "bytes": atoms.get("B"),
            "remote_addr": atoms.get("h"),
            "user_agent": atoms.get("a"),
        }
        try:
            self.access_log.info(
                "%s %s %s", fields["method"], fields["path"], fields["status"], extra={"fields": fields}
            )
        except Exception:  # noqa: BLE001 - as gunicorn's own access(): a log line never fails a request
            self.error(f"Failed to format the access log line for {fields['path']}")


def _status(raw) -> int | str | None:
    return int(raw) if isinstance(raw, str) and raw.isdigit() else raw
