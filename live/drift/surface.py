"""The TITO surface a vLLM release declares, read from its source with `ast`.

Importing vLLM needs torch (and, for its CUDA wheels, a GPU-ready install), so the models are
read instead of imported: class bodies of pydantic models, dataclasses and msgspec structs
give the wire fields (annotation, default, `Field(...)` / `field(...)` arguments), bases are
followed across modules through their imports, and `Literal[...]` (through type aliases) gives
the enums. What the reader cannot evaluate (a default that is an expression) is kept as text
and never compared.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .fetch import Source

TITO_PACKAGE = "vllm/entrypoints/scale_out/"
PROTOCOL_MODULE = "vllm.entrypoints.scale_out.token_in_token_out.protocol"
_FIELD_CALLS = {"Field", "field"}  # pydantic.Field, dataclasses.field, msgspec.field
_HTTP_METHODS = {"get", "post", "put", "patch", "delete"}
_NOT_BODY = {"Request", "Response", "BackgroundTasks"}
_MAX_DEPTH = 8


@dataclass(frozen=True)
class FieldInfo:
    """One wire field. `default` is JSON-like when `default_known`, else the source text."""

    name: str
    annotation: str
    required: bool
    nullable: bool
    default: Any = None
    default_known: bool = False
    literals: tuple[Any, ...] | None = None


@dataclass
class Model:
    name: str
    module: str
    fields: dict[str, FieldInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: str
    body: tuple[str, ...]  # the body model's class names (a union gives several); () = raw body


class SourceIndex:
    """Parsed modules of one tree, and name resolution across their imports."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._modules: dict[str, tuple[ast.Module, bool] | None] = {}

    def module(self, name: str) -> tuple[ast.Module, bool] | None:
        """The parsed module and whether it is a package `__init__`; None when absent."""
        if name not in self._modules:
            base = name.replace(".", "/")
            text, is_pkg = self.source.read(base + ".py"), False
            if text is None:
                text, is_pkg = self.source.read(base + "/__init__.py"), True
            self._modules[name] = None if text is None else (ast.parse(text), is_pkg)
        return self._modules[name]

    def lookup(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """Where `name`, as seen from `module`, is defined: a class or a module-level alias."""
        parsed = self.module(module)
        if parsed is None or depth > _MAX_DEPTH:
            return None
        tree, is_pkg = parsed
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module, node
            if isinstance(node, ast.AnnAssign) and _target(node.target) == name and node.value:
                return module, node.value
            if isinstance(node, ast.Assign) and any(_target(t) == name for t in node.targets):
                return module, node.value
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        target = _absolute(module, is_pkg, node.module, node.level)
                        return self.lookup(target, alias.name, depth + 1)
        return None

    def model(self, module: str, name: str) -> Model | None:
        """The fields of class `name` (as seen from `module`), bases' fields first."""
        found = self.lookup(module, name)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        where, cls = found[0], found[1]
        result = Model(cls.name, where)
        for base in cls.bases:
            base_name = _name_of(base)
            parent = self.model(where, base_name) if base_name else None
            if parent is not None:
                result.fields.update(parent.fields)
        for stmt in cls.body:
            info = self._field(where, stmt)
            if info is not None:
                result.fields[info.name] = info
        return result

    def field_class(self, model: Model, field_name: str) -> Model | None:
        """The model a field is typed with (`UsageInfo.prompt_tokens_details`)."""
        info = model.fields.get(field_name)
        if info is None:
            return None
        for part in _union_parts(ast.parse(info.annotation, mode="eval").body):
            name = _name_of(part)
            found = self.model(model.module, name) if name else None
            if found is not None:
                return found
        return None

    def union_members(self, module: str, alias: str) -> list[tuple[str, str | None]]:
        """A union alias's member classes with their `Tag(...)` (None when untagged)."""
        found = self.lookup(module, alias)
        if found is None or not isinstance(found[1], ast.expr):
            return []
        members = []
        for part in _union_parts(found[1], keep_annotated=True):
            tag = None
            if _is_subscript_of(part, "Annotated"):
                assert isinstance(part, ast.Subscript)
                items = _subscript_items(part)
                part = items[0]
                for extra in items[1:]:
                    if isinstance(extra, ast.Call) and _name_of(extra.func) == "Tag":
                        tag = _literal(extra.args[0]) if extra.args else None
            name = _name_of(part)
            if name:
                members.append((name, tag))
        return members

    def classes(self, module: str) -> list[ast.ClassDef]:
        parsed = self.module(module)
        return [] if parsed is None else [n for n in parsed[0].body if isinstance(n, ast.ClassDef)]

    def _field(self, module: str, stmt: ast.stmt) -> FieldInfo | None:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            return None
        name = stmt.target.id
        if name.startswith("_") or name == "model_config" or _mentions(stmt.annotation, "ClassVar"):
            return None
        required, default, known = _default(stmt.value)
        if isinstance(stmt.value, ast.Call) and _name_of(stmt.value.func) in _FIELD_CALLS:
            alias = _kwarg(stmt.value, "alias")
            name = _literal(alias) if isinstance(alias, ast.Constant) else name
        literals, nullable = self._literals(module, stmt.annotation)
        return FieldInfo(
            name=name,
            annotation=ast.unparse(stmt.annotation),
            required=required,
            nullable=nullable,
            default=default,
            default_known=known,
            literals=literals,
        )

    def _literals(
        self, module: str, annotation: ast.expr, depth: int = 0
    ) -> tuple[tuple[Any, ...] | None, bool]:
        """(the Literal values when every non-None member is a Literal, nullable)."""
        values: list[Any] = []
        nullable, only_literals = False, True
        for part in _union_parts(annotation):
            if isinstance(part, ast.Constant) and part.value is None:
                nullable = True
            elif _is_subscript_of(part, "Literal"):
                assert isinstance(part, ast.Subscript)
                values += [_literal(v) for v in _subscript_items(part)]
            elif isinstance(part, ast.Name) and depth < _MAX_DEPTH:
                found = self.lookup(module, part.id)
                if found is None or not isinstance(found[1], ast.expr):
                    only_literals = False
                    continue
                inner, inner_null = self._literals(found[0], found[1], depth + 1)
                nullable |= inner_null
                if inner is None:
                    only_literals = False
                else:
                    values += inner
            else:
                only_literals = False
        return (tuple(values) if values and only_literals else None), nullable


def routes(index: SourceIndex) -> list[Route]:
    """Every route the TITO routers register: decorators and `add_api_route` calls."""
    found: list[Route] = []
    for path in index.source.list(TITO_PACKAGE):
        if not path.endswith("/api_router.py"):
            continue
        module = path[: -len(".py")].replace("/", ".")
        parsed = index.module(module)
        if parsed is None:
            continue
        functions = {
            n.name: n
            for n in ast.walk(parsed[0])
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        for fn in functions.values():
            for deco in fn.decorator_list:
                if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute):
                    method = deco.func.attr
                    if method in _HTTP_METHODS and deco.args:
                        body = _body_models(index, module, fn)
                        found.append(Route(method.upper(), _literal(deco.args[0]), fn.name, body))
        for node in ast.walk(parsed[0]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_api_route"
                and len(node.args) >= 2
            ):
                handler = _name_of(node.args[1]) or "?"
                given = _kwarg(node, "methods")
                methods = _literal(given) if given is not None else ["GET"]
                target = functions.get(handler)
                body = _body_models(index, module, target) if target else ()
                for method in methods:
                    found.append(Route(method.upper(), _literal(node.args[0]), handler, body))
    return sorted(set(found), key=lambda r: (r.path, r.method))


def _body_models(
    index: SourceIndex, module: str, fn: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[str, ...]:
    """The handler's body model: a typed parameter, else a `Model.model_validate(...)` call."""
    for arg in fn.args.args:
        name = _name_of(arg.annotation) if arg.annotation is not None else None
        if name and name not in _NOT_BODY:
            members = index.union_members(module, name)
            return tuple(m for m, _ in members) if members else (name,)
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "model_validate"
        ):
            name = _name_of(node.func.value)
            if name:
                return (name,)
    return ()


def _default(value: ast.expr | None) -> tuple[bool, Any, bool]:
    """(required, default, default_known) of a class-body assignment's right side."""
    if value is None:
        return True, None, False
    if isinstance(value, ast.Call) and _name_of(value.func) in _FIELD_CALLS:
        if value.args:
            first = value.args[0]
            if isinstance(first, ast.Constant) and first.value is Ellipsis:
                return True, None, False
            return (False, *_value(first))
        if (default := _kwarg(value, "default")) is not None:
            return (False, *_value(default))
        if (factory := _kwarg(value, "default_factory")) is not None:
            empties: dict[str, Any] = {"list": [], "dict": {}, "set": [], "tuple": []}
            empty = empties.get(_name_of(factory) or "")
            return (False, empty, True) if empty is not None else (False, "<factory>", False)
        return True, None, False
    return (False, *_value(value))


def _value(node: ast.expr) -> tuple[Any, bool]:
    try:
        return ast.literal_eval(node), True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node), False


def _union_parts(node: ast.expr, keep_annotated: bool = False) -> list[ast.expr]:
    """`A | B | None`, `Optional[A]`, `Union[A, B]` and `Annotated[A, ...]` -> the members.

    `keep_annotated` keeps an `Annotated[Member, Tag(...)]` whole, for its tag.
    """
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_parts(node.left, keep_annotated) + _union_parts(node.right, keep_annotated)
    if _is_subscript_of(node, "Optional"):
        assert isinstance(node, ast.Subscript)
        return [*_union_parts(node.slice, keep_annotated), ast.Constant(None)]
    if _is_subscript_of(node, "Union"):
        assert isinstance(node, ast.Subscript)
        return [p for item in _subscript_items(node) for p in _union_parts(item, keep_annotated)]
    if _is_subscript_of(node, "Annotated"):
        assert isinstance(node, ast.Subscript)
        inner = _subscript_items(node)[0]
        if keep_annotated and not _is_union(inner):
            return [node]
        return _union_parts(inner, keep_annotated)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:  # a string annotation ("ParseContext | None")
            return _union_parts(ast.parse(node.value, mode="eval").body, keep_annotated)
        except SyntaxError:
            return [node]
    return [node]


def _is_union(node: ast.expr) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)) or any(
        _is_subscript_of(node, n) for n in ("Union", "Optional")
    )


def _subscript_items(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _is_subscript_of(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Subscript) and _name_of(node.value) == name


def _mentions(node: ast.expr, name: str) -> bool:
    return any(_name_of(n) == name for n in ast.walk(node) if isinstance(n, ast.expr))


def _name_of(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _target(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _kwarg(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal(node: ast.expr) -> Any:
    return _value(node)[0]


def _absolute(module: str, is_pkg: bool, target: str | None, level: int) -> str:
    """The absolute module name of `from <level dots><target> import ...` inside `module`."""
    if level == 0:
        return target or ""
    parts = module.split(".")
    if not is_pkg:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*parts, target] if target else parts)
