"""Kubernetes quantities (``"64Gi"``, ``"500m"``, ``"1e3"``, ``8``) read exactly, and the checks a
CRD field of this project makes on one, so an absurd value is refused where the user wrote it.

Why: the API server checks a quantity field of a custom resource only against the quantity
*pattern*, which allows a sign and any magnitude. Whatever it stores is copied later into an
InferenceService, a PVC or a Pod, where Kubernetes refuses a negative resource, caps a number above
2^63-1 and rounds anything finer than a nano-unit up, so the object that runs is not the one that
was asked for, or fails far from its cause. :func:`check_amount` refuses those values instead
(pydantic runs it on every ``Quantity`` field: the value becomes an ``InvalidSpec`` message) and the
generated schema refuses a leading ``-`` at apply time. :func:`canonical` is how Kubernetes writes
a quantity back (``2000m`` → ``"2"``), what a child copied from a user's quantity carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType

__all__ = ["MAX_AMOUNT", "amount", "canonical", "check_amount"]

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


_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def _written_format(value: str | int) -> str:
    """The format Kubernetes keeps for a quantity: that of its suffix (``"binary"`` for Ki…Ei,
    ``"exponent"`` for ``1e3``), else decimal SI."""
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is not None and match["suffix"] in _BINARY:
        return "binary"
    if match is not None and match["exp"] is not None:
        return "exponent"
    return "decimal"


def canonical(value: str | int) -> str:
    """The quantity as Kubernetes writes it back (Go's ``resource.Quantity.String()``): in the
    format its suffix names, the number as small as that format allows: ``2000m`` → ``"2"``,
    ``2`` → ``"2"``, ``0.5`` → ``"500m"``, ``1000`` → ``"1k"``, ``1024Mi`` → ``"1Gi"``,
    ``1e4`` → ``"10e3"``; a binary quantity below 1024 or not whole is written in decimal SI.
    Values finer than a nano-unit are rounded up, as Kubernetes does. What the released original
    writes into the children it copies a quantity to (a template's ``spec.hardware``,
    ``spec.resources``, ``status.resolvedHardware``)."""
    exact = amount(value)
    sign = "-" if exact < 0 else ""
    exact = abs(exact)
    form = _written_format(value)
    if form == "binary" and exact >= 1024 and exact.denominator == 1:
        number, step = int(exact), 0
        while number % 1024 == 0 and step < len(_BINARY):
            number //= 1024
            step += 1
        return f"{sign}{number}{_BINARY[step - 1] if step else ''}"
    # decimal: the smallest power-of-1000 exponent (down to nano) that makes the number whole
    exponent = 0
    scaled = exact
    while scaled.denominator != 1 and exponent > -9:
        exponent -= 3
        scaled = exact / Fraction(10) ** exponent
    number = -((-scaled.numerator) // scaled.denominator)  # round up, as Kubernetes does
    while number and number % 1000 == 0 and (form == "exponent" or exponent < 18):
        number //= 1000
        exponent += 3
    if number == 0:
        return "0"
    if form == "exponent":
        return f"{sign}{number}{f'e{exponent}' if exponent else ''}"
    return f"{sign}{number}{_DECIMAL[exponent]}"
