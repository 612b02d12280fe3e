#!/usr/bin/env bash
# Every check the project has, from a fresh machine: install what is missing (once per machine),
# then lint, types, CRD and settings-reference drift, and the test suite against real servers.
# Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
uv() { python3 -m uv "$@"; }
uv sync --frozen --quiet
echo "== ruff"; uv run ruff check . && uv run ruff format --check .
echo "== mypy"; uv run mypy libs/*/src services/*/src
echo "== import contracts"; uv run lint-imports --no-cache
echo "== crd drift"; uv run aimctl crds generate --check
echo "== settings reference drift"; uv run aimctl settings docs --check
echo "== cli reference drift"; uv run aimctl cli docs --check
echo "== bus topology table drift"; uv run aimctl bus topology --check
echo "== bus contract drift"; uv run aimctl bus spec --check docs/asyncapi.yaml
echo "== pytest"; uv run pytest "$@"
