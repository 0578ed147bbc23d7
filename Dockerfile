# One image for both processes: `copydesk web` (gunicorn, the default command) and `copydesk worker` (RQ).
# Every Python package comes from requirements.lock with its SHA-256 hashes; Copydesk itself is installed from its
# own source as a regular (not editable) package, resolving nothing. Runs as uid 10001.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml requirements.lock ./
COPY scripts/lockfile.py scripts/
RUN python scripts/lockfile.py check requirements.lock \
 && python -m venv /opt/copydesk \
 && /opt/copydesk/bin/pip install --no-cache-dir --require-hashes -r requirements.lock
COPY README.md LICENSE ./
COPY bot ./bot
COPY service ./service
# The build backend (setuptools) is in the lock: no build isolation, so nothing is fetched unpinned. Once the
# dependencies are checked, pip and setuptools leave: the image installs nothing at run time.
RUN /opt/copydesk/bin/pip install --no-cache-dir --no-deps --no-build-isolation . \
 && /opt/copydesk/bin/pip check \
 && /opt/copydesk/bin/pip uninstall --yes --quiet setuptools pip

FROM ${PYTHON_IMAGE}
# git runs every fetch and push. Not pinned to a version: Debian's security updates replace it within the release,
# and a pinned version disappears from the archive with the next one.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 10001 copydesk \
 && useradd --uid 10001 --gid 10001 --create-home copydesk \
 && mkdir /data \
 && chown 10001:10001 /data
COPY --from=build /opt/copydesk /opt/copydesk
ENV PATH=/opt/copydesk/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    COPYDESK_DATA_DIR=/data \
    COPYDESK_LOG_FORMAT=json
# Numeric, so the host and Kubernetes' runAsNonRoot can check it without the image's /etc/passwd.
USER 10001:10001
WORKDIR /data
EXPOSE 8000
# The web server's liveness; a worker container uses `copydesk doctor --worker-alive` instead (docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=10s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=5)"]
CMD ["copydesk", "web", "--host", "0.0.0.0", "--port", "8000"]
