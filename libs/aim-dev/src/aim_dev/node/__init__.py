"""A real Kubernetes node on this machine: kubelet, kube-scheduler, containerd, runc and a bridge
CNI in private network and mount namespaces, attached to a local control plane (docs/node.md).

:class:`Node` starts and stops one; :func:`teardown` / :func:`teardown_from_state` remove one from
its record (``aimctl down``, or after a crash); :func:`reap_stale` removes those whose owner died.
"""

from aim_dev.node.host import NodeError
from aim_dev.node.node import (
    Node,
    check_requirements,
    reap_stale,
    registered,
    teardown,
    teardown_from_state,
)
from aim_dev.node.node import (
    is_stale as is_stale_record,
)

__all__ = [
    "Node",
    "NodeError",
    "check_requirements",
    "is_stale_record",
    "reap_stale",
    "registered",
    "teardown",
    "teardown_from_state",
]
