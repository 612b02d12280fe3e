"""Automatic template selection: each stage's rejection, the ranking order per criterion, ambiguity,
scope shadowing, legacy spellings (aimImageName, gpuSelector, Available) and every service-level
outcome with its message."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from aim_deployer.selection import (
    Candidate,
    Selection,
    Traits,
    overrides_match,
    rank_key,
    select_template,
    template_traits,
)
from aimcore.api.kinds import by_kind
from tests.helpers import as_overrides

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
NS_TPL = by_kind(AIM, "AIMServiceTemplate")
CL_TPL = by_kind(AIM, "AIMClusterServiceTemplate")
LEGACY_NS_TPL = by_kind(LEGACY, "AIMServiceTemplate")
LEGACY_CL_TPL = by_kind(LEGACY, "AIMClusterServiceTemplate")

ALL_GPUS = ("MI325X", "MI300X", "MI250X", "MI210", "MI355X")


def tpl(
    name: str,
    *,
    cluster: bool = True,
    status: str | None = "Ready",
    type: str | None = "optimized",
    gpu: str | None = "MI300X",
    count: int | None = 1,
    metric: str | None = "latency",
    precision: str | None = "fp8",
    in_profile: bool = True,
) -> Candidate:
    """A current-group template; profile traits in status.profile.metadata (or the spec)."""
    spec: dict[str, Any] = {"modelName": "llama"}
    if gpu or count:
        spec["gpu"] = {k: v for k, v in {"model": gpu, "requests": count}.items() if v}
    traits = {"type": type, "metric": metric, "precision": precision}
    st: dict[str, Any] = {}
    if status is not None:
        st["status"] = status
    if in_profile:
        st["profile"] = {"metadata": {k: v for k, v in traits.items() if v}}
    else:
        spec.update({k: v for k, v in traits.items() if v})
    meta: dict[str, Any] = {"name": name}
    if not cluster:
        meta["namespace"] = "ml"
    return Candidate(CL_TPL if cluster else NS_TPL, {"metadata": meta, "spec": spec, "status": st})


def legacy_tpl(
    name: str,
    *,
    cluster: bool = True,
    status: str = "Available",
    gpu: str | None = "MI300X",
    count: int | None = 1,
    metric: str = "latency",
    precision: str = "fp8",
    type: str | None = "optimized",
) -> Candidate:
    spec: dict[str, Any] = {"aimImageName": "llama", "metric": metric, "precision": precision}
    if gpu or count:
        spec["gpuSelector"] = {k: v for k, v in {"model": gpu, "count": count}.items() if v}
    profile = {"metadata": {"type": type}} if type else {}
    meta: dict[str, Any] = {"name": name}
    if not cluster:
        meta["namespace"] = "ml"
    obj = {"metadata": meta, "spec": spec, "status": {"status": status, "profile": profile}}
    return Candidate(LEGACY_CL_TPL if cluster else LEGACY_NS_TPL, obj)


def select(
    candidates: list[Candidate],
    *,
    overrides: dict[str, Any] | None = None,
    allow_unoptimized: bool = False,
    gpus: tuple[str, ...] = ALL_GPUS,
) -> Selection:
    return select_template(
        candidates, overrides=as_overrides(overrides), allow_unoptimized=allow_unoptimized, cluster_gpus=gpus
    )


def reasons(sel: Selection) -> dict[str, str]:
    return {v.name: v.reason for v in sel.verdicts}


def chosen_name(sel: Selection) -> str | None:
    return sel.chosen.obj["metadata"]["name"] if sel.chosen else None


# --- traits --------------------------------------------------------------------------------------


def test_traits_from_profile_metadata() -> None:
    c = tpl("a", gpu="Instinct-MI325X", count=2, metric="Latency", precision="FP8")
    assert template_traits(c) == Traits("optimized", "latency", "fp8", "MI325X", 2)


def test_traits_fall_back_to_spec_and_default_unoptimized() -> None:
    c = tpl("a", in_profile=False, type=None, metric="throughput", precision="bf16")
    assert template_traits(c) == Traits("unoptimized", "throughput", "bf16", "MI300X", 1)


def test_traits_spec_type_used_without_profile() -> None:
    assert template_traits(tpl("a", in_profile=False, type="preview")).profile_type == "preview"


def test_traits_profile_gpu_and_count_when_spec_has_none() -> None:
    c = tpl("a", gpu=None, count=None)
    c.obj["status"]["profile"]["metadata"].update({"gpu": "mi210", "gpuCount": 4})
    assert template_traits(c).gpu_model == "MI210"
    assert template_traits(c).gpu_count == 4


def test_traits_legacy_spelling() -> None:
    c = legacy_tpl("a", gpu="MI250X", count=8, metric="throughput", precision="int8")
    c.obj["status"]["profile"]["metadata"]["gpu_count"] = 8
    assert template_traits(c) == Traits("optimized", "throughput", "int8", "MI250X", 8)


# --- stage 1: availability ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("Pending", "TemplatePending"),
        ("Progressing", "TemplateProgressing"),
        ("NotAvailable", "TemplateNotAvailable"),
        ("Degraded", "TemplateDegraded"),
        ("Failed", "TemplateFailed"),
        (None, "TemplatePending"),
        ("Available", "TemplatePending"),  # the legacy spelling is not Ready in the current group
    ],
)
def test_not_ready_template_rejected(status: str | None, reason: str) -> None:
    sel = select([tpl("bad", status=status), tpl("good")])
    assert reasons(sel) == {"bad": reason, "good": "BestMatch"}
    assert chosen_name(sel) == "good"


def test_legacy_available_is_ready_and_ready_is_not() -> None:
    sel = select([legacy_tpl("old", status="Available"), legacy_tpl("odd", status="Ready", gpu="MI210")])
    assert chosen_name(sel) == "old"
    assert reasons(sel)["odd"] == "TemplatePending"


def test_none_ready_lists_up_to_three_states() -> None:
    cs = [
        tpl("a", status="Pending"),
        tpl("b", status="Failed"),
        tpl("c", status="NotAvailable"),
        tpl("d", status="Progressing"),
    ]
    sel = select(cs)
    assert (sel.chosen, sel.reason) == (None, "TemplateNotReady")
    assert "a (Pending), b (Failed), c (NotAvailable) and 1 more" in sel.message
    assert [v.reason for v in sel.verdicts] == [
        "TemplatePending",
        "TemplateFailed",
        "TemplateNotAvailable",
        "TemplateProgressing",
    ]


def test_all_failed_is_not_ready_and_the_service_waits() -> None:
    """The original: ``TemplateNotReady``, the service Pending (a template may still recover)."""
    sel = select([tpl("a", status="Failed"), tpl("b", status="Failed")])
    assert sel.reason == "TemplateNotReady"
    assert "all 2 templates failed: a (Failed), b (Failed)" in sel.message


def test_no_candidates_is_not_found() -> None:
    sel = select([])
    assert (sel.chosen, sel.reason, sel.verdicts) == (None, "TemplateNotFound", ())
    assert "no templates" in sel.message


# --- stage 2: optimization ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["preview", "unoptimized", None])
def test_unoptimized_filtered_unless_allowed(kind: str | None) -> None:
    cs = [tpl("fast", gpu="MI210"), tpl("slow", type=kind)]
    sel = select(cs)
    assert reasons(sel) == {"fast": "BestMatch", "slow": "UnoptimizedTemplateFiltered"}
    allowed = select(cs, allow_unoptimized=True)
    # slow (MI300X) would win on GPU, but optimized ranks first
    assert reasons(allowed) == {"fast": "BestMatch", "slow": "LowerPreferenceRank"}


def test_all_unoptimized_outcome() -> None:
    sel = select([tpl("a", type="preview"), tpl("b", type="unoptimized"), tpl("c", status="Pending")])
    assert (sel.chosen, sel.reason) == (None, "UnoptimizedTemplatesFiltered")
    assert sel.message == (
        "2 ready templates are unoptimized or preview and were filtered; "
        "set spec.template.allowUnoptimized: true to use them"
    )
    assert chosen_name(select([tpl("a", type="preview")], allow_unoptimized=True)) == "a"


def test_one_unoptimized_message_is_singular() -> None:
    sel = select([tpl("a", type="preview")])
    assert sel.message.startswith("1 ready template is unoptimized or preview and was filtered")


# --- stage 3: overrides -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "matches"),
    [
        ({"metric": "latency"}, True),
        ({"metric": "throughput"}, False),
        ({"precision": "fp8"}, True),
        ({"precision": "fp16"}, False),
        ({"gpu": {"model": "instinct-mi300x"}}, True),
        ({"gpu": {"model": "MI325X"}}, False),
        ({"gpu": {"requests": 2}}, True),  # template count 2
        ({"gpu": {"requests": 4}}, False),
        ({"gpuSelector": {"model": "MI300X", "count": 2}}, True),
        ({"gpuSelector": {"model": "MI210"}}, False),
        ({"gpuSelector": {"count": 8}}, False),
        ({}, True),
        (None, True),
    ],
)
def test_overrides_match(overrides: dict[str, Any] | None, matches: bool) -> None:
    traits = Traits("optimized", "latency", "fp8", "MI300X", 2)
    assert overrides_match(traits, as_overrides(overrides)) is matches


def test_gpu_overrides_do_not_match_a_template_without_that_gpu() -> None:
    """The original let a CPU template (or one for any GPU) satisfy a GPU override, and the
    service ran without the GPUs asked for; here the override makes a derived template."""
    cpu = Traits("optimized", "latency", "fp8", None, 0)
    assert not overrides_match(cpu, as_overrides({"gpu": {"model": "MI300X", "requests": 4}}))
    assert not overrides_match(cpu, as_overrides({"gpu": {"requests": 1}}))
    assert not overrides_match(cpu, as_overrides({"gpuSelector": {"model": "MI300X"}}))
    any_gpu = Traits("optimized", "latency", "fp8", None, 2)
    assert not overrides_match(any_gpu, as_overrides({"gpu": {"model": "MI300X"}}))
    assert overrides_match(any_gpu, as_overrides({"gpu": {"requests": 2}}))
    assert overrides_match(cpu, as_overrides({"metric": "latency"}))
    assert not overrides_match(Traits("optimized", None, None, None, 0), as_overrides({"metric": "latency"}))


def test_gpu_override_mismatch_says_none() -> None:
    sel = select([tpl("cpu", gpu=None, count=0)], overrides={"gpu": {"model": "MI300X", "requests": 1}})
    assert reasons(sel) == {"cpu": "ServiceOverridesNotMatched"}
    assert "GPU none is not MI300X" in sel.verdicts[0].message
    assert "GPU count 0 is not 1" in sel.verdicts[0].message


def test_selection_applies_a_gpu_resource_override() -> None:
    sel = select([tpl("a")], overrides={"gpu": {"resourceName": "amd.com/gpu-partition"}})
    assert reasons(sel) == {"a": "ServiceOverridesNotMatched"}
    assert "GPU resource amd.com/gpu is not amd.com/gpu-partition" in sel.verdicts[0].message
    assert "GPU resource amd.com/gpu-partition" in sel.message


def test_overrides_stage_rejects_and_picks_matching() -> None:
    cs = [tpl("lat"), tpl("thr", metric="throughput")]
    sel = select(cs, overrides={"metric": "throughput"})
    assert reasons(sel) == {"lat": "ServiceOverridesNotMatched", "thr": "BestMatch"}
    assert "metric latency is not throughput" in sel.verdicts[0].message


def test_overrides_nothing_matches_outcome() -> None:
    cs = [tpl("a"), tpl("b", precision="fp16"), tpl("u", type="preview", precision="bf16")]
    sel = select(cs, overrides={"precision": "bf16", "gpu": {"model": "MI300X", "requests": 2}})
    assert (sel.chosen, sel.reason) == (None, "ServiceOverridesNotMatched")
    assert "precision bf16, GPU 2 x MI300X" in sel.message
    assert "a (optimized, MI300X, latency, fp8)" in sel.message
    # the filtered preview template would have matched: the message says so
    assert "1 ready template is unoptimized or preview" in sel.message
    assert reasons(sel)["u"] == "UnoptimizedTemplateFiltered"


def test_legacy_overrides_against_legacy_templates() -> None:
    cs = [legacy_tpl("one", count=1), legacy_tpl("two", count=2, gpu="MI210")]
    sel = select(cs, overrides={"gpuSelector": {"count": 2}})
    assert chosen_name(sel) == "two"
    assert reasons(sel)["one"] == "ServiceOverridesNotMatched"


# --- stage 4: GPU presence --------------------------------------------------------------------------


def test_gpu_not_in_cluster_rejected() -> None:
    cs = [tpl("big", gpu="MI325X"), tpl("small", gpu="MI210"), tpl("cpu", gpu=None, count=None)]
    sel = select(cs, gpus=("MI210",))
    assert reasons(sel) == {
        "big": "RequiredGPUNotInCluster",
        "small": "BestMatch",
        "cpu": "LowerPreferenceRank",
    }
    assert "needs GPU MI325X; GPUs in the cluster: MI210" in sel.verdicts[0].message


def test_cluster_gpu_names_are_normalized() -> None:
    assert chosen_name(select([tpl("a", gpu="MI300X")], gpus=("Instinct-MI300X",))) == "a"


@pytest.mark.parametrize(
    ("gpus", "says"),
    [((), "there are no AMD GPUs in the cluster"), (("MI210",), "the cluster has MI210")],
)
def test_no_gpu_outcome(gpus: tuple[str, ...], says: str) -> None:
    sel = select([tpl("a", gpu="MI300X"), tpl("b", gpu="MI325X")], gpus=gpus)
    assert (sel.chosen, sel.reason) == (None, "RequiredGPUNotInCluster")
    assert "need GPU MI300X or MI325X" in sel.message
    assert says in sel.message


def test_template_without_gpu_model_fits_any_cluster() -> None:
    assert chosen_name(select([tpl("a", gpu=None, count=2)], gpus=())) == "a"


# --- stage 5: scope ---------------------------------------------------------------------------------


def test_namespaced_shadows_cluster_even_when_cluster_ranks_better() -> None:
    cs = [tpl("cl", gpu="MI325X"), tpl("ns", cluster=False, gpu="MI210")]
    sel = select(cs)
    assert reasons(sel) == {"cl": "ClusterScopeShadowed", "ns": "BestMatch"}
    assert sel.message.startswith("selected AIMServiceTemplate ns")


def test_cluster_kept_when_namespaced_filtered_out() -> None:
    cs = [tpl("cl"), tpl("ns", cluster=False, status="Pending")]
    sel = select(cs)
    assert reasons(sel) == {"cl": "BestMatch", "ns": "TemplatePending"}


def test_legacy_scope_shadowing() -> None:
    cs = [legacy_tpl("cl", gpu="MI325X"), legacy_tpl("ns", cluster=False, gpu="MI210")]
    sel = select(cs)
    assert reasons(sel) == {"cl": "ClusterScopeShadowed", "ns": "BestMatch"}


# --- stage 6: ranking -------------------------------------------------------------------------------

RANKINGS: list[tuple[str, list[dict[str, Any]], str]] = [
    (
        "type",
        [{"type": "optimized"}, {"type": "preview"}, {"type": "unoptimized"}, {"type": "weird"}],
        "profile type",
    ),
    (
        "gpu",
        [{"gpu": "MI325X"}, {"gpu": "MI300X"}, {"gpu": "MI250X"}, {"gpu": "MI210"}, {"gpu": "MI355X"}],
        "GPU",
    ),
    ("metric", [{"metric": "latency"}, {"metric": "throughput"}, {"metric": None}], "metric"),
    (
        "precision",
        [{"precision": p} for p in ("fp4", "int4", "fp8", "int8", "fp16", "bf16", "fp32", "auto")],
        "precision",
    ),
]


@pytest.mark.parametrize(("label", "variants", "criterion"), RANKINGS, ids=[r[0] for r in RANKINGS])
def test_ranking_order(label: str, variants: list[dict[str, Any]], criterion: str) -> None:
    cs = [tpl(f"t{i}", **v) for i, v in enumerate(variants)]
    keys = [rank_key(template_traits(c)) for c in cs]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    for better, worse in itertools.pairwise(cs):
        sel = select([worse, better], allow_unoptimized=True)
        assert chosen_name(sel) == better.obj["metadata"]["name"]
        assert sel.verdicts[0].reason == "LowerPreferenceRank"
        assert sel.verdicts[0].message.startswith(criterion + " ")


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("gpu_model", [None, "MI355X", "MI100"]),
        ("metric", [None, "other"]),
        ("precision", [None, "auto", "fp64"]),
    ],
)
def test_unknown_and_missing_rank_last_together(field: str, values: list[str | None]) -> None:
    base = Traits("optimized", None, None, None, 0)
    changes: list[dict[str, Any]] = [{field: v} for v in values]
    keys = {rank_key(dataclasses.replace(base, **change)) for change in changes}
    assert len(keys) == 1


def test_auto_and_missing_precision_tie() -> None:
    sel = select([tpl("auto", precision="auto"), tpl("none", precision=None)])
    assert sel.reason == "TemplateSelectionAmbiguous"


def test_criteria_are_lexicographic() -> None:
    # a better GPU outweighs a better precision; a better type outweighs everything
    a = tpl("a", gpu="MI325X", precision="fp32")
    b = tpl("b", gpu="MI210", precision="fp4")
    c = tpl("c", type="preview", gpu="MI325X", metric="latency", precision="fp4")
    sel = select([b, c, a], allow_unoptimized=True)
    assert chosen_name(sel) == "a"
    assert reasons(sel) == {"a": "BestMatch", "b": "LowerPreferenceRank", "c": "LowerPreferenceRank"}
    assert sel.verdicts[0].message == "GPU MI210 ranks after MI325X (best: a)"
    assert sel.verdicts[1].message == "profile type preview ranks after optimized (best: a)"


def test_lower_rank_message_names_precision() -> None:
    sel = select([tpl("f16", precision="fp16"), tpl("f8")])
    assert sel.verdicts[0].message == "precision fp16 ranks after fp8 (best: f8)"


# --- ambiguity and the selected message ---------------------------------------------------------------


def test_tie_is_ambiguous() -> None:
    cs = [tpl("b"), tpl("a"), tpl("worse", precision="fp16")]
    sel = select(cs)
    assert (sel.chosen, sel.reason) == (None, "TemplateSelectionAmbiguous")
    assert reasons(sel) == {"a": "Ambiguous", "b": "Ambiguous", "worse": "LowerPreferenceRank"}
    assert "AIMClusterServiceTemplate a, AIMClusterServiceTemplate b" in sel.message
    assert "spec.template.name" in sel.message
    assert sel.verdicts[0].message.startswith("ranks the same as a")


def test_tie_between_scopes_is_broken_by_shadowing() -> None:
    sel = select([tpl("same"), tpl("same", cluster=False)])
    assert sel.chosen is not None
    assert sel.chosen.ref == NS_TPL
    assert [v.reason for v in sel.verdicts] == ["ClusterScopeShadowed", "BestMatch"]
    assert [v.namespace for v in sel.verdicts] == [None, "ml"]
    assert [v.kind for v in sel.verdicts] == ["AIMClusterServiceTemplate", "AIMServiceTemplate"]


def test_selected_message() -> None:
    cs = [
        tpl("llama-mi300x-lat-fp8"),
        tpl("llama-mi300x-lat-fp16", precision="fp16"),
        tpl("p", status="Pending"),
        tpl("u", type="unoptimized"),
    ]
    sel = select(cs)
    assert sel.reason == "TemplateSelected"
    assert sel.message == (
        "selected AIMClusterServiceTemplate llama-mi300x-lat-fp8 (optimized, MI300X, latency, fp8) "
        "from 4 candidates: ranked best of 2 eligible"
    )
    assert select([tpl("x")]).message.endswith("from 1 candidate: the only eligible one")


def test_legacy_group_end_to_end() -> None:
    cs = [legacy_tpl("l1", gpu="MI300X"), legacy_tpl("l2", gpu="MI325X"), legacy_tpl("l3", type=None)]
    sel = select(cs)
    assert chosen_name(sel) == "l2"
    assert reasons(sel) == {
        "l1": "LowerPreferenceRank",
        "l2": "BestMatch",
        "l3": "UnoptimizedTemplateFiltered",
    }


# --- determinism ------------------------------------------------------------------------------------


def test_outcome_independent_of_candidate_order() -> None:
    cs = [
        tpl("a", precision="fp16"),
        tpl("b"),
        tpl("c", gpu="MI210"),
        tpl("d", status="Degraded"),
        tpl("e", cluster=False, gpu="MI250X"),
        tpl("f", cluster=False, gpu="MI250X", metric="throughput"),
    ]
    results = set()
    for perm in itertools.permutations(cs):
        sel = select(list(perm))
        results.add((chosen_name(sel), sel.reason, sel.message, frozenset(reasons(sel).items())))
        assert [v.name for v in sel.verdicts] == [c.obj["metadata"]["name"] for c in perm]
    assert len(results) == 1
    assert next(iter(results))[0] == "e"


def test_ambiguous_message_independent_of_order() -> None:
    cs = [tpl("z"), tpl("y"), tpl("x")]
    messages = {select(list(p)).message for p in itertools.permutations(cs)}
    assert len(messages) == 1


def test_the_outcome_is_a_golden_value() -> None:
    """The same candidates give this outcome in every process (a restarted deployer selects and
    says the same)."""
    sel = select([tpl("a"), tpl("b", gpu="MI210")])
    assert (chosen_name(sel), sel.reason, sel.message) == (
        "a",
        "TemplateSelected",
        "selected AIMClusterServiceTemplate a (optimized, MI300X, latency, fp8) from 2 candidates: "
        "ranked best of 2 eligible",
    )
    assert [(v.name, v.reason, v.message) for v in sel.verdicts] == [
        ("a", "BestMatch", "best match (optimized, MI300X, latency, fp8)"),
        ("b", "LowerPreferenceRank", "GPU MI210 ranks after MI300X (best: a)"),
    ]
