"""The bus roles' Secrets made inside the cluster on a first install, so that ``kubectl apply -k``
of an overlay is the whole install (no ``aimctl bus credentials`` step from a workstation).

``deploy/base`` runs this as the Job ``aim-bus-credentials`` (``python -m
aimcore.runtime.bus_credentials``, in the status service's image) with a service account that may
only *create* Secrets in the operator's namespace. Each role's Secret ``aim-bus-<role>``
(:mod:`aimcore.api.bus.secrets`) is created with a fresh NKey when absent; one that exists is never
read, changed or replaced (the API server answers 409 and it is left as it is), so applying the
install again, or running the Job again, never changes a key. Rotation stays ``aimctl bus
credentials --rotate``'s. The NATS pod and the services mount these Secrets: until the Job has made
them the kubelet holds their pods in ``ContainerCreating`` and starts them as soon as they exist.

Nothing secret is logged: a line per role with its Secret's name and whether it was made or kept.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterable, Sequence

from aimcore.api.bus import auth
from aimcore.api.bus.secrets import DEPLOYED_ROLES, role_secret, secret_name
from aimcore.api.kinds import SECRET
from aimcore.runtime.kube import ApiException, Kube, connect, describe_error
from aimcore.runtime.settings import SettingsError
from aimcore.runtime.settings.process import ProcessSettings, ProxySettings

log = logging.getLogger("aim.bus-credentials")

FIELD_MANAGER = "aim-bus-credentials"


async def ensure_secrets(
    kube: Kube, namespace: str, roles: Iterable[str] = DEPLOYED_ROLES
) -> dict[str, bool]:
    """Create each role's Secret in ``namespace`` when absent; answers, per role, whether it was
    made (``False``: one existed and is left as it was)."""
    made: dict[str, bool] = {}
    for role in roles:
        body = role_secret(role, auth.new_identity(role).seed, None, namespace)
        made[role] = await kube.create_if_absent(SECRET, body, namespace) is not None
        log.info("%s: %s", secret_name(role), "created" if made[role] else "exists, left as it is")
    return made


async def run(process: ProcessSettings, proxy: ProxySettings) -> dict[str, bool]:
    kube = Kube(await connect(process.kubeconfig, proxy), field_manager=FIELD_MANAGER)
    try:
        return await ensure_secrets(kube, process.system_namespace)
    finally:
        await kube.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The Job's entry point: 0 once every role has its Secret, 1 on an API error (the Job's
    backoff runs it again), 2 on a bad setting."""
    del argv
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        process, proxy = ProcessSettings.from_env(), ProxySettings.from_env()
    except SettingsError as exc:
        log.error("%s", exc)
        return 2
    try:
        made = asyncio.run(run(process, proxy))
    except (ApiException, OSError) as exc:
        log.error("making the bus Secrets in %s: %s", process.system_namespace, describe_error(exc))
        return 1
    log.info(
        "the bus Secrets in %s: %d created, %d left as they were",
        process.system_namespace,
        sum(made.values()),
        len(made) - sum(made.values()),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
