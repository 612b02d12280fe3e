"""``python -m aim_dev.node``: list the nodes on this machine, remove one from its state file, or
remove the stale ones (whose owner process died)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aim_dev.node import NodeError, is_stale_record, reap_stale, registered, teardown_from_state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aim_dev.node", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the registered nodes")
    down = sub.add_parser("down", help="remove the node recorded in a state file (<workdir>/node.json)")
    down.add_argument("state", type=Path)
    down.add_argument("--remove-logs", action="store_true")
    sub.add_parser("reap", help="remove every node whose owner process is gone")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for record in registered():
                state = "stale" if is_stale_record(record) else f"owner {record.get('owner_pid')}"
                print(f"{record['id']}  {record['node_name']}  {record['workdir']}  {state}")
        elif args.command == "down":
            if not teardown_from_state(args.state, keep_logs=not args.remove_logs):
                print(f"no node recorded in {args.state}", file=sys.stderr)
        else:
            for node_id in reap_stale(print):
                print(f"removed {node_id}")
    except NodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
