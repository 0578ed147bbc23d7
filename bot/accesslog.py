"""gunicorn's access log without secrets: one-time tokens and codes in URLs, credentials in headers."""

import re

from gunicorn.glogging import Logger

# Query parameters that carry a one-time credential: the registration link's token, GitHub's manifest code
# and the state bound to it, an OAuth code.
SECRET_PARAMETERS = ("token", "code", "state", "client_secret", "access_token")
_SECRET_VALUE = re.compile(r"(?i)((?:^|[?&;])(?:" + "|".join(SECRET_PARAMETERS) + r")=)[^&;#\s\"]*")
_SECRET_HEADERS = ("authorization", "cookie", "set-cookie", "x-hub-signature-256", "x-hub-signature")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """`text` (a URL, a request line or a query string) with the values of secret parameters replaced."""
    return _SECRET_VALUE.sub(lambda match: match.group(1) + REDACTED, text)


class RedactingLogger(Logger):
    """The access log atoms with secret query values and credential headers replaced before formatting."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        for key, value in atoms.items():
            if any(key in (f"{{{name}}}i", f"{{{name}}}o", f"{{http_{name.replace('-', '_')}}}e")
                   for name in _SECRET_HEADERS):
                atoms[key] = REDACTED
            elif isinstance(value, str):
                atoms[key] = redact(value)
        return atoms
