"""How the operator reads its configuration: one settings class per concern (the process,
the bus, history retention, the outbound policy, each service's own...), each field declared once
with its environment variable, its default, its accepted form and a description. The classes are
what every ``AIM_*`` read goes through, what a service validates before it connects to anything,
and what ``docs/settings.md`` is generated from.

The rules every class shares (they are what the code did before the classes existed):

- names are exact (case-sensitive) and are never prefixed or renamed;
- an empty value counts as unset (the default applies), except for a field declared with
  ``empty_is_value`` (an empty ``AIM_DOWNLOADER_NATS_URL`` turns progress from Jobs off);
- where a field accepts several names, the first non-empty one wins;
- a bad value raises :class:`SettingsError`, a ``ValueError`` whose message names the variable, the
  problem and the accepted form on one line (never the value of a secret).

:meth:`AimSettings.from_env` reads an explicit mapping instead of the process environment (the
download Job's CLI is handed its environment; tests pass dictionaries).
"""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import annotated_types
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from aimcore.api.errors import AimError

_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("aim_settings_environ", default=None)

FORM = "form"
SHOWN_DEFAULT = "shown_default"
EMPTY_IS_VALUE = "empty_is_value"

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def setting(
    default: Any = None,
    *,
    env: str | tuple[str, ...],
    description: str,
    form: str | None = None,
    shown_default: str | None = None,
    secret: bool = False,
    empty_is_value: bool = False,
    **constraints: Any,
) -> Any:
    """A settings field read from ``env`` (one name, or several: the first non-empty one wins).
    ``form`` describes the accepted values (derived from the type when omitted), ``shown_default``
    the default where the value itself says too little (computed or platform-dependent), ``secret``
    keeps the value out of ``repr`` and error messages."""
    names = (env,) if isinstance(env, str) else env
    extra: dict[str, Any] = {}
    if form is not None:
        extra[FORM] = form
    if shown_default is not None:
        extra[SHOWN_DEFAULT] = shown_default
    if empty_is_value:
        extra[EMPTY_IS_VALUE] = True
    return Field(
        default,
        validation_alias=names[0] if len(names) == 1 else AliasChoices(*names),
        description=description,
        repr=not secret,
        json_schema_extra=extra or None,
        **constraints,
    )


def env_names(info: FieldInfo) -> tuple[str, ...]:
    """The variable names of a field declared with :func:`setting`, in order of precedence."""
    alias = info.validation_alias
    if isinstance(alias, str):
        return (alias,)
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    raise TypeError("a settings field is declared with setting(env=...)")


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _from_environment(concern: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """The values of a concern's fields found in ``environ``, keyed by the variable that gave
    each: exact names, empty means unset (unless the field says otherwise), the first non-empty
    name of a field with several."""
    found: dict[str, Any] = {}
    for info in concern.model_fields.values():
        for name in env_names(info):
            value = environ.get(name)
            if value or (value is not None and _extra(info).get(EMPTY_IS_VALUE)):
                found[name] = value
                break
    return found


class AimSettings(BaseModel):
    """A concern's settings. Constructed with no arguments it reads the process environment;
    keyword arguments (field names) override single fields, as in tests.

    A plain pydantic model reading its variables itself: the rules above are all the environment
    handling the operator needs, and pydantic-settings, which it used before, cost every process
    85 ms of start-up and 9 MiB of memory for sources it never used (docs/benchmarks.md)."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        validate_by_name=True,
        validate_by_alias=True,
        validate_default=False,
    )

    title: ClassVar[str] = ""
    """The concern's name in ``docs/settings.md``."""

    def __init__(self, **values: Any) -> None:
        environ = _ENVIRON.get()
        found = _from_environment(type(self), os.environ if environ is None else environ)
        for field_name in values:  # a field given by name overrides its variables
            info = type(self).model_fields.get(field_name)
            for name in env_names(info) if info is not None else ():
                found.pop(name, None)
        try:
            super().__init__(**{**found, **values})
        except ValidationError as exc:
            raise SettingsError.of(type(self), exc) from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings from ``env`` (default: the process environment) and nothing else."""
        token = _ENVIRON.set(env)
        try:
            return cls()
        finally:
            _ENVIRON.reset(token)

    @classmethod
    def variables(cls) -> Iterator[Variable]:
        for name, info in cls.model_fields.items():
            yield Variable(cls, name, info)


@dataclass(frozen=True)
class Variable:
    """One field of a concern, as the reference page and error messages describe it."""

    concern: type[AimSettings]
    field: str
    info: FieldInfo

    @property
    def names(self) -> tuple[str, ...]:
        return env_names(self.info)

    @property
    def secret(self) -> bool:
        return not self.info.repr

    @property
    def form(self) -> str:
        given = _extra(self.info).get(FORM)
        return str(given) if given else describe_type(self.info)

    @property
    def default(self) -> str:
        """The default, as a Markdown cell: a value in backticks, or words."""
        shown = _extra(self.info).get(SHOWN_DEFAULT)
        if shown is not None:
            return str(shown)
        value = self.info.get_default(call_default_factory=True)
        if value is None or value in ((), {}, ""):
            return "unset"
        if isinstance(value, bool):
            return "`true`" if value else "`false`"
        if isinstance(value, float) and value.is_integer():
            return f"`{int(value)}`"
        return f"`{value}`"

    @property
    def description(self) -> str:
        return self.info.description or ""


def describe_type(info: FieldInfo) -> str:
    """The accepted form of a field whose declaration gives none, from its type and bounds."""
    annotation = info.annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is not None and len(args) == 1:
        annotation = args[0]  # X | None
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(annotation))
    names: dict[Any, str] = {float: "a number", int: "a whole number", bool: "true or false"}
    text = names.get(annotation, "text")
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Gt):
            text += f" > {meta.gt:g}"
        elif isinstance(meta, annotated_types.Ge):
            text += f" >= {meta.ge:g}"
    return text


@dataclass(frozen=True)
class Problem:
    variable: str
    value: str | None  # None: not shown (a secret)
    problem: str
    form: str

    def __str__(self) -> str:
        shown = "" if self.value is None else f"={self.value!r}"
        return f"{self.variable}{shown}: {self.problem}; expected {self.form}"


class SettingsError(AimError, ValueError):
    """Bad settings: one problem per bad variable, all on one line."""

    reason = "InvalidSetting"

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems

    @classmethod
    def of(cls, concern: type[AimSettings], exc: ValidationError) -> SettingsError:
        by_key: dict[str, Variable] = {}
        for variable in concern.variables():
            by_key[variable.field] = variable
            for name in variable.names:
                by_key[name] = variable
        problems = []
        for error in exc.errors(include_url=False):
            key = str(error["loc"][0]) if error["loc"] else ""
            known = by_key.get(key)
            if known is None:
                problems.append(Problem(key or concern.__name__, None, error["msg"], "a valid value"))
                continue
            name = key if key in known.names else known.names[0]
            raw = error.get("input")
            value = None if known.secret or not isinstance(raw, str | int | float) else str(raw)
            problems.append(Problem(name, value, _problem(error["msg"]), known.form))
        return cls(problems)


def _problem(message: str) -> str:
    return re.sub(r"^(Value|Assertion) error, ", "", message)


# -- parsers shared by the concerns --------------------------------------------------------------


def split_commas(value: Any) -> Any:
    """``a, b,,c`` → ``("a", "b", "c")`` (items stripped, empty items dropped)."""
    if not isinstance(value, str):
        return value
    return tuple(item.strip() for item in value.split(",") if item.strip())


def split_commas_or_colons(value: Any) -> Any:
    """Like :func:`split_commas`, with ``:`` as a separator too (lists of directories)."""
    if not isinstance(value, str):
        return value
    return tuple(item.strip() for item in re.split(r"[,:]", value) if item.strip())


def strict_flag(value: Any) -> Any:
    """``true``/``false`` (also 1/0, yes/no, on/off, any case); anything else is an error. Blank
    counts as unset (false)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if not text or text in FALSE:
        return False
    if text in TRUE:
        return True
    raise ValueError("not true or false")


def lenient_flag(value: Any) -> Any:
    """``true`` (also 1, yes, on, any case) is true, any other non-blank value false; blank is
    unset (None)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    return (text in TRUE) if text else None


def stripped_or(default: str, transform: Callable[[str], str] = str) -> Callable[[Any], Any]:
    """A parser that strips (and ``transform``\\ s) a value, a blank one being ``default``."""

    def parse(value: Any) -> Any:
        return (transform(value.strip()) or default) if isinstance(value, str) else value

    return parse
