"""Checking a path template on its own (``aimcore.domain.pathtemplate.check_template``), as the
runtime-config status does: syntax and literal segments are known without a service, and the
check agrees with rendering."""

from __future__ import annotations

import pytest

from aimcore.domain.pathtemplate import (
    DEFAULT_PATH_TEMPLATE,
    PathTemplateError,
    check_template,
    quote_template,
    render_path,
)

SERVICE = {"metadata": {"name": "chat", "namespace": "ml", "uid": "u-1", "labels": {"team": "blue"}}}


@pytest.mark.parametrize(
    "template",
    [
        DEFAULT_PATH_TEMPLATE,
        "/{.metadata.namespace}/{.metadata.labels['team']}/inference",
        "/models/{.spec.aimModelName}",  # fields are only known when rendering
        "/api/v1",
        "/" + "x" * 63,
        "/pre-{.metadata.name}" + "y" * 70,  # a segment with an expression: its length is the service's
    ],
)
def test_good_templates(template: str) -> None:
    assert check_template(template) is None


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("/{.metadata.name", "unbalanced '{'"),
        ("/.metadata.name}", "unbalanced '}'"),
        ("/{metadata.name}", "must start with '.'"),
        ("/{.spec.tags[*]}", "unsupported JSONPath"),
        ("/{..name}", "recursive descent"),
        ("/{}", "empty expression"),
        ("/" + "x" * 10_000, "renders a segment of 10000 characters (at most 63)"),
        ("/{.metadata.name}/" + "x" * 64, "segment of 64 characters"),
        ("/_/-/", "renders an empty path"),
        ("/".join(["a" * 60] * 4), "renders a path of 244 characters (at most 200)"),
    ],
)
def test_bad_templates(template: str, says: str) -> None:
    problem = check_template(template)
    assert problem is not None and says in problem
    assert len(problem) < 300  # a 10,000-character template is not repeated in full
    with pytest.raises(PathTemplateError):  # rendering refuses it too, for any service
        render_path(template, SERVICE)


def test_quote_template_shortens_hostile_templates() -> None:
    assert quote_template("/{.metadata.name}") == "'/{.metadata.name}'"
    quoted = quote_template("/" + "x" * 10_000)
    assert quoted.endswith("... (10001 characters)") and len(quoted) < 100
