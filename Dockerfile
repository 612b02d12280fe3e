# syntax=docker/dockerfile:1
# One image for every AIM service; the command selects which (aim-watcher, aim-status, aim-deployer,
# aim-discovery, aim-registry-sync, aim-cache).
#
#   docker build -t aim-engine-py:0.1.0 .
#   docker run --rm aim-engine-py:0.1.0 aim-watcher

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install uv
WORKDIR /src
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
# Runtime dependencies only; the workspace packages are installed as wheels (no links to /src).
RUN uv sync --frozen --no-dev --no-editable

FROM ${PYTHON_IMAGE}
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
# Non-root (the "nonroot" uid of distroless images); the Deployments also run with a read-only root.
USER 65532:65532
CMD ["aim-watcher"]
