"""The bus Secrets made inside the cluster (the Job ``aim-bus-credentials`` of deploy/base, running
:mod:`aimcore.runtime.bus_credentials`) against the real API server: every missing role's Secret is
made with a working NKey, one that exists is never changed, a second run changes nothing, nothing
secret reaches the log, and the Job's account may create Secrets in the operator's namespace and
do nothing else."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

import yaml

from aim_dev.local.cluster import ControlPlane
from aimcore.api.bus import auth
from aimcore.api.bus.secrets import ACCEPTED, DEPLOYED_ROLES, NKEY, SEED, role_secret, secret_name
from aimcore.api.kinds import SECRET
from aimcore.runtime import Kube
from aimcore.runtime.bus_credentials import ensure_secrets
from tests import helpers
from tests.cluster.test_deploy import can_user

JOB_MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "base" / "bus-credentials.yaml"
ACCOUNT = "aim-bus-credentials"


def decoded(secret: dict[str, object]) -> dict[str, str]:
    data = secret["data"]
    assert isinstance(data, dict)
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


async def job_program(cp: ControlPlane, namespace: str) -> subprocess.CompletedProcess[str]:
    """``python -m aimcore.runtime.bus_credentials`` as the Job runs it, against ``cp``."""
    env = {**os.environ, "AIM_KUBECONFIG": str(cp.kubeconfig_path), "AIM_SYSTEM_NAMESPACE": namespace}
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "aimcore.runtime.bus_credentials"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60 * helpers.PATIENCE,
        check=False,
    )


async def test_missing_secrets_are_made_and_an_existing_one_is_left_as_it_was(
    kube: Kube, namespace: str
) -> None:
    kept_seed = auth.new_identity("deployer").seed
    await kube.create(SECRET, role_secret("deployer", kept_seed, None, namespace), namespace)
    before = await kube.get(SECRET, namespace, secret_name("deployer"))
    assert before is not None

    made = await ensure_secrets(kube, namespace)

    assert made == {role: role != "deployer" for role in DEPLOYED_ROLES}
    after = await kube.get(SECRET, namespace, secret_name("deployer"))
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert decoded(after)[SEED] == kept_seed
    for role in DEPLOYED_ROLES:
        secret = await kube.get(SECRET, namespace, secret_name(role))
        assert secret is not None, role
        data = decoded(secret)
        assert data[NKEY] == auth.public_key(data[SEED]), role  # the key is the seed's
        assert data[NKEY] in data[ACCEPTED], role  # and NATS accepts it
    seeds = {
        decoded(s)[SEED]
        for s in [after] + [await kube.get(SECRET, namespace, secret_name(r)) for r in DEPLOYED_ROLES]
    }
    assert len(seeds) == len(DEPLOYED_ROLES)  # every role its own key

    assert await ensure_secrets(kube, namespace) == dict.fromkeys(DEPLOYED_ROLES, False)


async def test_the_jobs_program_makes_the_secrets_and_logs_no_secret(
    aim_cluster: ControlPlane, kube: Kube, namespace: str
) -> None:
    run = await job_program(aim_cluster, namespace)
    assert run.returncode == 0, run.stderr
    assert f"{len(DEPLOYED_ROLES)} created, 0 left as they were" in run.stderr
    for role in DEPLOYED_ROLES:
        secret = await kube.get(SECRET, namespace, secret_name(role))
        assert secret is not None, role
        data = decoded(secret)
        assert data[SEED] not in run.stderr + run.stdout
        assert f"{secret_name(role)}: created" in run.stderr
        assert {f["manager"] for f in secret["metadata"]["managedFields"]} == {"aim-bus-credentials"}

    again = await job_program(aim_cluster, namespace)
    assert again.returncode == 0, again.stderr
    assert f"0 created, {len(DEPLOYED_ROLES)} left as they were" in again.stderr


async def test_the_program_says_why_when_the_api_server_refuses(aim_cluster: ControlPlane) -> None:
    """A namespace that does not exist: the API server's answer, exit 1 (the Job's backoff retries)."""
    run = await job_program(aim_cluster, "no-such-ns")
    assert run.returncode == 1, run.stderr
    assert "making the bus Secrets in no-such-ns" in run.stderr
    assert "not found" in run.stderr.lower()


def can_i(
    cp: ControlPlane, account_namespace: str, namespace: str, verb: str, resource: str = "secrets"
) -> bool:
    """Whether the Job's account in ``account_namespace`` may ``verb`` ``resource`` in ``namespace``."""
    return can_user(cp, f"system:serviceaccount:{account_namespace}:{ACCOUNT}", verb, resource, namespace)


async def test_the_jobs_account_may_create_secrets_and_nothing_else(
    aim_cluster: ControlPlane, kube: Kube, namespace: str
) -> None:
    """The Job's account, role and binding as deploy/base has them (the Job itself left out: no
    kubelet runs it here), put in a namespace of the test's own."""
    docs = [d for d in yaml.safe_load_all(JOB_MANIFEST.read_text()) if d and d["kind"] != "Job"]
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
    helpers.kubectl(
        "apply", "-f", "-", stdin=yaml.safe_dump_all(docs), kubeconfig=aim_cluster.kubeconfig_path
    )
    assert can_i(aim_cluster, namespace, namespace, "create")
    for verb in ("get", "list", "watch", "update", "patch", "delete"):
        assert not can_i(aim_cluster, namespace, namespace, verb), verb
    assert not can_i(aim_cluster, namespace, namespace, "create", "configmaps")
    assert not can_i(aim_cluster, namespace, "default", "create")
