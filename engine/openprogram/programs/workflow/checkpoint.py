"""Checkpoints of a workflow run: a revised rerun reuses the calls that did not change.

Every model-calling primitive called by workflow code (``llm``, ``agent``, and the
judgements made inside the control-flow primitives) is logged as
``{"call_index", "fn", "prompt", "args", "result"}`` (``args``: canonical JSON of everything
else that shapes the request: choices, system, tools, response_format, model, ..., and the
Context the call sends — given as ``context=`` or the current one — as the blocks and
provider values it contributes: the providers run to key a call, and a call that is not
reused sends those same values in its first request, so they run once). On
the next run, a call at the same position with the same ``fn``, ``prompt`` and ``args``
returns the saved result without a model request; the first call that differs (and every
call after it) runs for real.

A call the workflow did not go on with is not reused: when a primitive (``route``,
``agent``, ...) raises, the calls made inside it (e.g. the decision replies that did not
parse) are marked ``"reusable": false``, so the revision asks the model again. The same
holds for the workflow's own code: when it raises outside any primitive (e.g.
``int(llm("how many?"))`` got "five"), the calls of the primitive whose result the failing
expression used are marked (``a = llm(...); b = llm(...); int(a)`` -> ``a``'s: a name in
it holds that very result, or an item of it), else those of the primitive whose result
the code received last, so the retry does not replay the reply it failed on.

Positions are sequential per run; inside ``parallel`` each branch numbers its own calls
under the parallel call's position, so concurrency does not change the order.
"""

from __future__ import annotations

import ast
import contextvars
import dataclasses
import functools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.context import Context, record_evaluations, reuse_evaluations

__all__ = ["Checkpoint", "CheckpointRuntime"]

_Position = tuple[int, ...]


@dataclass
class _Cursor:
    prefix: _Position = ()
    counter: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> _Position:
        with self.lock:
            index = self.counter
            self.counter += 1
        return (*self.prefix, index)


_cursor: contextvars.ContextVar[_Cursor | None] = contextvars.ContextVar(
    "openprogram_checkpoint_cursor", default=None
)
# True while a checkpointed call runs: model calls it makes inside are part of it.
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "openprogram_checkpoint_inside", default=False
)


# The entries written inside the primitive calls now running (outermost first).
_scopes: contextvars.ContextVar[tuple[list[dict[str, Any]], ...]] = contextvars.ContextVar(
    "openprogram_checkpoint_scopes", default=()
)


_PENDING = object()  # the result of a primitive call that has not returned


@dataclass
class _Received:
    """A primitive called directly by the workflow's own code: the entries it wrote and
    the value it returned to the code."""

    written: list[dict[str, Any]]
    result: Any = _PENDING


# Inside a workflow body (:meth:`Checkpoint.body`): the primitives called directly by the
# workflow's own code (not inside another), in call order.
_received: contextvars.ContextVar[list[_Received] | None] = contextvars.ContextVar(
    "openprogram_checkpoint_received", default=None
)


def _precedes(first: _Position, later: _Position) -> bool:
    """Whether call ``later`` runs after call ``first`` (sibling parallel branches do not).

    Positions alternate call and branch indexes: ``(call, branch, call, ...)``.
    """
    for depth, (a, b) in enumerate(zip(first, later, strict=False)):
        if a != b:
            return depth % 2 == 0 and b > a
    return False


def _index_of(pos: _Position) -> int | str:
    return pos[0] if len(pos) == 1 else ".".join(str(p) for p in pos)


def _position(index: Any) -> _Position:
    if isinstance(index, int):
        return (index,)
    return tuple(int(p) for p in str(index).split("."))


def prompt_text(content: Any) -> str:
    """The prompt of a call as one string (content blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if isinstance(b, Mapping) else str(b) for b in content
        )
    return repr(content)


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON data that is equal exactly when the request would be."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Context):  # what it adds to the request: blocks and provider values
        return _canonical(value.evaluate())
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    schema_fn = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema_fn):  # a pydantic response_format
        return {"model": value.__name__, "schema": schema_fn()}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _canonical(dump(mode="json"))
    spec = getattr(value, "spec", None)  # a Tool: its name and schema
    if spec is not None and not callable(spec):
        return _canonical(spec)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _canonical({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if callable(value):  # a plain-function tool: its spec
        from openprogram.programs.function_tools import tool_spec

        try:
            return _canonical(tool_spec(value))
        except Exception:
            return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
    return repr(value)


def request_args(kwargs: Mapping[str, Any], *, ambient: bool = False) -> str:
    """The canonical JSON of a call's arguments besides its prompt ("" for none).

    ``ambient``: the call is an ``llm``/``agent`` call from workflow code, which also sends
    what it takes from where it runs (as ``llm()`` resolves them): the current Context and
    the enclosing methods' ``system`` option, unless given."""
    shaped = {k: v for k, v in kwargs.items() if k != "runtime"}
    if ambient:
        from openprogram.agentic_programming.calls import _system_for

        if shaped.get("context") is None and Context.current() is not None:
            shaped["context"] = Context.current()
        if _system_for(shaped.get("system"), None) is not None:
            shaped["system"] = _system_for(shaped.get("system"), None)
    if not shaped:
        return ""
    return json.dumps(_canonical(shaped), sort_keys=True, ensure_ascii=False)


class Checkpoint:
    """The call log of workflow runs (in memory, optionally mirrored to a JSON file)."""

    def __init__(
        self, entries: Iterable[Mapping[str, Any]] = (), *, path: str | Path | None = None
    ):
        self.path = Path(path) if path is not None else None
        loaded = list(entries)
        if not loaded and self.path is not None and self.path.exists():
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        self.entries: list[dict[str, Any]] = [dict(e) for e in loaded]
        self._saved: dict[_Position, dict[str, Any]] = {}
        self._breaks: list[_Position] = []
        self._failures: list[BaseException] = []
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- runs -----------------------------------------------------------------------

    def begin_run(self) -> contextvars.Token[_Cursor | None]:
        """Start a run: the previous run's log becomes the saved log to replay."""
        with self._lock:
            self._saved = {_position(e["call_index"]): e for e in self.entries}
            self.entries = []
            self._breaks = []
            self._failures = []
            self.hits = self.misses = 0
        return _cursor.set(_Cursor())

    def end_run(self, token: contextvars.Token[_Cursor | None]) -> None:
        _cursor.reset(token)
        self._persist()

    # -- calls ----------------------------------------------------------------------

    def call(
        self, fn: str, prompt: str, thunk: Callable[[], Any], args: Callable[[], str] | str = ""
    ) -> Any:
        """Return the saved result of this call, or run ``thunk`` and log its result.

        ``args``: :func:`request_args` of the call's other arguments (part of its key), or
        a function computing it (only for a call that is logged). The Context values the
        key evaluated are the ones ``thunk``'s first request sends: providers run once."""
        if _inside.get():
            return thunk()
        cursor = _cursor.get()
        if cursor is None:  # not inside a workflow run
            return thunk()
        if callable(args):
            with record_evaluations() as evaluated:
                args = args()
        else:
            evaluated = []
        pos = cursor.next()
        with self._lock:
            saved = self._saved.get(pos)
            reusable = (
                saved is not None
                and saved.get("fn") == fn
                and saved.get("prompt") == prompt
                and saved.get("args", "") == args
                and saved.get("reusable", True)
                and not any(_precedes(b, pos) for b in self._breaks)
            )
            if not reusable:
                self._breaks.append(pos)
        if reusable:
            assert saved is not None
            entry = dict(saved)
            with self._lock:
                self.hits += 1
                self.entries.append(entry)
            self._in_scopes(entry)
            return saved["result"]
        token = _inside.set(True)
        try:
            with reuse_evaluations(evaluated):
                result = thunk()
        finally:
            _inside.reset(token)
        entry = {
            "call_index": _index_of(pos),
            "fn": fn,
            "prompt": prompt,
            "args": args,
            "result": result,
        }
        with self._lock:
            self.misses += 1
            self.entries.append(entry)
        self._in_scopes(entry)
        self._persist()
        return result

    @staticmethod
    def _in_scopes(entry: dict[str, Any]) -> None:
        for written in _scopes.get():
            written.append(entry)

    def guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a primitive) whose logged calls are not reused when it raises.

        Only the innermost primitive an exception comes out of marks its calls: an outer
        one that lets the same failure through (or raises one chained to it) leaves its
        other calls, whose results were used, reusable."""

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if _cursor.get() is None or _inside.get():
                return fn(*args, **kwargs)
            written: list[dict[str, Any]] = []
            received = _received.get()
            record = _Received(written)
            if received is not None and not _scopes.get():  # called by the workflow's code
                received.append(record)
            token = _scopes.set((*_scopes.get(), written))
            try:
                record.result = fn(*args, **kwargs)
                return record.result
            except BaseException as exc:
                self._discard(exc, written)
                raise
            finally:
                _scopes.reset(token)

        return guarded

    def body(self, fn: Callable[[], Any], source: str | None = None) -> Callable[[], Any]:
        """The workflow function ``fn``, guarded as a primitive is: when its own code raises
        (no primitive did), the calls of the primitives whose results the failing
        expression used are not reused (:func:`_failed_on`; ``source`` is the code ``fn``
        was compiled from), else those of the primitive whose result it received last."""

        @functools.wraps(fn)
        def run() -> Any:
            received: list[_Received] = []
            token = _received.set(received)
            try:
                return fn()
            except BaseException as exc:  # (the failing code analysed only when unclaimed)
                self._discard(exc, functools.partial(_failed_on, exc, received, fn, source))
                raise
            finally:
                _received.reset(token)
                received.clear()  # a traceback keeps this frame: not the results too

        return run

    def _discard(
        self,
        exc: BaseException,
        written: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]],
    ) -> None:
        """Mark ``written`` (or what it computes) not reusable, unless a primitive already
        claimed ``exc`` or an exception it was raised from."""
        chain: list[BaseException] = []
        seen: BaseException | None = exc
        while seen is not None and seen not in chain:
            chain.append(seen)
            seen = seen.__cause__ or seen.__context__
        with self._lock:
            if any(any(e is c for c in chain) for e in self._failures):
                return
            self._failures.append(exc)
        for entry in written() if callable(written) else written:
            entry["reusable"] = False

    def wrap(self, fn_name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` whose calls are checkpointed (the prompt is its first argument; the
        other arguments are part of the key)."""

        @functools.wraps(fn)
        def checkpointed(*args: Any, **kwargs: Any) -> Any:
            if args:
                content = args[0]
                shaped = {**({"args": list(args[1:])} if args[1:] else {}), **kwargs}
            else:
                key = "content" if "content" in kwargs else "prompt"
                content = kwargs.get(key, "")
                shaped = {k: v for k, v in kwargs.items() if k != key}
            return self.call(
                fn_name,
                prompt_text(content),
                lambda: fn(*args, **kwargs),
                lambda: request_args(shaped, ambient=True),
            )

        return self.guard(checkpointed)

    def wrap_parallel(self, parallel: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        """``parallel`` whose branches number their calls under one reserved position."""

        @functools.wraps(parallel)
        def checkpointed(thunks: Iterable[Callable[[], Any]], **kwargs: Any) -> list[Any]:
            cursor = _cursor.get()
            if cursor is None or _inside.get():
                return parallel(thunks, **kwargs)
            base = cursor.next()

            def scoped(branch: int, thunk: Callable[[], Any]) -> Callable[[], Any]:
                def run() -> Any:
                    token = _cursor.set(_Cursor(prefix=(*base, branch)))
                    try:
                        return thunk()
                    finally:
                        _cursor.reset(token)

                return run

            return parallel([scoped(i, t) for i, t in enumerate(thunks)], **kwargs)

        return self.guard(checkpointed)

    # -- persistence ----------------------------------------------------------------

    def _persist(self) -> None:
        if self.path is None:
            return
        with self._lock:
            rows = [
                _jsonable(e) for e in sorted(self.entries, key=lambda e: _position(e["call_index"]))
            ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(self.path)


def _failed_on(
    exc: BaseException, received: list[_Received], fn: Callable[[], Any], source: str | None
) -> list[dict[str, Any]]:
    """The entries of the calls whose results the workflow's own code failed on.

    Those of the primitives whose result (or an item of it) a name among the failing
    operation's operands holds (``int(a)``, ``int(a.strip())``, ``int(xs[0])``; of those
    only the calls that returned that very value when there are such, e.g. one
    ``parallel`` branch); plus, when an operand is a value no name holds (``int(llm(...))``)
    or no operand was found, those of the primitive the code received last. Marking a
    later call as well costs nothing: every call after a re-asked one runs again."""
    values: list[Any] = []
    opaque = True
    if source is not None:
        try:
            values, opaque = _failing_operands(exc, fn, source)
        except Exception:  # never mask the workflow's own error: fall back to the last
            values, opaque = [], True
    # every call that returned such a value (CPython shares "" and one-character strings:
    # two equal short replies are both asked again, an extra request, never a reply reused
    # that the code failed on)
    used = [r for r in received if r.result is not _PENDING and _holds(r.result, values)]
    written = [entry for r in used for entry in r.written]
    exact = [e for e in written if any(v is e.get("result") for v in values)]
    marked = exact or written
    if (opaque or not used) and received:
        marked += [e for e in received[-1].written if e not in marked]
    return marked


def _holds(result: Any, values: list[Any]) -> bool:
    items: Iterable[Any] = ()
    if isinstance(result, (list, tuple)):
        items = result
    elif isinstance(result, Mapping):
        items = result.values()
    return any(v is result or any(v is item for item in items) for v in values)


def _failing_operands(
    exc: BaseException, fn: Callable[[], Any], source: str
) -> tuple[list[Any], bool]:
    """The values of the names among the operands of the operation of the workflow code
    that raised ``exc`` (the instruction's source span in the innermost frame of that
    code, a helper defined in it included; its whole line where spans are unknown, Python
    3.10), and whether an operand is a value no name holds."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", None)
    frame_tb = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            frame_tb = tb
        tb = tb.tb_next
    if frame_tb is None:
        return [], True
    frame, code = frame_tb.tb_frame, frame_tb.tb_frame.f_code
    lines = source.splitlines()
    span: tuple[Any, ...] = (frame_tb.tb_lineno, frame_tb.tb_lineno, None, None)
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        found = list(positions())[frame_tb.tb_lasti // 2]
        if None not in found:
            span = found
    first, last, start, end = span
    if not (0 < first <= last <= len(lines)):
        return [], True
    chunk = [line.encode() for line in lines[first - 1 : last]]  # columns count bytes
    if end is not None:
        chunk[-1] = chunk[-1][:end]
    if start is not None:
        chunk[0] = chunk[0][start:]
    text = b"\n".join(chunk).decode(errors="replace").strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a part of a statement: try it as an expression in brackets
        try:
            tree = ast.parse(f"({text})")
        except SyntaxError:
            return [], True
    if len(tree.body) != 1:
        return [], True
    node: ast.AST = tree.body[0]
    if isinstance(node, ast.Expr):
        node = node.value
    if isinstance(node, ast.Call):  # the call that raised: its arguments (and receiver)
        operands: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(node.func, ast.Attribute):
            operands.append(node.func.value)
    else:
        operands = list(ast.iter_child_nodes(node))
    names: set[str] = set()
    opaque = False
    for operand in operands:
        opaque = _reach(operand, names) or opaque
    scope = frame.f_locals
    return [scope[name] for name in sorted(names) if name in scope], opaque


def _reach(node: ast.AST, names: set[str]) -> bool:
    """Add to ``names`` the names whose values ``node`` passes on (``a``, ``a.strip()``,
    ``xs[0]``, ``a + b``; not the arguments of a call, which are that call's inputs);
    True when it passes on a value no name holds (a function's result)."""
    if isinstance(node, ast.Name):
        names.add(node.id)
        return False
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):  # a method of a value: that value
            return _reach(node.func.value, names)
        return True
    if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _reach(node.value, names)
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return True
    opaque = False
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            opaque = _reach(child, names) or opaque
    return opaque


def _jsonable(entry: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    try:
        json.dumps(out["result"])
    except (TypeError, ValueError):
        out["result"] = repr(out["result"])
        out["reusable"] = False  # a repr cannot stand in for the real value
    return out


class CheckpointRuntime:
    """A runtime wrapper that logs direct ``exec`` calls (e.g. control-flow judgements)."""

    def __init__(self, inner: Any, checkpoint: Checkpoint) -> None:
        self._inner = inner
        self._checkpoint = checkpoint

    @property
    def inner(self) -> Any:
        return self._inner

    def exec(self, content: Any, **kwargs: Any) -> str:
        result: str = self._checkpoint.call(
            "llm",
            prompt_text(content),
            lambda: self._inner.exec(content, **kwargs),
            lambda: request_args(kwargs),
        )
        return result

    def ask_for_decision(self, content: Any, choices: Any, **kwargs: Any) -> str:
        """``decision.make``'s request (control-flow judgements), logged like ``exec``."""
        result: str = self._checkpoint.call(
            "llm",
            prompt_text(content),
            lambda: self._inner.ask_for_decision(content, choices, **kwargs),
            lambda: request_args({"choices": choices, **kwargs}),
        )
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"CheckpointRuntime({self._inner!r})"
