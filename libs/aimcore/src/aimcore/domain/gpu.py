"""The cluster's AMD GPU inventory and whether a template's GPU needs can be met.

Why this module exists: a template (``AIMServiceTemplate`` / ``AIMClusterServiceTemplate``) asks for a GPU
model, a number of GPUs and optionally a minimum VRAM per GPU. The original operator answers "can this run
here?" from the labels the AMD GPU node labeller puts on Nodes, and pins workloads to matching nodes with a
node affinity on the device id. That logic is pure data crunching over Node objects, so it lives here,
without I/O, and works on Nodes as plain JSON dicts (what the watcher and the API client hand around).

What it reads from a Node (``metadata.labels`` and ``status``):

* **Model**, first found wins: ``amd.com/gpu.device-id``, ``beta.amd.com/gpu.device-id``, the count-encoded
  ``amd.com/gpu.device-id.<id>=<n>`` then ``beta.amd.com/gpu.device-id.<id>=<n>`` (ids in sorted order),
  then the family labels ``amd.com/gpu.family``, ``beta.amd.com/gpu.family`` and their count-encoded forms
  ``...gpu.family.<family>=<n>``. A device id (hex, lower-case, no ``0x``; ``0x74A1`` is accepted) maps
  through :data:`DEVICE_MODELS`; an unknown id becomes ``AMD-<ID upper-case>``. A family value goes
  through :func:`normalize_model`. A Node with none of these labels has no GPU for this module, even when
  it advertises ``amd.com/gpu`` resources (:func:`node_gpus` returns ``None``).
* **VRAM per GPU**: ``amd.com/gpu.vram``, ``beta.amd.com/gpu.vram``, their count-encoded forms
  (``beta.amd.com/gpu.vram.191G=8``), else :data:`MODEL_VRAM` for the model. Values are read leniently
  (:func:`parse_vram`): ``192G``/``192GB`` are 10^9 units, ``192Gi``/``192GiB`` 2^30 units, and a bare
  number is MiB (the unit the AIM Engine documentation gives for this label). An unreadable label falls
  back to the table. Note the labeller reports what the driver sees (an MI300X is typically ``191G``).
* **GPU count**: the count-encoded device-id labels of the ids that map to the node's model (for a
  family-only node, the count-encoded family labels), else ``status.allocatable["amd.com/gpu"]``, else
  ``status.capacity["amd.com/gpu"]`` (the first one present is taken, even ``0``), else *unknown*
  (``None``): a node labelled only with ``amd.com/gpu.device-id``/``vram`` (no device plugin
  reporting, as on the original's own CI cluster) has GPUs of that model but says not how many.

Model-name rule (:func:`normalize_model`): upper-case, ``_`` becomes ``-``, split on ``-``, whitespace,
``/`` and ``:``, skip ``AMD``, ``INSTINCT``, ``RADEON`` and ``PRO``, and take the first token that is

* an Instinct name ``MI<digits><letters>`` (``MI300X``, ``MI300A``, ``MI250X``);
* a Radeon Pro name ``W``/``V`` + 3-4 digits + letters (``W7900``, ``V710``, ``W6800X``);
* a Radeon RX name: ``RX`` + 4 digits, written together or as two tokens; a suffix such as ``XT``/``XTX``
  is dropped because one device id covers those variants (``Radeon RX 7900 XTX`` -> ``RX7900``);
* or any other model name the tables know.

If no token qualifies the cleaned input (upper-case, ``_`` -> ``-``, trimmed) is returned, so
``AMD-ABCD`` (an unknown device id) stays ``AMD-ABCD``.

:func:`check_gpu` decides for one template; see its docstring for the rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from aimcore.api.quantities import amount

__all__ = [
    "DEVICE_ID_LABEL",
    "DEVICE_MODELS",
    "FAMILY_LABEL",
    "GPU_RESOURCE",
    "MODEL_VRAM",
    "REASON_GPU_AVAILABLE",
    "REASON_GPU_NOT_AVAILABLE",
    "REASON_NO_GPU_REQUIRED",
    "REASON_VRAM_NOT_AVAILABLE",
    "VRAM_LABEL",
    "GPUCheck",
    "Inventory",
    "NodeGPU",
    "check_gpu",
    "device_ids_for",
    "gpu_fingerprint",
    "hardware_summary",
    "inventory",
    "node_gpus",
    "normalize_model",
    "parse_quantity",
    "parse_vram",
]

GPU_RESOURCE = "amd.com/gpu"
DEVICE_ID_LABEL = "amd.com/gpu.device-id"
FAMILY_LABEL = "amd.com/gpu.family"
VRAM_LABEL = "amd.com/gpu.vram"
_BETA = "beta."
_PREFIXES = ("amd.com/", "beta.amd.com/")

REASON_GPU_AVAILABLE = "GPUAvailable"
REASON_GPU_NOT_AVAILABLE = "GPUNotAvailable"
REASON_VRAM_NOT_AVAILABLE = "VRAMNotAvailable"
REASON_NO_GPU_REQUIRED = "NoGPURequired"

_G = 10**9

DEVICE_MODELS: Mapping[str, str] = MappingProxyType(
    {
        # Instinct
        "738c": "MI100",
        "738e": "MI100",
        "7408": "MI250X",
        "740c": "MI250X",
        "740f": "MI210",
        "7410": "MI210",
        "74a0": "MI300A",
        "74a1": "MI300X",
        "74a9": "MI300X",
        "74b5": "MI300X",
        "74bd": "MI300X",
        "74a2": "MI308X",
        "74a8": "MI308X",
        "74b6": "MI308X",
        "74a5": "MI325X",
        "74b9": "MI325X",
        "75a0": "MI350X",
        "75b0": "MI350X",
        "75a3": "MI355X",
        "75b3": "MI355X",
        # Radeon Pro
        "7461": "V710",
        "7448": "W7900",
        "745e": "W7800",
        "73a2": "W6900X",
        "73a3": "W6800",
        "73ab": "W6800X",
        "73a1": "V620",
        # Radeon RX
        "7550": "RX9070",
        "744c": "RX7900",
        "73af": "RX6900",
        "73bf": "RX6800",
    }
)
"""PCI device id (lower-case hex, no ``0x``) -> model name."""

MODEL_VRAM: Mapping[str, int] = MappingProxyType(
    {
        "MI355X": 288 * _G,
        "MI350X": 288 * _G,
        "MI325X": 256 * _G,
        "MI300X": 192 * _G,
        "MI308X": 128 * _G,
        "MI300A": 128 * _G,
        "MI250X": 128 * _G,
        "MI210": 64 * _G,
        "MI100": 32 * _G,
        "V710": 28 * _G,
        "W7900": 48 * _G,
        "W7800": 32 * _G,
        "W6900X": 32 * _G,
        "W6800": 32 * _G,
        "W6800X": 32 * _G,
        "V620": 32 * _G,
        "RX9070": 16 * _G,
        "RX7900": 24 * _G,
        "RX6900": 16 * _G,
        "RX6800": 16 * _G,
    }
)
"""Model -> VRAM per GPU in bytes, used when a Node has no VRAM label."""

_KNOWN_MODELS = frozenset(DEVICE_MODELS.values()) | frozenset(MODEL_VRAM)


# --- quantities ----------------------------------------------------------------------------------------


def parse_quantity(value: str | int) -> int:
    """A Kubernetes quantity as an integer, rounded down (surrounding whitespace ignored).

    Accepts ints, plain and decimal numbers (``"8"``, ``"1.5"``), binary suffixes ``Ki Mi Gi Ti Pi Ei``,
    decimal suffixes ``n u m k M G T P E`` and decimal exponents (``"1e3"``); see
    :func:`aimcore.api.quantities.amount`. ``"1.5Gi"`` is 1610612736, ``"1500m"`` is 1. Raises
    :class:`ValueError` for anything else (bools included).
    """
    return math.floor(amount(value.strip() if isinstance(value, str) else value))


_VRAM = re.compile(r"^(?P<num>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>[KMGTPE]?)(?P<bin>I?)(?P<byte>B?)$")
_VRAM_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def parse_vram(text: str) -> int | None:
    """A VRAM label value in bytes, leniently; ``None`` when it cannot be read.

    ``192G``, ``192GB`` and ``192g`` are 192 * 10^9; ``192Gi`` and ``192GiB`` are 192 * 2^30; ``512B`` is
    bytes; a bare number (``196608``) is MiB.
    """
    match = _VRAM.match(text.strip().upper())
    if match is None:
        return None
    number = Fraction(match["num"])
    unit, binary, byte = match["unit"], match["bin"], match["byte"]
    if not unit:
        if binary:
            return None
        return math.floor(number if byte else number * 2**20)
    factor: int = (1024 if binary else 1000) ** _VRAM_POWER[unit]
    return math.floor(number * factor)


def _parse_min_vram(value: str | int) -> int:
    try:
        return parse_quantity(value)
    except ValueError as err:
        lenient = parse_vram(value) if isinstance(value, str) else None
        if lenient is None:
            raise ValueError(f"invalid minVram {value!r}: {err}") from None
        return lenient


def _fmt_bytes(size: int) -> str:
    for unit, factor in (("T", 10**12), ("G", _G)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    for unit, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    if size >= _G:
        return f"{size / _G:.1f}G"
    return str(size)


# --- model names ---------------------------------------------------------------------------------------

_SPLIT = re.compile(r"[-\s/:]+")
_SKIP = frozenset({"AMD", "INSTINCT", "RADEON", "PRO"})
_INSTINCT = re.compile(r"^MI\d+[A-Z]*$")
_RADEON_PRO = re.compile(r"^[WV]\d{3,4}[A-Z]*$")
_RX_JOINED = re.compile(r"^RX(\d{4})[A-Z]*$")
_RX_NUMBER = re.compile(r"^(\d{4})[A-Z]*$")


def normalize_model(text: str) -> str:
    """The canonical model name in ``text`` (``Instinct-MI325X`` -> ``MI325X``); see the module docstring."""
    cleaned = text.strip().upper().replace("_", "-")
    tokens = [token for token in _SPLIT.split(cleaned) if token]
    for index, token in enumerate(tokens):
        if token in _SKIP:
            continue
        if _INSTINCT.match(token) or _RADEON_PRO.match(token) or token in _KNOWN_MODELS:
            return token
        if rx := _RX_JOINED.match(token):
            return f"RX{rx[1]}"
        if token == "RX" and index + 1 < len(tokens) and (number := _RX_NUMBER.match(tokens[index + 1])):
            return f"RX{number[1]}"
    return cleaned


def _normalize_id(device_id: str) -> str:
    text = device_id.strip().lower()
    return text[2:] if text.startswith("0x") else text


def _model_for_id(device_id: str) -> str:
    return DEVICE_MODELS.get(device_id) or f"AMD-{device_id.upper()}"


# --- nodes ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeGPU:
    """The AMD GPUs of one Node: its model, what identifies it, VRAM per GPU (bytes) and GPU count
    (``None``: unknown, no label or resource says)."""

    name: str
    model: str
    device_ids: frozenset[str]
    families: frozenset[str]
    vram: int | None
    count: int | None

    def has(self, wanted: int) -> bool:
        """Whether the node can hold ``wanted`` GPUs; an unknown count is given the benefit of the
        doubt (the original checks only that a node's labels name the model)."""
        return self.count is None or self.count >= wanted


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    labels = _mapping(_mapping(node.get("metadata")).get("labels"))
    return {str(key): str(value).strip() for key, value in labels.items() if value is not None}


def _plain(labels: Mapping[str, str], key: str) -> list[str]:
    """The non-empty values of ``key`` and ``beta.<key>``, in that order."""
    return [value for value in (labels.get(key, ""), labels.get(_BETA + key, "")) if value]


def _encoded(labels: Mapping[str, str], key: str) -> list[tuple[str, str]]:
    """``(suffix, value)`` of the count-encoded ``key.<suffix>`` labels, ``amd.com/`` before ``beta.``."""
    found: list[tuple[str, str]] = []
    for full in (key, _BETA + key):
        prefix = full + "."
        found.extend(sorted((k[len(prefix) :], v) for k, v in labels.items() if k.startswith(prefix)))
    return [(suffix, value) for suffix, value in found if suffix]


def _count_of(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def _encoded_count(entries: list[tuple[str, str]], wanted: Iterable[str]) -> int | None:
    """Sum of the counts of the wanted suffixes, each counted once (``amd.com/`` wins over ``beta.``)."""
    wanted_set = set(wanted)
    per_suffix: dict[str, int] = {}
    for suffix, value in entries:
        count = _count_of(value)
        if suffix in wanted_set and suffix not in per_suffix and count is not None:
            per_suffix[suffix] = count
    return sum(per_suffix.values()) if per_suffix else None


def _resource_count(node: Mapping[str, Any]) -> int | None:
    status = _mapping(node.get("status"))
    for section in ("allocatable", "capacity"):
        value = _mapping(status.get(section)).get(GPU_RESOURCE)
        if value is None:
            continue
        try:
            return parse_quantity(value)
        except ValueError:
            continue
    return None


def node_gpus(node: Mapping[str, Any]) -> NodeGPU | None:
    """The AMD GPUs of a Node dict, or ``None`` when no GPU label names a device id or family."""
    labels = _labels(node)
    id_entries = [(_normalize_id(s), v) for s, v in _encoded(labels, DEVICE_ID_LABEL)]
    plain_ids = [_normalize_id(v) for v in _plain(labels, DEVICE_ID_LABEL)]
    ordered_ids = [i for i in plain_ids + [s for s, _ in id_entries] if i]
    family_entries = _encoded(labels, FAMILY_LABEL)
    ordered_families = _plain(labels, FAMILY_LABEL) + [s for s, _ in family_entries]

    count: int | None
    if ordered_ids:
        model = _model_for_id(ordered_ids[0])
        count = _encoded_count(id_entries, (i for i in ordered_ids if _model_for_id(i) == model))
    elif ordered_families:
        model = normalize_model(ordered_families[0])
        count = _encoded_count(family_entries, (f for f in ordered_families if normalize_model(f) == model))
    else:
        return None
    if count is None:
        count = _resource_count(node)

    vram: int | None = None
    for text in _plain(labels, VRAM_LABEL) + [s for s, _ in _encoded(labels, VRAM_LABEL)]:
        vram = parse_vram(text)
        if vram is not None:
            break
    if vram is None:
        vram = MODEL_VRAM.get(model)

    name = str(_mapping(node.get("metadata")).get("name") or "")
    return NodeGPU(name, model, frozenset(ordered_ids), frozenset(ordered_families), vram, count)


@dataclass(frozen=True)
class Inventory:
    """The GPU nodes of a cluster, ordered by node name."""

    nodes: tuple[NodeGPU, ...] = ()

    def models(self) -> dict[str, list[NodeGPU]]:
        """Model -> its nodes, models in name order."""
        grouped: dict[str, list[NodeGPU]] = {}
        for node in self.nodes:
            grouped.setdefault(node.model, []).append(node)
        return dict(sorted(grouped.items()))

    def describe(self) -> str:
        """``MI210 (2 nodes), MI300X (1 node)``, or ``no AMD GPU in the cluster``."""
        if not self.nodes:
            return "no AMD GPU in the cluster"
        return ", ".join(f"{model} ({_nodes(len(nodes))})" for model, nodes in self.models().items())


def inventory(nodes: Iterable[Mapping[str, Any]]) -> Inventory:
    """The :class:`Inventory` of some Node dicts; nodes without AMD GPU labels are left out."""
    found = [gpu for gpu in map(node_gpus, nodes) if gpu is not None]
    return Inventory(tuple(sorted(found, key=lambda gpu: gpu.name)))


def device_ids_for(model: str, inv: Inventory | None = None) -> list[str]:
    """Every device id of ``model`` (normalised): the table's, the ``<id>`` of an ``AMD-<ID>`` name, and
    the ids seen on the inventory's nodes that map to it. Sorted."""
    wanted = normalize_model(model)
    ids = {device_id for device_id, name in DEVICE_MODELS.items() if name == wanted}
    if wanted.startswith("AMD-") and len(wanted) > len("AMD-"):
        ids.add(wanted[len("AMD-") :].lower())
    if inv is not None:
        ids.update(i for node in inv.nodes for i in node.device_ids if _model_for_id(i) == wanted)
    return sorted(ids)


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


# --- checks --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPUCheck:
    """Whether a template's GPU needs can be met, and the node affinity that pins its workload."""

    required: bool
    available: bool
    reason: str
    message: str
    model: str | None = None
    node_affinity: dict[str, Any] | None = None


def _affinity(models: Iterable[str], nodes: Iterable[NodeGPU], inv: Inventory) -> dict[str, Any] | None:
    """Nodes with a device id of ``models``, or (second term, ORed) a family of the id-less ``nodes``."""
    ids = sorted({i for model in models for i in device_ids_for(model, inv)})
    families = sorted({f for node in nodes if not node.device_ids for f in node.families})
    terms: list[dict[str, Any]] = []
    if ids:
        terms.append({"matchExpressions": [{"key": DEVICE_ID_LABEL, "operator": "In", "values": ids}]})
    if families:
        terms.append({"matchExpressions": [{"key": FAMILY_LABEL, "operator": "In", "values": families}]})
    if not terms:
        return None
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def check_gpu(
    *, model: str | None, requests: int | None, min_vram: str | int | None, inventory: Inventory
) -> GPUCheck:
    """Can the cluster run a template needing ``requests`` GPUs of ``model`` (or with ``min_vram`` each)?

    * Neither ``requests > 0`` nor a model: CPU-only, :data:`REASON_NO_GPU_REQUIRED`.
    * A model (normalised; ``min_vram`` is then ignored): available when a node has it and, if
      ``requests > 0``, one such node has at least ``requests`` GPUs. The affinity selects every device id
      of the model (:func:`device_ids_for`) and, for its nodes known only by a family label, those
      families. It is returned even when not available, so a workload made anyway waits for the right GPU.
    * ``min_vram`` without a model: the nodes whose VRAM per GPU (known) is at least ``min_vram`` and that
      have at least ``requests`` GPUs. ``model`` is the best fit (least VRAM that suffices, then name); the
      affinity selects every device id of all fitting models. ``min_vram`` is a Kubernetes quantity or a
      lenient VRAM string (``192GB``); a bad value raises :class:`ValueError`; ``0`` means no constraint.
    * Only ``requests > 0``: any AMD GPU node with that many GPUs; no model, no affinity.

    Too few GPUs on every candidate node is :data:`REASON_GPU_NOT_AVAILABLE` in all cases. A node whose
    GPU count is unknown (:class:`NodeGPU`) has as many as requested, as in the original, which only
    checks that a node's labels name the model; the message then says the count could not be checked.
    """
    wanted = requests or 0
    name = normalize_model(model) if model and model.strip() else None
    if wanted <= 0 and name is None:
        return GPUCheck(False, True, REASON_NO_GPU_REQUIRED, "The template needs no GPU")
    inv = inventory

    if name is not None:
        nodes = inv.models().get(name, [])
        affinity = _affinity([name], nodes, inv)
        if not nodes:
            message = f"No node has GPU {name}; " + (
                f"available: {inv.describe()}" if inv.nodes else inv.describe()
            )
            return GPUCheck(True, False, REASON_GPU_NOT_AVAILABLE, message, name, affinity)
        if not any(node.has(wanted) for node in nodes):
            most = _most(nodes)
            message = f"GPU {name} is on {_nodes(len(nodes))} but at most {most} per node; {wanted} requested"
            return GPUCheck(True, False, REASON_GPU_NOT_AVAILABLE, message, name, affinity)
        message = f"GPU {name} is available on {_nodes(len(nodes))}{_count_note(nodes, wanted, most=True)}"
        return GPUCheck(True, True, REASON_GPU_AVAILABLE, message, name, affinity)

    minimum = _parse_min_vram(min_vram) if min_vram is not None and str(min_vram).strip() else 0
    if minimum > 0:
        shown = str(min_vram).strip()
        big = [node for node in inv.nodes if node.vram is not None and node.vram >= minimum]
        if not big:
            message = f"No GPU in the cluster has at least {shown} VRAM; " + (
                f"available: {_describe_vram(inv)}" if inv.nodes else inv.describe()
            )
            return GPUCheck(True, False, REASON_VRAM_NOT_AVAILABLE, message)
        fitting = [node for node in big if node.has(wanted)]
        if not fitting:
            most = _most(big)
            message = (
                f"GPUs with at least {shown} VRAM are on {_nodes(len(big))} but at most {most} per node; "
                f"{wanted} requested"
            )
            return GPUCheck(True, False, REASON_GPU_NOT_AVAILABLE, message)
        fit = Inventory(tuple(fitting))
        best = min(fitting, key=lambda node: (node.vram or 0, node.model)).model
        message = (
            f"GPUs with at least {shown} VRAM are available on {_nodes(len(fitting))}: {fit.describe()}"
            + _count_note(fitting, wanted, most=False)
        )
        affinity = _affinity(fit.models(), fitting, inv)
        # the original reports the GPU (GPUAvailable) once minVram is met; the VRAM is in the message
        return GPUCheck(True, True, REASON_GPU_AVAILABLE, message, best, affinity)

    if not inv.nodes:
        return GPUCheck(True, False, REASON_GPU_NOT_AVAILABLE, inv.describe())
    if not any(node.has(wanted) for node in inv.nodes):
        most = _most(inv.nodes)
        message = f"AMD GPUs are on {_nodes(len(inv.nodes))} but at most {most} per node; {wanted} requested"
        return GPUCheck(True, False, REASON_GPU_NOT_AVAILABLE, message)
    message = f"AMD GPUs are available on {_nodes(len(inv.nodes))}: {inv.describe()}" + _count_note(
        inv.nodes, wanted, most=False
    )
    return GPUCheck(True, True, REASON_GPU_AVAILABLE, message)


def _most(nodes: Iterable[NodeGPU]) -> int:
    """The largest known GPU count of ``nodes`` (0 when none is known)."""
    return max((node.count for node in nodes if node.count is not None), default=0)


def _count_note(nodes: Sequence[NodeGPU], wanted: int, *, most: bool) -> str:
    """What an available check adds about GPU counts: ``(up to 8 per node)`` when ``most``, and the
    nodes whose count is unknown, saying that ``wanted`` could not be checked when no node with a
    known count has that many; in parentheses when ``most``, else after ``; ``."""
    known = [node.count for node in nodes if node.count is not None]
    unknown = len(nodes) - len(known)
    parts = [f"up to {max(known)} per node"] if most and known else []
    if unknown:
        note = f"GPU count unknown on {_nodes(unknown)}"
        if wanted > 1 and not any(count >= wanted for count in known):
            note += (
                f": no count label and no {GPU_RESOURCE} allocatable or capacity, "
                f"so {wanted} GPUs per node could not be checked"
            )
        parts.append(note)
    if not parts:
        return ""
    return f" ({'; '.join(parts)})" if most else f"; {'; '.join(parts)}"


def _describe_vram(inv: Inventory) -> str:
    parts = []
    for model, nodes in inv.models().items():
        sizes = [node.vram for node in nodes if node.vram is not None]
        vram = _fmt_bytes(max(sizes)) if sizes else "unknown VRAM"
        parts.append(f"{model} {vram} ({_nodes(len(nodes))})")
    return ", ".join(parts)


# --- presentation and change detection -----------------------------------------------------------------


def hardware_summary(model: str | None, requests: int | None) -> str:
    """``8 x MI300X``, ``MI300X`` (no count), ``2 x GPU`` (no model) or ``CPU``."""
    name = normalize_model(model) if model and model.strip() else None
    count = requests or 0
    if name is not None:
        return f"{count} x {name}" if count > 0 else name
    return f"{count} x GPU" if count > 0 else "CPU"


def gpu_fingerprint(node: Mapping[str, Any]) -> dict[str, str]:
    """The Node's ``amd.com/`` and ``beta.amd.com/`` labels, capacity and allocatable, as
    ``labels/<key>``, ``capacity/<key>`` and ``allocatable/<key>`` -> value: when this changes, GPU checks
    may change; any other Node change does not matter to them."""
    status = _mapping(node.get("status"))
    sections = {
        "labels": _mapping(_mapping(node.get("metadata")).get("labels")),
        "capacity": _mapping(status.get("capacity")),
        "allocatable": _mapping(status.get("allocatable")),
    }
    return {
        f"{section}/{key}": str(value)
        for section, entries in sections.items()
        for key, value in sorted(entries.items())
        if str(key).startswith(_PREFIXES)
    }
