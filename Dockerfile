# One image for both processes: `copydesk web` (gunicorn) and `copydesk worker` (RQ).
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 copydesk
WORKDIR /app
COPY pyproject.toml README.md app.yml ./
COPY service ./service
COPY bot ./bot
# Editable, so the GitHub registration page finds app.yml beside the code.
RUN pip install --no-cache-dir -e .

RUN mkdir /data && chown copydesk /data
USER copydesk
ENV COPYDESK_DATA_DIR=/data \
    COPYDESK_LOG_FORMAT=json
EXPOSE 8000
CMD ["copydesk", "web", "--host", "0.0.0.0", "--port", "8000"]
