# syntax=docker/dockerfile:1
# One image per AIM service, each with only that service's code and dependencies (no tooling, no
# test servers, no benchmarks, no CLI):
#
#   docker build --build-arg SERVICE=deployer -t aim-deployer:0.1.0 .
#
# SERVICE is one of watcher, status, deployer, discovery, registry-sync, cache (the cache image also
# carries aim-download and aim-model-inspect, which its download and verify Jobs run: the workspace
# package services/cache-jobs, which the cache service depends on; it is copied into every build
# stage, and installed only where a service depends on it). The base image
# and uv are pinned; the dependency layer is built from the lock file alone, before any source is
# copied, so a source change rebuilds only the last layers.

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG UV_VERSION=0.13.9
ARG SERVICE=watcher
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install "uv==${UV_VERSION}"
WORKDIR /src
# The workspace's manifests only: enough to resolve and install the third-party dependencies.
COPY pyproject.toml uv.lock ./
COPY libs/aimcore/pyproject.toml libs/aimcore/
COPY libs/aim-dev/pyproject.toml libs/aim-dev/
COPY libs/aimctl/pyproject.toml libs/aimctl/
COPY services/watcher/pyproject.toml services/watcher/
COPY services/status/pyproject.toml services/status/
COPY services/deployer/pyproject.toml services/deployer/
COPY services/discovery/pyproject.toml services/discovery/
COPY services/registry-sync/pyproject.toml services/registry-sync/
COPY services/cache/pyproject.toml services/cache/
COPY services/cache-jobs/pyproject.toml services/cache-jobs/
RUN uv sync --frozen --no-dev --no-install-workspace --package "aim-${SERVICE}"
# Then the runtime library and this service's own code, installed as wheels (no links to /src); the
# cache's Job programs are installed only into the cache image (aim-cache depends on them).
COPY libs/aimcore libs/aimcore
COPY services/cache-jobs services/cache-jobs
COPY services/${SERVICE} services/${SERVICE}
RUN uv sync --frozen --no-dev --no-editable --package "aim-${SERVICE}"

FROM ${PYTHON_IMAGE}
ARG SERVICE=watcher
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    AIM_SERVICE=${SERVICE}
WORKDIR /app
# The cache service's model directory (docker-compose.yml mounts a volume here; a new volume takes
# this directory's owner), writable by the service's user on an otherwise read-only root.
RUN mkdir -p /models && chown 65532:65532 /models
# Non-root (the "nonroot" uid of distroless images); the Deployments also run with a read-only root.
USER 65532:65532
CMD ["sh", "-c", "exec aim-${AIM_SERVICE}"]
