"""How Kubernetes writes a quantity back (``aimcore.api.quantities.canonical``), the form the
released original's children carry (e2e ``aimmodel/custom-models/cpu-only``: a model's
``limits: 2000m`` is ``"2"`` in its template). Expected values are Go's ``resource.Quantity``
``String()`` of the same input."""

from __future__ import annotations

import pytest

from aimcore.api.quantities import canonical


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("2000m", "2"),
        (2, "2"),
        ("2", "2"),
        ("500m", "500m"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("12000", "12k"),
        (1000000, "1M"),
        ("0", "0"),
        ("1n", "1n"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("64Gi", "64Gi"),
        ("0.5Ki", "512"),  # binary below 1024: decimal SI
        ("1e3", "1e3"),
        ("1e4", "10e3"),
        ("3e-3", "3e-3"),
    ],
)
def test_a_quantity_is_written_back_as_kubernetes_writes_it(written: str | int, kept: str) -> None:
    assert canonical(written) == kept


def test_what_is_not_a_quantity_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        canonical("2 cores")
