"""Kubernetes quantities (``"64Gi"``, ``"500m"``, ``"1e3"``, ``8``) read exactly, and the checks a
CRD field of this project makes on one, so an absurd value is refused where the user wrote it.

Why: the API server checks a quantity field of a custom resource only against the quantity
*pattern*, which allows a sign and any magnitude. Whatever it stores is copied later into an
InferenceService, a PVC or a Pod, where Kubernetes refuses a negative resource, caps a number above
2^63-1 and rounds anything finer than a nano-unit up, so the object that runs is not the one that
was asked for, or fails far from its cause. :func:`check_amount` refuses those values instead
(pydantic runs it on every ``Quantity`` field: the value becomes an ``InvalidSpec`` message) and the
generated schema refuses a leading ``-`` at apply time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType

__all__ = ["MAX_AMOUNT", "amount", "check_amount"]

MAX_AMOUNT = 2**63 - 1
"""The largest quantity Kubernetes represents; larger ones are capped to it."""

_NANO = Fraction(1, 10**9)
_MAX_EXPONENT = 64

_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)
_SUFFIX: Mapping[str, Fraction] = MappingProxyType(
    {
        "Ki": Fraction(2**10),
        "Mi": Fraction(2**20),
        "Gi": Fraction(2**30),
        "Ti": Fraction(2**40),
        "Pi": Fraction(2**50),
        "Ei": Fraction(2**60),
        "n": Fraction(1, 10**9),
        "u": Fraction(1, 10**6),
        "m": Fraction(1, 1000),
        "k": Fraction(10**3),
        "M": Fraction(10**6),
        "G": Fraction(10**9),
        "T": Fraction(10**12),
        "P": Fraction(10**15),
        "E": Fraction(10**18),
    }
)


def amount(value: str | int) -> Fraction:
    """The exact value of a quantity. Raises :class:`ValueError` (message starting "not a
    Kubernetes quantity") for anything that is not one: bools, floats, ``"1 Gi"``, ``"1gi"``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"not a Kubernetes quantity: {value!r} (expected a string or an integer)")
    if isinstance(value, int):
        return Fraction(value)
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(
            f"not a Kubernetes quantity: {value!r} (expected a number with an optional suffix "
            "Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as 1e3)"
        )
    number = Fraction(match["num"])
    if match["exp"] is not None:
        exponent = int(match["exp"][1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"not a Kubernetes quantity: {value!r} (exponent out of range)")
        number *= Fraction(10) ** exponent
    elif match["suffix"] is not None:
        number *= _SUFFIX[match["suffix"]]
    return number


def check_amount(value: str | int) -> Fraction:
    """:func:`amount`, refusing what Kubernetes would not keep as written: a negative value, one
    above :data:`MAX_AMOUNT` (capped) or one finer than a nano-unit (rounded up)."""
    exact = amount(value)
    if exact < 0:
        raise ValueError(f"quantity {value!r} is negative")
    if exact > MAX_AMOUNT:
        raise ValueError(f"quantity {value!r} is larger than Kubernetes represents (at most 2^63-1)")
    if (exact / _NANO).denominator != 1:
        raise ValueError(f"quantity {value!r} is finer than 1n (Kubernetes would round it up)")
    return exact
