"""GPU inventory from Node dicts and template GPU checks: labels (plain, beta, count-encoded, family), VRAM,
counts, model-name normalisation, quantities, availability reasons, node affinity, summaries and the Node
fingerprint."""

from __future__ import annotations

from typing import Any

import pytest

from aimcore.domain.gpu import (
    DEVICE_MODELS,
    MODEL_VRAM,
    REASON_GPU_AVAILABLE,
    REASON_GPU_NOT_AVAILABLE,
    REASON_NO_GPU_REQUIRED,
    REASON_VRAM_NOT_AVAILABLE,
    GPUCheck,
    Inventory,
    NodeGPU,
    check_gpu,
    device_ids_for,
    gpu_fingerprint,
    hardware_summary,
    inventory,
    node_gpus,
    normalize_model,
    parse_quantity,
    parse_vram,
)

Node = dict[str, Any]
G = 10**9
GI = 2**30


def node(
    name: str,
    labels: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
    capacity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocatable is not None:
        status["allocatable"] = allocatable
    if capacity is not None:
        status["capacity"] = capacity
    return {"metadata": {"name": name, "labels": labels or {}}, "status": status}


def gpu_node(
    name: str, device_id: str, count: int = 8, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = {"amd.com/gpu.device-id": device_id, **(extra or {})}
    return node(name, labels, allocatable={"amd.com/gpu": str(count)})


def ids_affinity(*ids: str) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "amd.com/gpu.device-id", "operator": "In", "values": list(ids)}
                    ]
                }
            ]
        }
    }


def terms(check: GPUCheck) -> list[dict[str, Any]]:
    assert check.node_affinity is not None
    result: list[dict[str, Any]] = check.node_affinity["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    return result


MI300X_IDS = ["74a1", "74a9", "74b5", "74bd"]


# --- tables --------------------------------------------------------------------------------------------


def test_device_table_ids_are_lower_case_hex_and_every_model_has_vram() -> None:
    for device_id, model in DEVICE_MODELS.items():
        assert device_id == device_id.lower() and len(device_id) == 4 and int(device_id, 16) >= 0
        assert model in MODEL_VRAM, model
        assert normalize_model(model) == model


@pytest.mark.parametrize(
    ("model", "ids"),
    [
        ("MI100", ["738c", "738e"]),
        ("MI250X", ["7408", "740c"]),
        ("MI210", ["740f", "7410"]),
        ("MI300A", ["74a0"]),
        ("MI300X", MI300X_IDS),
        ("MI308X", ["74a2", "74a8", "74b6"]),
        ("MI325X", ["74a5", "74b9"]),
        ("MI350X", ["75a0", "75b0"]),
        ("MI355X", ["75a3", "75b3"]),
        ("V710", ["7461"]),
        ("W7900", ["7448"]),
        ("W7800", ["745e"]),
        ("W6900X", ["73a2"]),
        ("W6800", ["73a3"]),
        ("W6800X", ["73ab"]),
        ("V620", ["73a1"]),
        ("RX9070", ["7550"]),
        ("RX7900", ["744c"]),
        ("RX6900", ["73af"]),
        ("RX6800", ["73bf"]),
        ("instinct_mi300x", MI300X_IDS),
        ("AMD-ABCD", ["abcd"]),
        ("H100", []),
    ],
)
def test_device_ids_for(model: str, ids: list[str]) -> None:
    assert device_ids_for(model) == ids


def test_device_ids_for_adds_ids_seen_on_nodes_only_for_that_model() -> None:
    inv = inventory([gpu_node("a", "beef"), gpu_node("b", "74a1"), gpu_node("c", "740f")])
    assert device_ids_for("AMD-BEEF", inv) == ["beef"]
    assert device_ids_for("MI300X", inv) == MI300X_IDS
    assert device_ids_for("MI210", inv) == ["740f", "7410"]


# --- quantities ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (8, 8),
        (0, 0),
        ("8", 8),
        (" 8 ", 8),
        ("0", 0),
        ("1Ki", 1024),
        ("1Mi", 2**20),
        ("192Gi", 192 * GI),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1k", 1000),
        ("2M", 2 * 10**6),
        ("192G", 192 * G),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1.5Gi", 1610612736),
        ("1.5", 1),
        ("0.5G", 500_000_000),
        (".5k", 500),
        ("1500m", 1),
        ("999m", 0),
        ("1e3", 1000),
        ("1E3", 1000),
        ("5e-1", 0),
        ("+2", 2),
        ("-1500m", -2),
    ],
)
def test_parse_quantity(value: str | int, expected: int) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "value", ["", "abc", "192GB", "1.5.2", "G", "1 Gi", "1gi", "1e", "0x10", "1e999", True, 1.5, None]
)
def test_parse_quantity_rejects_garbage(value: Any) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("192G", 192 * G),
        ("191G", 191 * G),
        ("192GB", 192 * G),
        ("192gb", 192 * G),
        ("192 GB", 192 * G),
        ("192Gi", 192 * GI),
        ("192GiB", 192 * GI),
        ("64G", 64 * G),
        ("1.5T", 1500 * G),
        ("196608", 196608 * 2**20),
        ("512B", 512),
        ("16384M", 16384 * 10**6),
        ("garbage", None),
        ("", None),
        ("G", None),
        ("12i", None),
    ],
)
def test_parse_vram(text: str, expected: int | None) -> None:
    assert parse_vram(text) == expected


# --- model names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MI300X", "MI300X"),
        ("mi300x", "MI300X"),
        ("Instinct-MI325X", "MI325X"),
        ("amd_mi300x", "MI300X"),
        ("AMD Instinct MI300X OAM", "MI300X"),
        ("AMD_Instinct_MI300A", "MI300A"),
        ("amd/mi210", "MI210"),
        ("vendor:MI250X", "MI250X"),
        ("MI300X-HF", "MI300X"),
        ("Radeon Pro W7900", "W7900"),
        ("AMD_Radeon_PRO_V710", "V710"),
        ("radeon-pro-w6800x", "W6800X"),
        ("Radeon RX 7900 XTX", "RX7900"),
        ("RX7900XTX", "RX7900"),
        ("rx-9070-xt", "RX9070"),
        ("RX9070", "RX9070"),
        ("AMD-ABCD", "AMD-ABCD"),
        ("AMD-6860", "AMD-6860"),
        ("ai", "AI"),
        ("some_gpu", "SOME-GPU"),
        ("  mystery  ", "MYSTERY"),
        ("", ""),
    ],
)
def test_normalize_model(text: str, expected: str) -> None:
    assert normalize_model(text) == expected


# --- nodes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "model", "ids", "families"),
    [
        ({"amd.com/gpu.device-id": "74a1"}, "MI300X", {"74a1"}, set()),
        ({"amd.com/gpu.device-id": "0x74A5"}, "MI325X", {"74a5"}, set()),
        ({"beta.amd.com/gpu.device-id": "740f"}, "MI210", {"740f"}, set()),
        ({"amd.com/gpu.device-id.75a3": "8"}, "MI355X", {"75a3"}, set()),
        ({"beta.amd.com/gpu.device-id.7461": "1"}, "V710", {"7461"}, set()),
        ({"amd.com/gpu.device-id": "beef"}, "AMD-BEEF", {"beef"}, set()),
        ({"amd.com/gpu.family": "Instinct-MI300X"}, "MI300X", set(), {"Instinct-MI300X"}),
        ({"beta.amd.com/gpu.family": "MI210"}, "MI210", set(), {"MI210"}),
        ({"amd.com/gpu.family.MI325X": "8"}, "MI325X", set(), {"MI325X"}),
        ({"beta.amd.com/gpu.family.MI250X": "4"}, "MI250X", set(), {"MI250X"}),
        # precedence: amd.com id, then beta id, then count-encoded ids, then families
        (
            {"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.device-id": "740f"},
            "MI300X",
            {"74a1", "740f"},
            set(),
        ),
        (
            {"beta.amd.com/gpu.device-id": "740f", "amd.com/gpu.device-id.74a1": "8"},
            "MI210",
            {"74a1", "740f"},
            set(),
        ),
        (
            {"amd.com/gpu.device-id.74a1": "8", "beta.amd.com/gpu.device-id.740f": "8"},
            "MI300X",
            {"74a1", "740f"},
            set(),
        ),
        ({"amd.com/gpu.device-id": "74a1", "amd.com/gpu.family": "AI"}, "MI300X", {"74a1"}, {"AI"}),
        ({"amd.com/gpu.family": "AI"}, "AI", set(), {"AI"}),
    ],
)
def test_node_model(labels: dict[str, str], model: str, ids: set[str], families: set[str]) -> None:
    gpu = node_gpus(node("n1", labels))
    assert gpu is not None
    assert (gpu.name, gpu.model, set(gpu.device_ids), set(gpu.families)) == ("n1", model, ids, families)


@pytest.mark.parametrize(
    "doc",
    [
        node("cpu", {"kubernetes.io/hostname": "cpu"}),
        node("res-only", {}, allocatable={"amd.com/gpu": "8"}),
        node("empty-label", {"amd.com/gpu.device-id": ""}),
        {"metadata": {"name": "bare"}},
        {},
    ],
)
def test_node_without_gpu_labels(doc: dict[str, Any]) -> None:
    assert node_gpus(doc) is None


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "191G"}, 191 * G),
        ({"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.vram": "192Gi"}, 192 * GI),
        (
            {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "100GB", "beta.amd.com/gpu.vram": "1G"},
            100 * G,
        ),
        ({"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.vram.191G": "8"}, 191 * G),
        ({"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "196608"}, 196608 * 2**20),
        ({"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "lots"}, 192 * G),
        ({"amd.com/gpu.device-id": "74a1"}, 192 * G),
        ({"amd.com/gpu.device-id": "75b3"}, 288 * G),
        ({"amd.com/gpu.device-id": "7448"}, 48 * G),
        ({"amd.com/gpu.device-id": "7461"}, 28 * G),
        ({"amd.com/gpu.family": "MI210"}, 64 * G),
        ({"amd.com/gpu.device-id": "beef"}, None),
    ],
)
def test_node_vram(labels: dict[str, str], expected: int | None) -> None:
    gpu = node_gpus(node("n", labels))
    assert gpu is not None and gpu.vram == expected


@pytest.mark.parametrize(
    ("labels", "allocatable", "capacity", "expected"),
    [
        ({"amd.com/gpu.device-id.74a1": "8"}, {"amd.com/gpu": "4"}, None, 8),
        ({"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.device-id.74a1": "8"}, None, None, 8),
        # the same id under both prefixes counts once; ids of the same model add up
        ({"amd.com/gpu.device-id.74a1": "4", "beta.amd.com/gpu.device-id.74a1": "4"}, None, None, 4),
        ({"amd.com/gpu.device-id.74a1": "4", "amd.com/gpu.device-id.74b5": "2"}, None, None, 6),
        # ids of another model do not count
        ({"amd.com/gpu.device-id.74a1": "4", "amd.com/gpu.device-id.75a3": "2"}, None, None, 4),
        ({"amd.com/gpu.family.MI210": "2"}, {"amd.com/gpu": "8"}, None, 2),
        ({"amd.com/gpu.device-id.74a1": "x"}, {"amd.com/gpu": "3"}, None, 3),
        ({"amd.com/gpu.device-id": "74a1"}, {"amd.com/gpu": "8"}, {"amd.com/gpu": "16"}, 8),
        ({"amd.com/gpu.device-id": "74a1"}, {"amd.com/gpu": 2}, None, 2),
        ({"amd.com/gpu.device-id": "74a1"}, {"amd.com/gpu": "0"}, {"amd.com/gpu": "8"}, 0),
        ({"amd.com/gpu.device-id": "74a1"}, {"cpu": "4"}, {"amd.com/gpu": "8"}, 8),
        ({"amd.com/gpu.device-id": "74a1"}, {"amd.com/gpu": "bad"}, {"amd.com/gpu": "8"}, 8),
        # nothing says how many: unknown, not 1 (issue 18 item 7)
        ({"amd.com/gpu.device-id": "74a1"}, None, None, None),
        ({"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "192G"}, None, None, None),
        ({"amd.com/gpu.family": "MI300X"}, None, None, None),
        ({"amd.com/gpu.device-id.74a1": "x"}, None, None, None),
    ],
)
def test_node_count(
    labels: dict[str, str],
    allocatable: dict[str, Any] | None,
    capacity: dict[str, Any] | None,
    expected: int | None,
) -> None:
    gpu = node_gpus(node("n", labels, allocatable, capacity))
    assert gpu is not None and gpu.count == expected


def test_inventory_orders_nodes_and_groups_models() -> None:
    inv = inventory(
        [
            gpu_node("z", "74a1"),
            node("cpu"),
            gpu_node("b", "740f", count=2),
            gpu_node("a", "7410", count=4),
        ]
    )
    assert [n.name for n in inv.nodes] == ["a", "b", "z"]
    models = inv.models()
    assert list(models) == ["MI210", "MI300X"]
    assert [n.name for n in models["MI210"]] == ["a", "b"]
    assert inv.describe() == "MI210 (2 nodes), MI300X (1 node)"
    assert Inventory().describe() == "no AMD GPU in the cluster"
    assert inventory([]) == Inventory(())


def test_node_gpu_example_from_the_brief() -> None:
    doc = {
        "metadata": {"name": "n1", "labels": {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "192G"}},
        "status": {"allocatable": {"amd.com/gpu": "8"}},
    }
    assert node_gpus(doc) == NodeGPU("n1", "MI300X", frozenset({"74a1"}), frozenset(), 192 * G, 8)


# --- checks --------------------------------------------------------------------------------------------

CLUSTER = inventory(
    [
        gpu_node("mi300-a", "74a1", 8, {"amd.com/gpu.vram": "192G"}),
        gpu_node("mi300-b", "74b5", 8, {"amd.com/gpu.vram": "191G"}),
        gpu_node("mi210-a", "740f", 2),
        gpu_node("mi210-b", "7410", 4),
        gpu_node("odd", "beef", 1),
        node("cpu"),
    ]
)


@pytest.mark.parametrize(
    ("model", "requests", "min_vram"),
    [(None, None, None), (None, 0, None), ("", 0, None), ("  ", None, None), (None, 0, "64G")],
)
def test_cpu_only_template(model: str | None, requests: int | None, min_vram: str | None) -> None:
    check = check_gpu(model=model, requests=requests, min_vram=min_vram, inventory=CLUSTER)
    assert check == GPUCheck(False, True, REASON_NO_GPU_REQUIRED, check.message, None, None)
    assert check.message


@pytest.mark.parametrize(
    ("model", "requests", "expected", "message"),
    [
        ("MI300X", 8, (True, REASON_GPU_AVAILABLE, "MI300X"), "GPU MI300X is available on 2 nodes"),
        ("instinct_mi300x", 1, (True, REASON_GPU_AVAILABLE, "MI300X"), "(up to 8 per node)"),
        ("MI300X", 0, (True, REASON_GPU_AVAILABLE, "MI300X"), "2 nodes"),
        ("MI300X", None, (True, REASON_GPU_AVAILABLE, "MI300X"), "2 nodes"),
        ("MI210", 4, (True, REASON_GPU_AVAILABLE, "MI210"), "2 nodes (up to 4 per node)"),
        ("MI210", 8, (False, REASON_GPU_NOT_AVAILABLE, "MI210"), "at most 4 per node; 8 requested"),
        ("MI300X", 16, (False, REASON_GPU_NOT_AVAILABLE, "MI300X"), "at most 8 per node; 16 requested"),
        ("AMD-BEEF", 1, (True, REASON_GPU_AVAILABLE, "AMD-BEEF"), "1 node"),
        (
            "MI325X",
            1,
            (False, REASON_GPU_NOT_AVAILABLE, "MI325X"),
            "No node has GPU MI325X; available: AMD-BEEF (1 node), MI210 (2 nodes), MI300X (2 nodes)",
        ),
    ],
)
def test_check_model(model: str, requests: int | None, expected: tuple[bool, str, str], message: str) -> None:
    check = check_gpu(model=model, requests=requests, min_vram=None, inventory=CLUSTER)
    assert check.required
    assert (check.available, check.reason, check.model) == expected
    assert message in check.message


def test_model_affinity_has_every_table_id_and_is_kept_when_not_available() -> None:
    available = check_gpu(model="MI300X", requests=8, min_vram=None, inventory=CLUSTER)
    assert available.node_affinity == ids_affinity(*MI300X_IDS)
    missing = check_gpu(model="MI325X", requests=1, min_vram=None, inventory=CLUSTER)
    assert not missing.available and missing.node_affinity == ids_affinity("74a5", "74b9")
    unknown = check_gpu(model="AMD-BEEF", requests=1, min_vram=None, inventory=CLUSTER)
    assert unknown.node_affinity == ids_affinity("beef")


def test_model_in_empty_cluster() -> None:
    check = check_gpu(model="MI300X", requests=1, min_vram=None, inventory=Inventory())
    assert not check.available and check.reason == REASON_GPU_NOT_AVAILABLE
    assert check.message == "No node has GPU MI300X; no AMD GPU in the cluster"


def test_unknown_model_name_without_ids_has_no_affinity() -> None:
    check = check_gpu(model="H100", requests=1, min_vram=None, inventory=CLUSTER)
    assert (check.available, check.model, check.node_affinity) == (False, "H100", None)


def test_model_ignores_min_vram() -> None:
    check = check_gpu(model="MI210", requests=1, min_vram="1T", inventory=CLUSTER)
    assert check.available and check.reason == REASON_GPU_AVAILABLE


def test_family_only_node_adds_a_family_term() -> None:
    inv = inventory(
        [
            gpu_node("ids", "74a1"),
            node("fam", {"amd.com/gpu.family": "Instinct-MI300X"}, allocatable={"amd.com/gpu": "8"}),
            node("fam2", {"beta.amd.com/gpu.family.MI300X": "8"}),
            node("other", {"amd.com/gpu.family": "MI210"}),
        ]
    )
    check = check_gpu(model="MI300X", requests=8, min_vram=None, inventory=inv)
    assert check.available and "3 nodes" in check.message
    assert terms(check) == [
        {"matchExpressions": [{"key": "amd.com/gpu.device-id", "operator": "In", "values": MI300X_IDS}]},
        {
            "matchExpressions": [
                {"key": "amd.com/gpu.family", "operator": "In", "values": ["Instinct-MI300X", "MI300X"]}
            ]
        },
    ]


def test_family_labels_of_nodes_with_ids_are_not_used() -> None:
    inv = inventory([gpu_node("n", "74a1", extra={"amd.com/gpu.family": "AI"})])
    check = check_gpu(model="MI300X", requests=1, min_vram=None, inventory=inv)
    assert (
        terms(check)
        == ids_affinity(*MI300X_IDS)["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    )


@pytest.mark.parametrize(
    ("requests", "min_vram", "expected", "ids"),
    [
        # 191G node: MI300X label is below 192G; the other MI300X node is 192G
        (8, "192G", (True, REASON_GPU_AVAILABLE, "MI300X"), MI300X_IDS),
        (1, "60G", (True, REASON_GPU_AVAILABLE, "MI210"), ["740f", "7410", *MI300X_IDS]),
        (4, "60G", (True, REASON_GPU_AVAILABLE, "MI210"), ["740f", "7410", *MI300X_IDS]),
        (8, "60G", (True, REASON_GPU_AVAILABLE, "MI300X"), MI300X_IDS),
        (1, 64 * G, (True, REASON_GPU_AVAILABLE, "MI210"), ["740f", "7410", *MI300X_IDS]),
        (1, "64GB", (True, REASON_GPU_AVAILABLE, "MI210"), ["740f", "7410", *MI300X_IDS]),
        (1, "178Gi", (True, REASON_GPU_AVAILABLE, "MI300X"), MI300X_IDS),  # 191.1G: only the 192G node
        (1, "179Gi", (False, REASON_VRAM_NOT_AVAILABLE, None), None),  # 192.2G
        (16, "60G", (False, REASON_GPU_NOT_AVAILABLE, None), None),
        (1, "193G", (False, REASON_VRAM_NOT_AVAILABLE, None), None),
        (1, "256Gi", (False, REASON_VRAM_NOT_AVAILABLE, None), None),
    ],
)
def test_check_min_vram(
    requests: int, min_vram: str | int, expected: tuple[bool, str, str | None], ids: list[str] | None
) -> None:
    check = check_gpu(model=None, requests=requests, min_vram=min_vram, inventory=CLUSTER)
    assert check.required
    assert (check.available, check.reason, check.model) == expected
    assert check.node_affinity == (None if ids is None else ids_affinity(*sorted(ids)))


def test_min_vram_messages() -> None:
    fits = check_gpu(model=None, requests=1, min_vram="192G", inventory=CLUSTER)
    assert fits.message == "GPUs with at least 192G VRAM are available on 1 node: MI300X (1 node)"
    missing = check_gpu(model=None, requests=1, min_vram="1T", inventory=CLUSTER)
    assert missing.message == (
        "No GPU in the cluster has at least 1T VRAM; available: AMD-BEEF unknown VRAM (1 node), "
        "MI210 64G (2 nodes), MI300X 192G (2 nodes)"
    )
    empty = check_gpu(model=None, requests=1, min_vram="1G", inventory=Inventory())
    assert empty.reason == REASON_VRAM_NOT_AVAILABLE
    assert empty.message == "No GPU in the cluster has at least 1G VRAM; no AMD GPU in the cluster"
    few = check_gpu(model=None, requests=16, min_vram="60G", inventory=CLUSTER)
    assert few.message == "GPUs with at least 60G VRAM are on 4 nodes but at most 8 per node; 16 requested"


def test_min_vram_family_only_node() -> None:
    inv = inventory([node("fam", {"amd.com/gpu.family": "MI325X"}, allocatable={"amd.com/gpu": "8"})])
    check = check_gpu(model=None, requests=1, min_vram="200G", inventory=inv)
    assert check.available and check.model == "MI325X"
    assert terms(check) == [
        {
            "matchExpressions": [
                {"key": "amd.com/gpu.device-id", "operator": "In", "values": ["74a5", "74b9"]}
            ]
        },
        {"matchExpressions": [{"key": "amd.com/gpu.family", "operator": "In", "values": ["MI325X"]}]},
    ]


@pytest.mark.parametrize("min_vram", ["lots", "-", "1.2.3G"])
def test_invalid_min_vram_raises(min_vram: str) -> None:
    with pytest.raises(ValueError, match="invalid minVram"):
        check_gpu(model=None, requests=1, min_vram=min_vram, inventory=CLUSTER)


@pytest.mark.parametrize(
    ("inv", "requests", "available", "message"),
    [
        (
            CLUSTER,
            1,
            True,
            "AMD GPUs are available on 5 nodes: AMD-BEEF (1 node), MI210 (2 nodes), MI300X (2 nodes)",
        ),
        (CLUSTER, 8, True, "AMD GPUs are available on 5 nodes"),
        (CLUSTER, 9, False, "AMD GPUs are on 5 nodes but at most 8 per node; 9 requested"),
        (Inventory(), 1, False, "no AMD GPU in the cluster"),
    ],
)
def test_check_any_gpu(inv: Inventory, requests: int, available: bool, message: str) -> None:
    check = check_gpu(model=None, requests=requests, min_vram=None, inventory=inv)
    reason = REASON_GPU_AVAILABLE if available else REASON_GPU_NOT_AVAILABLE
    assert (check.required, check.available, check.reason, check.model, check.node_affinity) == (
        True,
        available,
        reason,
        None,
        None,
    )
    assert check.message.startswith(message)


# Nodes as the original's CI cluster has them: labels name the GPU, nothing says how many (no count label,
# no device plugin resources). The original checks only the model, so a node like this satisfies any count.
UNCOUNTED = inventory(
    [
        node("ci-a", {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "192G"}),
        node("ci-b", {"amd.com/gpu.device-id": "74a1"}),
    ]
)
COULD_NOT_CHECK = (
    "no count label and no amd.com/gpu allocatable or capacity, so 2 GPUs per node could not be checked"
)


def test_unknown_gpu_count_satisfies_any_count_and_the_message_says_it_was_not_checked() -> None:
    check = check_gpu(model="MI300X", requests=2, min_vram=None, inventory=UNCOUNTED)
    assert (check.available, check.reason, check.model) == (True, REASON_GPU_AVAILABLE, "MI300X")
    assert (
        check.message
        == f"GPU MI300X is available on 2 nodes (GPU count unknown on 2 nodes: {COULD_NOT_CHECK})"
    )
    assert check.node_affinity == ids_affinity(*MI300X_IDS)
    # one GPU is implied by a label naming the model: nothing was left unchecked
    one = check_gpu(model="MI300X", requests=1, min_vram=None, inventory=UNCOUNTED)
    assert (
        one.available and one.message == "GPU MI300X is available on 2 nodes (GPU count unknown on 2 nodes)"
    )


def test_unknown_gpu_count_next_to_known_counts() -> None:
    small = gpu_node("small", "74a1", count=1)
    big = gpu_node("big", "74a1", count=8)
    uncounted = node("ci", {"amd.com/gpu.device-id": "74a1"})
    # the known nodes are too small: only the uncounted one may fit, unchecked
    mixed = check_gpu(model="MI300X", requests=2, min_vram=None, inventory=inventory([small, uncounted]))
    assert mixed.available and mixed.reason == REASON_GPU_AVAILABLE
    assert mixed.message.endswith(f"(up to 1 per node; GPU count unknown on 1 node: {COULD_NOT_CHECK})")
    # a known node has enough: the count was checked
    checked = check_gpu(model="MI300X", requests=2, min_vram=None, inventory=inventory([big, uncounted]))
    assert (
        checked.message
        == "GPU MI300X is available on 2 nodes (up to 8 per node; GPU count unknown on 1 node)"
    )
    # known counts alone still refuse too many
    refused = check_gpu(model="MI300X", requests=2, min_vram=None, inventory=inventory([small]))
    assert not refused.available and refused.reason == REASON_GPU_NOT_AVAILABLE


def test_unknown_gpu_count_with_min_vram_or_any_gpu() -> None:
    vram = check_gpu(model=None, requests=2, min_vram="190G", inventory=UNCOUNTED)
    assert (vram.available, vram.reason, vram.model) == (True, REASON_GPU_AVAILABLE, "MI300X")
    assert vram.message == (
        "GPUs with at least 190G VRAM are available on 2 nodes: MI300X (2 nodes); "
        f"GPU count unknown on 2 nodes: {COULD_NOT_CHECK}"
    )
    anything = check_gpu(model=None, requests=2, min_vram=None, inventory=UNCOUNTED)
    assert (anything.available, anything.reason) == (True, REASON_GPU_AVAILABLE)
    assert anything.message.endswith(f"MI300X (2 nodes); GPU count unknown on 2 nodes: {COULD_NOT_CHECK}")


# --- presentation and change detection -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "requests", "expected"),
    [
        ("MI300X", 8, "8 x MI300X"),
        ("instinct_mi300x", 1, "1 x MI300X"),
        ("MI300X", 0, "MI300X"),
        ("MI300X", None, "MI300X"),
        (None, 2, "2 x GPU"),
        ("", 2, "2 x GPU"),
        (None, 0, "CPU"),
        (None, None, "CPU"),
    ],
)
def test_hardware_summary(model: str | None, requests: int | None, expected: str) -> None:
    assert hardware_summary(model, requests) == expected


def test_gpu_fingerprint_keeps_only_amd_entries() -> None:
    doc = node(
        "n",
        {
            "amd.com/gpu.device-id": "74a1",
            "beta.amd.com/gpu.family": "AI",
            "kubernetes.io/hostname": "n",
            "example.amd.com/x": "no",
        },
        allocatable={"amd.com/gpu": "8", "cpu": "64"},
        capacity={"amd.com/gpu": 8, "memory": "1Ti"},
    )
    assert gpu_fingerprint(doc) == {
        "labels/amd.com/gpu.device-id": "74a1",
        "labels/beta.amd.com/gpu.family": "AI",
        "capacity/amd.com/gpu": "8",
        "allocatable/amd.com/gpu": "8",
    }
    assert gpu_fingerprint({}) == {}


def test_gpu_fingerprint_changes_only_with_gpu_facts() -> None:
    base = gpu_node("n", "74a1")
    relabelled = gpu_node("n", "74a1")
    relabelled["metadata"]["labels"]["team"] = "x"
    relabelled["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert gpu_fingerprint(relabelled) == gpu_fingerprint(base)
    fewer = gpu_node("n", "74a1", count=4)
    assert gpu_fingerprint(fewer) != gpu_fingerprint(base)
