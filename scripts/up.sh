#!/usr/bin/env bash
# Bring the whole system up on this machine (local control plane, NATS, every service, the CRDs),
# apply a sample AIMService and show its status, then stay up until Ctrl-C.
# Extra args go to `aimctl up` (e.g. --detach).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
python3 -m uv sync --frozen --quiet
exec python3 -m uv run aimctl up --demo "$@"
