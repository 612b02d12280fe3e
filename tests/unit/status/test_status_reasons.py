"""Every condition reason a service can report is known to the status rules
(aimcore.domain.status.rules): given a state by the shared table, a kind's table or a suffix rule,
or listed as a waiting reason or one reported only where no state is read — never left to the
catch-all unseen.

The reasons are collected from the sources, statically:

- the class-level ``reason`` of every error (every :class:`aimcore.api.errors.AimError` subclass);
- the reason argument of every call that builds a condition or carries a reason into one (the
  :data:`SINKS`: ``ConditionReport(...)``, the services' ``cond(...)`` helpers, the deployer's
  readiness ``Health`` and template ``Selection``, the downloader's ``DownloadError``...), of every
  dict literal with a ``"reason"`` key (the Job outcomes the downloader writes), and of every
  ``(status, reason, message)`` tuple.

An argument is resolved when it is a string, a constant (of the module or imported), an attribute of
a module or class, a local variable assigned (or looped over) such values — the last assignment
before it when every path runs through it, else all of them —, an f-string or a conditional of
those, a parameter (followed to what the calls of its function, found by name, pass), or what a
function returns (element ``i`` of a returned tuple, for ``a, b = f()``). What stays unresolved is
computed (an error's ``exc.reason``: its class's reason is collected). A condition written ``True``
is left out: the rules read ``status=True`` as Ready, whatever the reason.

Left out: the LLMKube ``Model`` (``aim_cache.llmkube``), whose Available/Progressing/Degraded
conditions are LLMKube's vocabulary and have no rule (see the rules' docstring); its errors' class
reasons are still collected.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from aimcore.api.errors import AimError
from aimcore.domain.status import rules
from tests.sources import ROOT, module_files

# callee name → (position of its reason argument, position of its status/ok argument); both may also
# be passed by keyword (``reason=``; ``status=``/``ok=``/``available=``).
SINKS: dict[str, tuple[int | None, int | None]] = {
    "ConditionReport": (None, None),  # keywords only
    "cond": (2, 1),  # the services' cond(type, ok, reason, message)
    "condition": (2, 1),  # aimcore.runtime.conditions.condition (the same)
    "invalid_spec_conditions": (1, None),  # aimcore.runtime.verdicts
    "Health": (1, 0),  # deployer readiness: one condition's worth
    "GPUCheck": (2, 1),  # aimcore.domain.gpu: GPUReady of a template
    "Selection": (1, 0),  # deployer: TemplateReady of a service (True when one is chosen)
    "done": (1, 0),  # deployer selection: the outcome (as Selection)
    "invalid": (0, None),  # deployer: ConfigValid
    "failure_conditions": (1, None),  # model caches: SourceReady/DownloadReady of a failure
    "DownloadError": (0, None),  # the downloader's failure, reported by the model cache
    "SyncFailed": (0, None),  # registry-sync: a failed sync
    "FilterError": (1, None),  # registry-sync: a failed filter
}
STATUS_KEYWORDS = frozenset({"status", "ok", "available", "chosen"})
CHOSEN_SINKS = frozenset({"Selection", "done"})
EXCLUDED = ("aim_cache/llmkube/",)


@dataclass(frozen=True)
class _Binding:
    """``name = value`` (or a loop over values) in statement ``at``."""

    value: ast.expr
    at: ast.AST


@dataclass
class _Scope:
    """A function: its parameters and what its local names are bound to."""

    func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    params: list[str] = field(default_factory=list)
    bindings: dict[str, list[_Binding]] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        return None if isinstance(self.func, ast.Lambda) else self.func.name

    @property
    def is_method(self) -> bool:
        return bool(self.params) and self.params[0] in ("self", "cls")


def _bind(scope: _Scope, target: ast.expr, value: ast.expr | None, at: ast.AST) -> None:
    if isinstance(target, ast.Name):
        bound = value if value is not None else ast.Constant(None)
        scope.bindings.setdefault(target.id, []).append(_Binding(bound, at))
    elif isinstance(target, ast.Tuple | ast.List):
        for i, sub in enumerate(target.elts):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                _bind(scope, sub, value.elts[i], at)
            elif value is not None:  # element i of what the call returns
                _bind(scope, sub, ast.Subscript(value=value, slice=ast.Constant(i)), at)
            else:
                _bind(scope, sub, None, at)


def _loop(scope: _Scope, target: ast.expr, iterable: ast.expr, at: ast.AST) -> None:
    """``for target in iterable``: each element of a literal sequence, or of a constant sequence
    (``Starred``: resolved at run time)."""
    if isinstance(iterable, ast.Tuple | ast.List | ast.Set):
        for element in iterable.elts:
            _bind(scope, target, element, at)
    else:
        _bind(scope, target, ast.Starred(value=iterable), at)


def _scope_of(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> _Scope:
    args = func.args
    scope = _Scope(func, [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]])
    scope.params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(scope, target, node.value, node)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            _bind(scope, node.target, node.value, node)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            _loop(scope, node.target, node.iter, node)
    return scope


@dataclass(frozen=True)
class _Context:
    """Where an expression is: its module, its file and the functions around it (innermost last)."""

    module: ModuleType
    where: str
    scopes: tuple[_Scope, ...]


@dataclass
class _Site:
    call: ast.Call
    context: _Context


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _argument(call: ast.Call, position: int | None, keywords: Collection[str]) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg in keywords:
            return kw.value
    if (
        position is not None
        and len(call.args) > position
        and not isinstance(call.args[position], ast.Starred)
    ):
        return call.args[position]
    return None


def _is_true(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value in (True, "True")


def _written_true(sink: str, status: ast.expr | None) -> bool:
    """Whether a sink's condition is written True (a selection is, when a template is chosen)."""
    if sink in CHOSEN_SINKS:
        return not (isinstance(status, ast.Constant) and status.value is None)
    return _is_true(status)


_STATUS_VALUES = (False, "False", "Unknown")
_MAX_DEPTH = 12


@dataclass
class _Corpus:
    """The sources: the calls of every function by name (to follow a parameter to what is passed)."""

    calls: dict[str, list[_Site]] = field(default_factory=dict)
    defs: dict[str, list[_Context]] = field(default_factory=dict)  # function name → its context
    parents: dict[int, ast.AST] = field(default_factory=dict)
    trees: list[ast.AST] = field(default_factory=list)  # kept alive: the maps above key on ids
    _memo: dict[tuple[int, object], set[str] | None] = field(default_factory=dict)
    found: dict[str, set[str]] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)

    def index(self, node: ast.AST, context: _Context) -> list[tuple[ast.AST, _Context]]:
        """Every node with its context; calls are indexed by the name they call."""
        self.trees.append(node)
        out: list[tuple[ast.AST, _Context]] = []
        stack: list[tuple[ast.AST, _Context]] = [(node, context)]
        while stack:
            current, ctx = stack.pop()
            if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                ctx = _Context(ctx.module, ctx.where, (*ctx.scopes, _scope_of(current)))
                if not isinstance(current, ast.Lambda):
                    self.defs.setdefault(current.name, []).append(ctx)
            out.append((current, ctx))
            for child in ast.iter_child_nodes(current):
                self.parents[id(child)] = current
            if isinstance(current, ast.Call) and (name := _callee(current)) is not None:
                self.calls.setdefault(name, []).append(_Site(current, ctx))
            stack.extend((child, ctx) for child in ast.iter_child_nodes(current))
        return out

    # -- resolving an expression to the strings it may be ----------------------------------------

    def resolve(self, expr: ast.expr, ctx: _Context, depth: int = 0) -> set[str] | None:
        """The strings ``expr`` may be, or None when it cannot be known statically (memoized; an
        expression met again while it is being resolved — a cycle — is unknown there)."""
        if depth > _MAX_DEPTH:
            return None
        key = (id(expr), id(ctx.scopes[-1]) if ctx.scopes else ctx.where)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None
        found = self._resolve(expr, ctx, depth)
        self._memo[key] = found
        return found

    def _resolve(self, expr: ast.expr, ctx: _Context, depth: int) -> set[str] | None:
        if isinstance(expr, ast.Constant):
            return {expr.value} if isinstance(expr.value, str) else None
        if isinstance(expr, ast.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, ast.Attribute):
            value = self._runtime(expr, ctx)
            return {value} if isinstance(value, str) else None
        if isinstance(expr, ast.IfExp):
            return self._union([expr.body, expr.orelse], ctx, depth)
        if isinstance(expr, ast.BoolOp):
            return self._union(expr.values, ctx, depth)
        if isinstance(expr, ast.JoinedStr):
            return self._fstring(expr, ctx, depth)
        if isinstance(expr, ast.Call) and _callee(expr) == "str" and len(expr.args) == 1:
            return self.resolve(expr.args[0], ctx, depth + 1)
        if isinstance(expr, ast.Call):
            return self._returned(expr, None, depth)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Call):
            index = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
            return self._returned(expr.value, index, depth) if isinstance(index, int) else None
        if isinstance(expr, ast.Starred):  # each element of a constant sequence
            value = self._runtime(expr.value, ctx)
            if isinstance(value, tuple | list | set | frozenset) and all(isinstance(v, str) for v in value):
                return set(value)
        return None

    def _union(self, exprs: Iterable[ast.expr], ctx: _Context, depth: int) -> set[str] | None:
        found = [self.resolve(sub, ctx, depth + 1) for sub in exprs]
        known = [f for f in found if f is not None]
        return set().union(*known) if known else None

    def _fstring(self, expr: ast.JoinedStr, ctx: _Context, depth: int) -> set[str] | None:
        parts: list[set[str]] = []
        for value in expr.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append({value.value})
            elif isinstance(value, ast.FormattedValue) and value.format_spec is None:
                got = self.resolve(value.value, ctx, depth + 1)
                if not got:
                    return None
                parts.append(got)
            else:
                return None
        return {"".join(p) for p in itertools.product(*parts)}

    def _name(self, use: ast.Name, ctx: _Context, depth: int) -> set[str] | None:
        name = use.id
        for i in range(len(ctx.scopes) - 1, -1, -1):
            scope = ctx.scopes[i]
            if name in scope.params and name not in scope.bindings:
                return self._passed(scope, name, depth)
            if name in scope.bindings:
                inner = _Context(ctx.module, ctx.where, ctx.scopes[: i + 1])
                return self._union([b.value for b in self._reaching(scope.bindings[name], use)], inner, depth)
        value = getattr(ctx.module, name, None)
        return {value} if isinstance(value, str) else None

    def _reaching(self, bindings: list[_Binding], use: ast.Name) -> list[_Binding]:
        """The bindings that may reach ``use``, roughly: those before it, or only the last of them
        when it is a statement every path to ``use`` runs through (a later ``x = ...`` in the same
        block replaces an earlier one)."""
        line = getattr(use, "lineno", 0)
        before = [b for b in bindings if getattr(b.at, "lineno", 0) < line] or bindings
        last = max(before, key=lambda b: getattr(b.at, "lineno", 0))
        return [last] if self._dominates(last.at, use) else before

    def _dominates(self, statement: ast.AST, use: ast.AST) -> bool:
        """``statement`` is in a block that also holds (a statement around) ``use``, after it."""
        around: set[int] = set()
        node: ast.AST | None = use
        while node is not None:
            around.add(id(node))
            node = self.parents.get(id(node))
        parent = self.parents.get(id(statement))
        if parent is None:
            return False
        for _, block in ast.iter_fields(parent):
            if isinstance(block, list) and statement in block:
                later = block[block.index(statement) + 1 :]
                return any(id(s) in around for s in later)
        return False

    def _passed(self, scope: _Scope, param: str, depth: int) -> set[str] | None:
        """What the calls of ``scope``'s function pass for ``param`` (found by the function's name)."""
        if scope.name is None or depth > _MAX_DEPTH:
            return None
        position = scope.params.index(param) - (1 if scope.is_method else 0)
        values = [
            self.resolve(arg, site.context, depth + 1)
            for site in self.calls.get(scope.name, [])
            if (arg := _argument(site.call, position if position >= 0 else None, (param,))) is not None
        ]
        known = [v for v in values if v is not None]
        return set().union(*known) if known else None

    def _returned(self, call: ast.Call, index: int | None, depth: int) -> set[str] | None:
        """What the functions of the call's name return (element ``index`` of a returned tuple). A
        ``(True, reason, message)`` tuple is left out, as a condition written True is."""
        name = _callee(call)
        if depth > _MAX_DEPTH or name is None:
            return None
        values: list[set[str] | None] = []
        for ctx in self.defs.get(name, []):
            for node in ast.walk(ctx.scopes[-1].func):
                if not isinstance(node, ast.Return) or node.value is None:
                    continue
                value = node.value
                if index is None:
                    values.append(
                        None if isinstance(value, ast.Tuple) else self.resolve(value, ctx, depth + 1)
                    )
                elif isinstance(value, ast.Tuple) and len(value.elts) > index:
                    if not (index > 0 and _is_true(value.elts[0])):
                        values.append(self.resolve(value.elts[index], ctx, depth + 1))
                elif isinstance(value, ast.Call):
                    values.append(self._returned(value, index, depth + 1))
        known = [v for v in values if v is not None]
        return set().union(*known) if known else None

    def _runtime(self, expr: ast.expr, ctx: _Context) -> Any:
        """The module-level object an expression of names and attributes denotes (or None)."""
        if isinstance(expr, ast.Name):
            if any(expr.id in s.bindings or expr.id in s.params for s in ctx.scopes):
                return None
            return getattr(ctx.module, expr.id, None)
        if isinstance(expr, ast.Attribute):
            base = self._runtime(expr.value, ctx)
            return getattr(base, expr.attr, None) if base is not None else None
        return None

    # -- what is reported ------------------------------------------------------------------------

    def take(self, expr: ast.expr, ctx: _Context, line: int, what: str) -> None:
        wrapper = ctx.scopes[-1] if ctx.scopes else None
        if isinstance(expr, ast.Name) and wrapper and wrapper.name in SINKS and expr.id in wrapper.params:
            return  # a sink wrapping another (``cond`` → ``ConditionReport``): its calls count
        got = self.resolve(expr, ctx)
        if got is None:
            self.unresolved.append(f"{ctx.where}:{line} {what} {ast.unparse(expr)}")
            return
        for value in got:
            self.found.setdefault(value, set()).add(f"{ctx.where}:{line}")

    def reported(self, node: ast.AST, ctx: _Context) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and (name := _callee(node)) in SINKS:
            reason_at, status_at = SINKS[name]
            reason = _argument(node, reason_at, ("reason",))
            if reason is not None and not _written_true(name, _argument(node, status_at, STATUS_KEYWORDS)):
                self.take(reason, ctx, line, name)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "reason":
                    self.take(value, ctx, line, "dict")
        elif isinstance(node, ast.Tuple) and len(node.elts) == 3:
            status = node.elts[0]
            if isinstance(status, ast.Constant) and status.value in _STATUS_VALUES:
                self.take(node.elts[1], ctx, line, "tuple")


@dataclass
class Collected:
    reasons: dict[str, set[str]]  # reason → where it comes from
    unresolved: list[str]  # sites whose reason is computed (its values are collected elsewhere)


def collect() -> Collected:
    corpus = _Corpus()
    nodes: list[tuple[ast.AST, _Context]] = []
    reasons: dict[str, set[str]] = {}
    for name, path in module_files():
        module = importlib.import_module(name)
        where = path.relative_to(ROOT).as_posix()
        indexed = corpus.index(ast.parse(path.read_text()), _Context(module, where, ()))
        for obj in vars(module).values():  # every error's class-level reason
            if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, AimError):
                reasons.setdefault(obj.reason, set()).add(f"{name}.{obj.__qualname__}.reason")
        if any(part in where for part in EXCLUDED):
            continue
        nodes += indexed
    for node, ctx in nodes:
        corpus.reported(node, ctx)
    for reason, sites in corpus.found.items():
        reasons.setdefault(reason, set()).update(sites)
    return Collected(reasons, corpus.unresolved)


def known(reason: str) -> bool:
    """Mapped by the rules without the catch-all: a table, a suffix, or the waiting and unread lists."""
    kind_tables = [rule.reasons for rule in rules.RULES.values()]
    return (
        reason in rules.REASON_STATES
        or any(reason in table for table in kind_tables)
        or rules._by_suffix(reason) is not None
        or reason in rules.WAITING_REASONS
        or reason in rules.UNREAD_REASONS
        or reason in rules.DEPENDENCY_REASONS
    )


def test_the_collector_finds_the_reasons_of_every_kind_of_source() -> None:
    collected = collect()
    # one of each source (so a collector that stopped finding them fails here, not silently)
    assert "ImageNotFound" in collected.reasons  # an error class (aimcore.domain.oci)
    assert "InvalidDiscoveryOutput" in collected.reasons  # ConditionReport(reason=CONSTANT)
    assert "PathTemplateInvalid" in collected.reasons  # cond(..., "literal", ...)
    assert "TemplateCreateForbidden" in collected.reasons  # an f-string over a loop's tuple
    assert "AwaitingModel" in collected.reasons  # an f-string over a loop's tuple
    assert "JobBackoffLimitExceeded" in collected.reasons  # returned (aimcore.domain.jobs.classify_failure)
    assert "StorageFull" in collected.reasons  # DownloadError(CONSTANT, ...)
    assert "PodsPending" in collected.reasons  # Health(False, "PodsPending", ...)
    assert "ConfigFound" not in collected.reasons  # RuntimeConfigReady=True only (a later assignment wins)
    assert "Verified" not in collected.reasons  # DownloadReady=True only
    assert len(collected.reasons) > 90  # 106 when written


@pytest.mark.timeout(60)  # reads every service's source for the reasons it reports: 10 s when loaded
def test_every_reported_reason_is_known_to_the_status_rules() -> None:
    collected = collect()
    unknown = {reason: sorted(sites)[:3] for reason, sites in collected.reasons.items() if not known(reason)}
    assert unknown == {}, (
        "add these to aimcore.domain.status.rules (REASON_STATES, WAITING_REASONS or UNREAD_REASONS)"
    )


def test_listed_reasons_are_left_to_the_direction_default() -> None:
    """Listing a reason as waiting (or unread) changes nothing: upstream → Pending, downstream →
    Progressing, as for a reason the rules do not know."""
    assert not rules.WAITING_REASONS & rules.UNREAD_REASONS
    for reason in rules.WAITING_REASONS | rules.UNREAD_REASONS:
        assert reason not in rules.REASON_STATES, reason
        assert rules._by_suffix(reason) is None, reason
        upstream = {"type": "ModelReady", "status": "False", "reason": reason}
        downstream = {"type": "InferenceServiceReady", "status": "False", "reason": reason}
        assert rules.RESOURCE.state_of(upstream) is rules.State.PENDING
        assert rules.RESOURCE.state_of(downstream) is rules.State.PROGRESSING
