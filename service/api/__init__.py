"""The `/v2/agent` HTTP API: a Flask blueprint over the job store, plus problem details."""
