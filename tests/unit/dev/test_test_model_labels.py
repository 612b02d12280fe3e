"""The test model image's labels (``aim_dev.testmodel``) are AIM model labels, read as the operator
reads an image's (the program as a real process: ``tests/servers/test_test_model.py``)."""

from __future__ import annotations

from aim_dev import testmodel
from aimcore.domain.oci.labels import image_metadata


def test_labels_are_aim_model_labels() -> None:
    meta = image_metadata(testmodel.LABELS)
    assert meta.model is not None
    assert meta.model.canonical_name == testmodel.CANONICAL_NAME
    assert meta.model.hf_token_required is False
    [deployment] = meta.model.recommended_deployments or []
    assert deployment.gpu_count == 0
    assert meta.oci is not None and meta.oci.title == "aim-test-model"
