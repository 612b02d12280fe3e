"""A template's own cache: with ``caching.enabled``, a namespaced template owns an AIMTemplateCache
named like it (written through :class:`~aimcore.runtime.writes.Children`; a refused one is left out,
the template is usable without it, and the decision says why)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aim_discovery.catalog import TEMPLATE_CONTROLLER
from aimcore.api.kinds import GROUP_AIM
from aimcore.domain.families import caches
from aimcore.domain.families.base import written
from aimcore.domain.families.templates import Template
from aimcore.domain.naming import label_value
from aimcore.runtime import Children, Refusal, Request, child_labels, contains, owner_reference


class TemplateCache:
    """Writes the template's AIMTemplateCache and says it in ``status.resolvedCache``."""

    def __init__(self, children: Children) -> None:
        self.children = children

    async def ensure(
        self,
        request: Request,
        template: Template,
        sources: Sequence[Mapping[str, Any]],
        fields: dict[str, Any],
    ) -> None:
        """``caching.enabled`` on a namespaced template: its AIMTemplateCache, named like it."""
        if not (request.ref.namespaced and template.caching_enabled):
            return
        kind = caches.TemplateCache.kind(request.ref.group)
        spec: dict[str, Any]
        if request.ref.group == GROUP_AIM:
            spec = {"templateName": template.name, "templateScope": "Namespace", "mode": "Shared"}
            if sources:
                spec["modelSources"] = [dict(s) for s in sources]
        else:
            spec = {"templateRef": template.name}
        env = [written(e) for e in template.caching_env]
        if env:
            spec["env"] = env
        if template.pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in template.pull_secrets]
        if template.runtime_config_name:
            spec["runtimeConfigName"] = template.runtime_config_name
        body = {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "metadata": {
                "name": template.name,
                "namespace": template.namespace,
                "labels": {
                    "aim.eai.amd.com/template": label_value(template.name),
                    **child_labels(TEMPLATE_CONTROLLER),
                },
                "ownerReferences": [owner_reference(request.ref, request.obj)],
            },
            "spec": spec,
        }
        existing = request.informer.get(kind, template.namespace, template.name)
        if existing is None or not contains(existing.get("spec"), spec):
            # a refused cache is left out (the template is usable without it): the audit stream
            # says why, and the same body is not sent again
            if self.children.refused_before(kind, body) is not None:
                return
            # not recorded: the template reads its cache (and its uid) back from the cache
            found = await self.children.write(request, kind, body, record=False)
            if isinstance(found, Refusal):
                await request.reporter.decide(
                    request.ref,
                    request.obj,
                    "create-cache-failed",
                    "CacheCreateForbidden" if found.forbidden else "CacheCreateRejected",
                    f"AIMTemplateCache {template.name}: {found.describe()}",
                )
                return
            await request.reporter.decide(
                request.ref,
                request.obj,
                "create-cache",
                "TemplateCacheApplied",
                f"AIMTemplateCache {template.name}",
            )
            existing = request.informer.get(kind, template.namespace, template.name)
        ref: dict[str, Any] = {"name": template.name, "namespace": template.namespace, "kind": kind.kind}
        if existing is not None and existing["metadata"].get("uid"):
            ref["uid"] = existing["metadata"]["uid"]
        fields["resolvedCache"] = ref
