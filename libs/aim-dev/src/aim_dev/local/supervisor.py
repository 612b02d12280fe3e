"""The supervisor of a detached embedded stack (``aimctl up --detach``): it runs the six services as
its children, restarts one that exits (with backoff, as a Deployment would) and records each new
PID in ``state.json``; on SIGTERM (``aimctl down``) it stops them and exits. Its children die with
it, so killing it can leave no orphan service behind. On a real node (``aimctl up --node
--detach``) the services are Deployments; it runs the KServe stand-in and the volume provisioner
instead, and owns the node (which is reaped as stale once the supervisor is gone).

``python -m aim_dev.local.supervisor AIM_HOME``
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from aim_dev.local.stack import Stack


def main(argv: list[str]) -> int:
    home = Path(argv[0])
    stop = [False]

    def on_signal(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if json.loads((home / "state.json").read_text()).get("mode") == "node":
        from aim_dev.local.nodestack import NodeStack  # noqa: PLC0415 - node mode only

        node_stack = NodeStack.attach(home)
        try:
            node_stack.supervise(stop)
        finally:
            for proc in node_stack.stand_ins():
                proc.stop()
        return 0
    stack = Stack.attach(home)
    stack.start_services()
    try:
        stack.supervise(stop)
    finally:
        for proc in stack.services.values():
            proc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
