"""The verify Jobs' default image is the cache service's own: the image of its pod's ``cache``
container; an explicit ``AIM_LLMKUBE_VERIFY_IMAGE`` wins."""

from __future__ import annotations

from pathlib import Path

from aim_cache.llmkube.own_image import image_of
from aim_cache.llmkube.settings import DEFAULT_VERIFY_IMAGE, ModelSettings
from aim_cache.settings import SETTINGS
from aimcore.runtime.settings import Settings


def test_the_cache_container_is_chosen() -> None:
    pod = {
        "spec": {
            "containers": [{"name": "istio-proxy", "image": "istio"}, {"name": "cache", "image": "m/c:2"}]
        }
    }
    assert image_of(pod) == "m/c:2"
    assert image_of({"spec": {"containers": [{"name": "renamed", "image": "m/c:3"}]}}) == "m/c:3"
    assert (
        image_of({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}) is None
    )
    assert image_of({}) is None


def test_an_explicit_verify_image_wins(tmp_path: Path) -> None:
    unset = ModelSettings.of(Settings.load(SETTINGS, {"AIM_POD_NAME": "aim-cache-1"}), tmp_path)
    assert (unset.verify_image, unset.verify_image_set, unset.pod_name) == (
        DEFAULT_VERIFY_IMAGE,
        False,
        "aim-cache-1",
    )
    given = ModelSettings.of(Settings.load(SETTINGS, {"AIM_LLMKUBE_VERIFY_IMAGE": "my/verify:1"}), tmp_path)
    assert (given.verify_image, given.verify_image_set) == ("my/verify:1", True)
