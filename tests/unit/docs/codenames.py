"""The names the code defines, for the documentation checks to compare the docs with, each taken from
where the code declares it:

- aimctl's command tree: its own argparse parser (:func:`aimctl.main.parser`);
- the settings: the environment variables of the settings classes, as ``docs/settings.md`` is
  generated (:func:`aim_dev.settingsdoc.readers`);
- the bus: the streams and KV buckets the topology declares (:mod:`aimcore.api.bus.topology`) and
  the subject layout of the bus contract (:mod:`aimcore.api.bus.contract`, ``docs/asyncapi.yaml``);
- the condition reasons and types: the status rules (:mod:`aimcore.domain.status.rules`) and the
  reason table (:mod:`aim_dev.reasontable`);
- the kinds: the CRD table (:data:`aimcore.api.kinds.CRD_KINDS`), the CRD models' classes, and the
  names kubectl takes for them (the models' CRD declarations, :mod:`aim_dev.crdgen`);
- the constants of the sources (:class:`Constants`): the words of every string literal in the
  Python code (docstrings and other bare strings aside) and of the shell, YAML and build files
  outside their comments, for the names the code uses without declaring them in one place (a
  variable set on a container, a Secret's name, a condition a stand-in writes). This checker's own
  tests are left out: they hold stale names on purpose.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

from aim_dev import crdgen, reasontable, settingsdoc
from aimcore.api import kinds
from aimcore.api.bus import contract, topology
from aimcore.domain.status import rules
from aimctl import clidoc
from aimctl.main import parser as aimctl_parser

WORD = re.compile(r"[A-Za-z0-9_][\w-]*")
COMMENT = re.compile(r"(?:^|\s)#.*$")
PYTHON_SOURCES = ("libs/*/src/**/*.py", "services/*/src/**/*.py", "tests/**/*.py")
OTHER_SOURCES = (
    "scripts/*.sh",
    "deploy/**/*.yaml",
    "deploy/**/*.conf",
    "docker-compose.yml",
    "Dockerfile",
    "pyproject.toml",
    "libs/*/pyproject.toml",
    "services/*/pyproject.toml",
)
CHECKER = Path("tests/unit/docs")  # this checker's tests plant stale names
GENERATED = Path("deploy/crds")  # the models' docstrings, read by resource_names instead


def aimctl() -> argparse.ArgumentParser:
    """aimctl's parser, as ``aimctl`` builds it."""
    return aimctl_parser()


subcommands = clidoc.subcommands
"""The subcommands of a parser by name (none for a leaf), as the command reference walks them."""


@functools.cache
def settings() -> frozenset[str]:
    """Every environment variable a settings class reads."""
    concerns = settingsdoc.readers()
    return frozenset(
        name for concern in concerns for variable in concern.variables() for name in variable.names
    )


def streams() -> frozenset[str]:
    return frozenset(config.name for config in topology.stream_configs() if config.name)


def buckets() -> frozenset[str]:
    return frozenset(config.bucket for config in topology.bucket_configs())


@functools.cache
def subject_layouts() -> dict[str, int]:
    """Each subject prefix of the bus contract (``aim.status``) and how many tokens follow it."""
    channels = yaml.safe_load(contract.yaml_text())["channels"]
    layouts = {}
    for channel in channels.values():
        tokens = channel["address"].split(".")
        layouts[".".join(tokens[:2])] = len(tokens) - 2
    return layouts


def reasons() -> frozenset[str]:
    """Every condition reason the status rules or the reason table know."""
    return frozenset(
        {
            *reasontable.reasons(),
            *rules.REASON_STATES,
            *rules.WAITING_REASONS,
            *rules.UNREAD_REASONS,
            *rules.DEPENDENCY_REASONS,
            rules.ALL_COMPONENTS_READY,
            rules.PROGRESSING_REASON,
            rules.INFRASTRUCTURE_ERROR,
        }
    )


def condition_types() -> frozenset[str]:
    """The condition types the status rules and the reason table name."""
    return frozenset(
        {
            *rules.FRAMEWORK_CONDITIONS,
            *(condition for _, _, conditions in reasontable.TABLE for condition, _ in conditions),
        }
    )


@functools.cache
def kind_names(root: Path) -> frozenset[str]:
    """The kinds our CRDs serve and the classes of their models (``AIMServiceSpec``)."""
    models = root / "libs" / "aimcore" / "src" / "aimcore" / "api" / "crds"
    classes = {
        node.name
        for path in sorted(models.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    return frozenset({ref.kind for ref in kinds.CRD_KINDS} | classes)


def resource_names() -> frozenset[str]:
    """Every name kubectl takes for one of our kinds, as the models declare their CRDs: plural,
    singular, short names, the kind, each also qualified by its group
    (``aimservices.aim.eai.amd.com``), and their categories (``aim``)."""
    found: set[str] = set()
    for kind in crdgen.all_kinds():
        info = kind.crd
        plain = {info.plural, info.singular_name, info.kind.lower(), *info.short_names}
        found |= plain | {f"{name}.{info.group}" for name in plain} | set(info.categories)
    return frozenset(found)


def _python_constants(text: str) -> Iterator[str]:
    """The string literals of Python source, but its docstrings and other bare strings."""
    tree = ast.parse(text)
    bare = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare:
            yield node.value


def _uncommented(text: str) -> Iterator[str]:
    for line in text.splitlines():
        yield COMMENT.sub("", line)


def _sources(root: Path, patterns: Iterable[str]) -> Iterator[Path]:
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            relative = path.relative_to(root)
            left_out = relative.is_relative_to(CHECKER) or relative.is_relative_to(GENERATED)
            if ".venv" not in relative.parts and not left_out and path.is_file():
                yield path


class Constants:
    """The words of the sources' constants (see the module's docstring), looked up one word at a
    time: a file is parsed only once its text holds the word at all, so a lookup costs a substring
    search of the sources and the parse of the few files that name it."""

    def __init__(self, root: Path) -> None:
        self.texts = {
            path: path.read_text(errors="replace")
            for path in (*_sources(root, PYTHON_SOURCES), *_sources(root, OTHER_SOURCES))
        }
        self._words: dict[Path, frozenset[str]] = {}

    def words(self, path: Path) -> frozenset[str]:
        if path not in self._words:
            text = self.texts[path]
            pieces = _python_constants(text) if path.suffix == ".py" else _uncommented(text)
            self._words[path] = frozenset(word for piece in pieces for word in WORD.findall(piece))
        return self._words[path]

    def has(self, word: str) -> bool:
        """Whether a constant of the sources holds ``word``."""
        return any(word in self.words(path) for path, text in self.texts.items() if word in text)

    def has_prefix(self, prefix: str) -> bool:
        """Whether a constant of the sources holds a word starting with ``prefix``."""
        return any(
            any(word.startswith(prefix) for word in self.words(path))
            for path, text in self.texts.items()
            if prefix in text
        )


@functools.cache
def constants(root: Path) -> Constants:
    return Constants(root)


def alert_names(root: Path) -> frozenset[str]:
    """The alerts of the monitoring component."""
    rule = yaml.safe_load((root / "deploy" / "components" / "monitoring" / "prometheusrule.yaml").read_text())
    return frozenset(r["alert"] for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r)
