#!/usr/bin/env bash
# Build the image and run it where there is no Docker daemon and no registry (as root, by hand; not part of CI):
# a Debian bookworm stand-in for python:3.11-slim made with debootstrap (its CA bundle copied from this host), the
# Dockerfile built on it with podman (chroot isolation), then the image's filesystem run with chroot as its user:
# web and worker, `project add` on a repository owned by another uid, one job with the scripted model.
#
#   apt-get install -y podman debootstrap && bash scripts/image_try.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/copydesk-image-try}
port=8093 redis_port=6392
mkdir -p "$work" && cd "$work"

if ! podman image exists localhost/python:3.11-slim; then
  debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates bookworm rootfs \
    http://deb.debian.org/debian
  cp /etc/ssl/certs/ca-certificates.crt rootfs/etc/ssl/certs/ca-certificates.crt
  tar -C rootfs -c . | podman import --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV LANG=C.UTF-8' - localhost/python:3.11-slim
fi
podman build --format docker --isolation=chroot --network=host --build-arg PYTHON_IMAGE=localhost/python:3.11-slim \
  -t localhost/copydesk:try "$repo"
echo "image size: $(podman image inspect localhost/copydesk:try --format '{{.Size}}') bytes"

# `podman run` needs a runtime that may set rlimits and cgroups; chroot needs neither.
ctr=$(podman create localhost/copydesk:try)
root=$(podman mount "$ctr")
cleanup() {
  kill "$(cat web.pid)" "$(cat worker.pid)" 2>/dev/null || true
  sleep 2
  umount "$root/repos" "$root/proc" "$root/dev" 2>/dev/null || true
  podman umount "$ctr" >/dev/null && podman rm "$ctr" >/dev/null
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
}
trap cleanup EXIT
rm -rf repos sample && mkdir -p repos "$root/repos"
git init -q -b main sample && echo "# Docs" > sample/index.md
git -C sample add -A && git -C sample -c user.name=a -c user.email=a@b.test commit -qm docs
git clone -q --bare sample repos/docs.git
chown -R 12345:10001 repos/docs.git  # another owner; the image's group may write (below)
mount --bind "$work/repos" "$root/repos" && mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev"
redis-server --port "$redis_port" --save "" --daemonize yes >/dev/null
as_image=(chroot --userspec=10001:10001 "$root" env -i PATH=/opt/copydesk/bin:/usr/bin:/bin HOME=/home/copydesk
          COPYDESK_REDIS_URL="redis://127.0.0.1:$redis_port/0" COPYDESK_DATA_DIR=/data COPYDESK_LOG_FORMAT=json
          COPYDESK_MODEL=scripted:demo COPYDESK_BASE_URL="http://127.0.0.1:$port")
"${as_image[@]}" copydesk project add --repository /repos/docs.git --ref main || echo "refused, as it should be"
chmod -R g+w repos/docs.git && find repos/docs.git -type d -exec chmod g+s {} +
project=$("${as_image[@]}" copydesk project add --repository /repos/docs.git --ref main --json | python3 -c \
  'import json, sys; print(json.load(sys.stdin)["id"])')
key=$("${as_image[@]}" copydesk key create --account local --json | python3 -c \
  'import json, sys; print(json.load(sys.stdin)["key"])')
"${as_image[@]}" copydesk web --host 127.0.0.1 --port "$port" --workers 1 > web.log 2>&1 & echo $! > web.pid
"${as_image[@]}" copydesk worker > worker.log 2>&1 & echo $! > worker.pid
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" && break; sleep 0.2; done
api=(curl -sS -H "Authorization: Bearer $key" -H "Content-Type: application/json")
job=$("${api[@]}" -d '{"prompt": "Add a troubleshooting page"}' "http://127.0.0.1:$port/v2/agent/$project/job" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
for _ in $(seq 150); do
  status=$("${api[@]}" "http://127.0.0.1:$port/v2/agent/$project/job/$job" | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["status"])')
  [ "$status" != active ] && break
  sleep 0.2
done
echo "job $job: $status"
[ "$status" = completed ]
