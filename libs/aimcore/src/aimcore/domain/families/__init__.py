"""One adapter per AIM kind family, over the parsed model, for both API groups.

Why: the current group (``aim.eai.amd.com``) and the legacy one (``aim.silogen.ai``) spell the
same ideas differently (``modelName``/``aimImageName``, ``gpu``/``gpuSelector``, ``Ready``/
``Available``...), and a reader that looked at the spelling itself in each module meant a new
field was edited in every one of them, out of the type checker's sight. Each family here reads its
kinds' models (:mod:`aimcore.api.crds`, parsed once per resourceVersion by the informer:
:meth:`aimcore.runtime.informer.Informer.decoded`) and answers in one vocabulary; indexers,
mappers and reconcilers all ask it:

- :mod:`.models` — AIMModel/AIMClusterModel, legacy AIMModel/AIMClusterModel and AIMImage/AIMClusterImage;
- :mod:`.templates` — AIMServiceTemplate/AIMClusterServiceTemplate of both groups;
- :mod:`.caches` — AIMTemplateCache and AIMModelCache of both groups;
- :mod:`.llmkube` — LLMKube's ``Model`` (source, file set, hardware and GPU asks);
- :mod:`.runtimeconfigs` — the runtime config that applies to an object, merged and read;
- :mod:`.base` — what every AIM object says (identity, owners, status, conditions).

Each family also answers its kinds, by API group and scope, from the kinds table
(:mod:`aimcore.api.kinds`): ``Model.kind(group, cluster=True)``, ``TemplateCache.kind(group)``,
``Model.kinds_for(template)``; no service names a kind by a string.

The AIMService's adapter is the deployer's (``aim_deployer.service_view``): no other service reads
services.
"""
