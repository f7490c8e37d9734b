"""Determinism rules of resumable functions (OP201–OP209) and the Planner's static check.

The engine calls :func:`check_resumable` before a resumable run and
:func:`check_planner_code` before running Planner-written code; the lint rules
``OP201``...``OP209`` read the same :func:`compute` results, so both report the same codes
and messages.

Scopes (SPEC §3): the *orchestration body* is the resumable function plus the
same-module helpers it calls (transitively); the *step dependencies* are the functions
passed to ``step`` / ``workflow`` / ``parallel`` plus their helpers. OP201–OP204 and
OP208 apply to both; OP205–OP207 to the orchestration body only.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst

from openprogram.contract import steps as step_rules
from openprogram.contract.primitives import PRIMITIVES
from openprogram_analyzers.decorator_options import DECORATOR_NAMES
from openprogram_analyzers.findings import Finding
from openprogram_analyzers.index import (
    STDLIB_MODULES,
    CallSite,
    FunctionInfo,
    ModuleIndex,
    head_name,
    is_agent_base,
    looks_like_class,
    standard_attribute_kind,
)
from openprogram_analyzers.literals import is_literal_string, string_value
from openprogram_analyzers.rule import Context

#: The first argument of a ``parallel`` that is the control-flow form (zero-argument
#: callables run at once, see OP206), not durable branches with names.
_CONTROL_FLOW_BRANCHES = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)

StepIdentity = tuple[str, int]

DYNAMIC_BUILTINS = frozenset({"exec", "eval", "compile", "__import__"})
DYNAMIC_PREFIXES = ("importlib", "runpy")
DYNAMIC_EXACT = frozenset({"types.FunctionType", "types.CodeType"})
NONDET_EXACT = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "uuid.uuid1",
        "uuid.uuid4",
        "os.urandom",
        "os.getrandom",
    }
)
NONDET_ROOTS = frozenset({"time", "random", "secrets"})
#: Callables under :data:`NONDET_ROOTS` that return the same value every run: ``time.sleep``
#: returns None (a resumed run that waits again sees nothing different)
DETERMINISTIC_EXACT = frozenset({"time.sleep"})
MODEL_CALLS = frozenset(
    {
        "llm",
        "agent",
        "agent_async",
        "goal",  # agent turns until a recorded decision judges the objective met
        "validate_and_retry",
        "route",
        "conditional",
        "repeat_until",
        "judge",  # control_flow.judge: a yes/no decision unless its condition is a callable
        "plan_and_run",
        "run_workflow_code",
    }
)
#: The methods ``openprogram.Agent`` itself defines that send the model a request (its
#: others, :data:`AGENT_OTHER_METHODS`, send none); a method a subclass of the module
#: defines runs its own body in a call scope, so its body is followed like ``self.x()``.
#: ``tests/engine/test_primitive_params.py`` compares the two with the Agent class.
AGENT_REQUESTS = frozenset({"run_turn", "arun_turn", "resume_turn", "aresume_turn", "arun"})
AGENT_OTHER_METHODS = frozenset(
    {"from_spec", "add_pre_invocation_hook", "remove_pre_invocation_hook"}
)
#: What makes an ``openprogram`` model runtime, and its methods that send the model a request
RUNTIME_MAKERS = frozenset({"create_runtime", "Runtime"})
RUNTIME_REQUESTS = frozenset({"exec", "exec_full", "ask_for_decision"})
ENV_CALLS = frozenset({"os.getenv", "os.getenvb"})
SELF = frozenset({"self", "cls"})
NETWORK_ROOTS = frozenset(
    {"httpx", "requests", "urllib", "urllib3", "aiohttp", "socket", "http", "smtplib", "ftplib"}
)
FILE_CALLS = frozenset(
    {
        "open",
        "io.open",
        "os.open",
        "os.remove",
        "os.unlink",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.makedirs",
        "os.rmdir",
        "os.write",
        "os.read",
        "os.truncate",
        "os.removedirs",
        "os.renames",
        "os.link",
        "os.symlink",
        "os.readlink",
        "os.chmod",
        "os.chown",
        "os.utime",
        # reading the file system: a resumed run may find it changed
        "os.listdir",
        "os.scandir",
        "os.walk",
        "os.fwalk",
        "os.stat",
        "os.lstat",
        "os.path.exists",
        "os.path.lexists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.islink",
        "os.path.getsize",
        "os.path.getmtime",
        "os.path.getatime",
        "os.path.getctime",
        "glob.glob",
        "glob.iglob",
        "tempfile.mkstemp",
        "tempfile.mkdtemp",
        "tempfile.NamedTemporaryFile",
        "tempfile.TemporaryFile",
        "tempfile.TemporaryDirectory",
        "tempfile.SpooledTemporaryFile",
        # databases kept in files
        "sqlite3.connect",
        "dbm.open",
        "shelve.open",
    }
)
#: What opens a database connection: calling a method of what it returns
#: (``con.execute(...)``, ``con.commit()``) is file I/O too.
DATABASE_OPENERS = frozenset({"sqlite3.connect", "dbm.open", "shelve.open"})
FILE_METHODS = frozenset(
    {
        "read_text",
        "write_text",
        "read_bytes",
        "write_bytes",
        "unlink",
        "touch",
        "mkdir",
        "rmdir",
        "iterdir",
        "rglob",
        "symlink_to",
        "hardlink_to",
    }
)
PROCESS_CALLS = frozenset(
    {
        "os.system",
        "os.popen",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "os.execv",
        "os.execve",
        "os.execvp",
        "os.execvpe",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.spawnv",
        "os.spawnve",
        "os.spawnvp",
        "os.spawnvpe",
        "os.spawnl",
        "os.spawnle",
        "os.spawnlp",
        "os.spawnlpe",
        "os.posix_spawn",
        "os.posix_spawnp",
    }
)
MUTABLE_FACTORIES = frozenset(
    {
        "list",
        "dict",
        "set",
        "bytearray",
        "collections.defaultdict",
        "collections.deque",
        "collections.OrderedDict",
        "collections.Counter",
    }
)
STEP_FUNCS = frozenset({"step", "workflow", "parallel"})
# Control-flow primitives that call their callables at once, in their caller (so those
# callables are orchestration too), and their parameters: ``PRIMITIVES``
# (``openprogram.contract.primitives``, compared with the engine's signatures).
# ``parallel([thunks])`` (control flow; ``openprogram.parallel`` given a list delegates to
# it) calls its callables at once, in threads of its caller; ``parallel({"b": (fn, args,
# kwargs)})`` runs durable branches, whose functions are step dependencies.
PARALLEL = "parallel"


@dataclass
class DetFinding:
    code: str
    message: str
    node: cst.CSTNode
    chain: list[tuple[str, cst.CSTNode]] = field(default_factory=list)


@dataclass
class Scope:
    """Functions reached from one resumable function, each with its call chain."""

    root: FunctionInfo
    orchestration: dict[str, list[tuple[str, cst.CSTNode]]] = field(default_factory=dict)
    dependencies: dict[str, list[tuple[str, cst.CSTNode]]] = field(default_factory=dict)
    # reached through workflow(...) or a durable parallel({...}) branch: what each is
    workflow_bodies: dict[str, str] = field(default_factory=dict)


def step_kind(site: CallSite) -> str | None:
    """``step``/``workflow``/``parallel`` when the call is one of the durable primitives."""
    target = site.target
    if target is None or not target.startswith("openprogram."):
        return None
    last = target.rsplit(".", 1)[-1]
    if last not in STEP_FUNCS:
        return None
    if last == "parallel" and "control_flow" in target:
        return None
    return last


def _resumable_names(options: cst.BaseExpression | None) -> list[str]:
    """Method names declared ``{"name": {"resumable": True}}`` in a literal dict."""
    if not isinstance(options, cst.Dict):
        return []
    out: list[str] = []
    for el in options.elements:
        if not isinstance(el, cst.DictElement) or not _declares_resumable(el.value):
            continue
        method = string_value(el.key)
        if method is not None:
            out.append(method)
    return out


def _declares_resumable(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Dict) and any(
        isinstance(el, cst.DictElement)
        and string_value(el.key) == "resumable"
        and isinstance(el.value, cst.Name)
        and el.value.value == "True"
        for el in value.elements
    )


def _class_chain(index: ModuleIndex, qualname: str) -> list[str]:
    """``qualname`` and its same-module base classes, nearest first."""
    out: list[str] = []
    todo = [qualname]
    while todo:
        name = todo.pop(0)
        cls = index.classes.get(name)
        if cls is None or name in out:
            continue
        out.append(name)
        todo.extend(b for b in cls.bases if b)
    return out


def resumable_functions(index: ModuleIndex) -> list[FunctionInfo]:
    """Resumable functions of the module: methods declared ``{"name": {"resumable": True}}``
    in a literal ``method_options`` of their class or of a base class (inherited options
    apply to a subclass's override), ``@resumable`` and ``@agentic_function(resumable=True)``
    functions, functions wrapped at module level (``main = resumable(_main)``,
    ``main = agentic_function(resumable=True)(_main)``), and functions given
    ``__agent_options__ = {"resumable": True}`` (also in a ``for f in (a, b):`` loop)."""
    out: list[FunctionInfo] = []
    for cls in index.classes.values():
        for owner in _class_chain(index, cls.qualname):
            for method in _resumable_names(index.classes[owner].method_options):
                found = _lookup_method(index, cls.qualname, method)
                if found is not None and found not in out:
                    out.append(found)
    for fn in index.functions.values():
        if fn.class_name is None and fn.parent is None and _decorated_resumable(index, fn):
            out.append(fn)
    for values in index.module_assigns.values():
        for value in values:
            if (
                isinstance(value, cst.Call)
                and _makes_resumable(index, value.func)
                and value.args
                and value.args[0].keyword is None
                and isinstance(value.args[0].value, cst.Name)
            ):
                found = index.function_at_module(value.args[0].value.value)
                if found is not None and found not in out:
                    out.append(found)
    for target, value in index.agent_options:
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and _declares_resumable(value)
        ):
            name = target.value.value
            for fn_name in index.loop_names.get(name, [name]):
                found = index.function_at_module(fn_name)
                if found is not None and found not in out:
                    out.append(found)
    return out


def _decorated_resumable(index: ModuleIndex, fn: FunctionInfo) -> bool:
    return any(_makes_resumable(index, dec.decorator) for dec in fn.node.decorators)


def _makes_resumable(index: ModuleIndex, expr: cst.BaseExpression) -> bool:
    """Whether ``expr``, applied to a function, makes it resumable: ``resumable`` (however
    imported) or ``agentic_function(..., resumable=True, ...)``."""
    if isinstance(expr, cst.Call):
        return index.resolve(expr.func) in DECORATOR_NAMES and any(
            a.keyword is not None
            and a.keyword.value == "resumable"
            and isinstance(a.value, cst.Name)
            and a.value.value == "True"
            for a in expr.args
        )
    target = index.resolve(expr)
    return (
        target is not None and target.startswith("openprogram.") and target.endswith(".resumable")
    )


def _callee(index: ModuleIndex, fn: FunctionInfo, expr: cst.BaseExpression) -> FunctionInfo | None:
    """The same-module function ``expr`` refers to, if any."""
    if isinstance(expr, cst.Name):
        if expr.value in fn.locals():
            nested = index.functions.get(f"{fn.qualname}.<locals>.{expr.value}")
            return nested
        return index.function_at_module(expr.value)
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Call)
        and isinstance(expr.value.func, cst.Name)
        and expr.value.func.value == "super"
        and "super" not in index.defined
        and fn.class_name is not None
    ):  # super().ask(q): the method of a base class of the method's own
        cls = index.classes.get(fn.class_name)
        for base in cls.bases if cls is not None else []:
            found = _lookup_method(index, base, expr.attr.value) if base else None
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        owner = expr.value.value
        if owner in ("self", "cls") and fn.class_name is not None:
            cls = index.classes.get(fn.class_name)
            return _lookup_method(index, cls.qualname, expr.attr.value) if cls else None
        if owner in index.classes and owner not in fn.locals():
            return _lookup_method(index, owner, expr.attr.value)
    return None


def receiver_classes(index: ModuleIndex, root: FunctionInfo) -> tuple[str, ...]:
    """The classes whose instances a resumable method ``root`` may run on, which decide
    what ``self.hook(...)`` calls: the ones its entries bind it to (``report =
    Smart().report``, ``PROGRAM_ENTRIES = [Smart().report]``); when none does, its own
    class and every subclass of the module (any override may be the one called)."""
    from openprogram_analyzers.program import entry_receivers

    if root.class_name is None:
        return ()
    known = entry_receivers(index).get(root.qualname)
    if known:
        return tuple(sorted(known))
    return _subclasses(index, root.class_name)


def _subclasses(index: ModuleIndex, cls_name: str) -> tuple[str, ...]:
    """``cls_name`` and the classes of the module deriving from it."""
    return tuple(q for q in index.classes if cls_name in _class_chain(index, q))


#: A function reached from a resumable one, with the classes ``self`` may be an instance
#: of in it (empty in a function outside classes)
Reached = tuple[FunctionInfo, tuple[str, ...]]


def _callees(
    index: ModuleIndex, fn: FunctionInfo, expr: cst.BaseExpression, receivers: Sequence[str]
) -> list[Reached]:
    """The same-module functions ``expr`` may refer to, each with the classes ``self`` may
    be an instance of there. ``receivers`` are those of ``fn``; ``self.hook`` /
    ``cls.hook`` is the ``hook`` of each of them deriving from the method's class (when
    none does, of the class and its subclasses), run with that one class, so an override
    in a subclass is followed for that subclass only; ``super().hook`` keeps them; a
    method of an instance of a class of the module (``Source().fetch``, ``h.fetch`` with
    ``h = Source()``, ``bot.hook``) runs with that class (with its subclasses when the
    instance is not made there, ``h: Source``); ``Source.make()`` with ``Source``; a nested
    function with those of ``fn``; a module function with none."""
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value in SELF
        and fn.class_name is not None
        and fn.class_name in index.classes
    ):
        owner = fn.class_name
        classes = [r for r in receivers if owner in _class_chain(index, r)]
        by_method: dict[str, tuple[FunctionInfo, list[str]]] = {}
        for cls in classes or _subclasses(index, owner):
            found = _lookup_method(index, cls, expr.attr.value)
            if found is not None:
                by_method.setdefault(found.qualname, (found, []))[1].append(cls)
        return [(found, tuple(on)) for found, on in by_method.values()]
    found = _callee(index, fn, expr)
    if found is not None:
        if found.class_name is None:
            return [(found, tuple(receivers) if found.parent is not None else ())]
        value = expr.value if isinstance(expr, cst.Attribute) else None
        if isinstance(value, cst.Name) and value.value in index.classes:
            return [(found, (value.value,))]  # Helper.make(): on the class itself
        return [(found, tuple(receivers))]  # super().hook(): the same instance
    if not isinstance(expr, cst.Attribute):
        return []
    cls_name = _instance(index, fn, expr.value, fn.locals(), lambda e: _module_class_made(index, e))
    found = _lookup_method(index, cls_name, expr.attr.value) if cls_name is not None else None
    if found is None or cls_name is None:
        return []
    return [(found, _made_classes(index, fn, expr.value) or _subclasses(index, cls_name))]


def _made_classes(
    index: ModuleIndex, fn: FunctionInfo, expr: cst.BaseExpression
) -> tuple[str, ...]:
    """The classes of the module ``expr`` is made from where it is known exactly:
    ``Source()``, or a name every binding of which is one (``h = Source()``); else none."""
    made = _module_class_made(index, expr)
    if made is not None:
        return (made,)
    if not isinstance(expr, cst.Name):
        return ()
    name = expr.value
    if name in fn.bindings:
        values: Sequence[cst.BaseExpression | None] = fn.bindings[name]
    elif name in fn.locals():
        return ()  # a parameter: an instance of a subclass may be passed
    else:
        values = index.module_assigns.get(name, [])
    classes = [_module_class_made(index, v) if v is not None else None for v in values]
    if not classes or None in classes:
        return ()
    return tuple(dict.fromkeys(c for c in classes if c is not None))


def _module_class_made(index: ModuleIndex, expr: cst.BaseExpression) -> str | None:
    """The class of the module ``expr`` makes an instance of (``Helper()``, ``Writer()``)."""
    if not isinstance(expr, cst.Call):
        return None
    target = index.resolve(expr.func)
    return target if target is not None and target in index.classes else None


def _lookup_method(index: ModuleIndex, cls_name: str, method: str) -> FunctionInfo | None:
    seen: set[str] = set()
    todo = [cls_name]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        cls = index.classes.get(name)
        if cls is None:
            continue
        if method in cls.methods:
            return cls.methods[method]
        todo.extend(b for b in cls.bases if b)
    return None


def _step_callables(site: CallSite) -> list[cst.BaseExpression]:
    """Function expressions handed to a step/workflow/parallel call."""
    args = site.args
    kind = step_kind(site)
    if kind in ("step", "workflow"):
        positional = [a for a in args if a.keyword is None and a.star == ""]
        fn_args = [a.value for a in args if a.keyword is not None and a.keyword.value == "fn"]
        if len(positional) >= 2:
            return [positional[1].value]
        return fn_args
    if kind == "parallel" and args and isinstance(args[0].value, cst.Dict):
        out: list[cst.BaseExpression] = []
        for el in args[0].value.elements:
            if isinstance(el, cst.DictElement):
                v = el.value
                if isinstance(v, cst.Tuple) and v.elements:
                    out.append(v.elements[0].value)
                else:
                    out.append(v)
        return out
    return []


def _primitive_name(
    index: ModuleIndex, call: cst.Call, shadowed: set[str] | frozenset[str]
) -> str | None:
    """``repeat_until`` / ``validate_and_retry`` / ``conditional`` when ``call`` is one."""
    imported = index.resolve_imported(call.func, shadowed) or ""
    last = imported.rsplit(".", 1)[-1]
    return last if imported.startswith("openprogram.") and last in PRIMITIVES else None


def _primitive_args(name: str, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """A primitive call's arguments by parameter name (None when ``*``/``**`` hides them)."""
    params = PRIMITIVES[name].params
    out: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif position < len(params):
            out[params[position]] = arg.value
            position += 1
    return out


def _parallel_thunks(
    index: ModuleIndex, call: cst.Call, shadowed: set[str] | frozenset[str]
) -> list[cst.BaseExpression]:
    """The callables a control-flow ``parallel([...])`` call runs at once: the elements of
    a literal list or tuple, or the element of a comprehension (none for the durable
    ``parallel({...})``, or for a list that is not written in the call)."""
    imported = index.resolve_imported(call.func, shadowed) or ""
    if not imported.startswith("openprogram.") or imported.rsplit(".", 1)[-1] != PARALLEL:
        return []
    positional = [a for a in call.args if a.keyword is None]
    keyword = [a for a in call.args if a.keyword is not None and a.keyword.value == "thunks"]
    found = positional or keyword
    if not found or found[0].star:
        return []
    value = found[0].value
    if not isinstance(value, _CONTROL_FLOW_BRANCHES):
        return []
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return [value.elt]
    return [el.value for el in value.elements if isinstance(el, cst.Element)]


def run_now_callables(
    index: ModuleIndex, call: cst.Call, shadowed: set[str] | frozenset[str]
) -> list[tuple[str, cst.BaseExpression]]:
    """``(primitive, callable)`` for each callable a control-flow primitive call runs at
    once in its caller: its action, retry or branches, a callable condition, and the
    thunks of a control-flow ``parallel([...])``."""
    name = _primitive_name(index, call, shadowed)
    if name is None:
        return [(PARALLEL, thunk) for thunk in _parallel_thunks(index, call, shadowed)]
    args = _primitive_args(name, call) or {}
    called = PRIMITIVES[name].called
    return [(name, value) for param, value in args.items() if param in called]


def _judged_by_model(
    index: ModuleIndex, fn: FunctionInfo, call: cst.Call, shadowed: set[str]
) -> bool:
    """Whether a ``repeat_until`` / ``validate_and_retry`` / ``conditional`` call asks the
    model to judge its condition: a lambda or a function of the module is judged in
    Python (so is a builtin such as ``bool``); a string, or anything not known to be
    callable, may be a model call."""
    name = _primitive_name(index, call, shadowed)
    if name is None:
        return True
    args = _primitive_args(name, call)
    condition = args.get(PRIMITIVES[name].judged) if args is not None else None
    if condition is None:
        return True
    if isinstance(condition, cst.Name) and _builtin_callable(index, condition.value, shadowed):
        return False  # repeat_until(action, bool)
    return not isinstance(condition, cst.Lambda) and _callee(index, fn, condition) is None


def _builtin_callable(index: ModuleIndex, name: str, shadowed: set[str]) -> bool:
    if name in shadowed or name in index.defined or name in index.imports:
        return False
    return callable(getattr(builtins, name, None))


class _Calls(cst.CSTVisitor):
    """Collects the ids of the calls under a node (a module-level class: one defined per
    call would leave reference cycles behind)."""

    def __init__(self, found: set[int]) -> None:
        super().__init__()
        self.found = found

    def visit_Call(self, node: cst.Call) -> bool:
        self.found.add(id(node))
        return True


def run_now_sites(index: ModuleIndex, fn: FunctionInfo, shadowed: set[str]) -> list[CallSite]:
    """The calls of ``fn`` that run in its body: those inside a lambda too (``sorted(xs,
    key=lambda _: random.random())``, ``map(lambda s: llm(s), xs)``, a thunk a control-flow
    primitive calls at once), as the body of a nested ``def`` is, except a lambda handed to
    ``step`` / ``workflow`` / ``parallel({...})`` as its function (refused there, OP213)."""
    handed: set[int] = set()
    for site in fn.calls:
        for expr in _step_callables(site):
            if isinstance(expr, cst.Lambda):
                expr.body.visit(_Calls(handed))
    return [site for site in fn.calls if id(site.node) not in handed]


def passed_callables(
    index: ModuleIndex, site: CallSite, shadowed: set[str] | frozenset[str]
) -> list[cst.BaseExpression]:
    """Names and attributes handed as arguments to a call that may call them in the
    orchestration body (``map(random.choice, xs)``, ``sorted(xs, key=helper)``,
    ``functools.partial(llm, q)``): not the arguments of ``step`` / ``workflow`` /
    ``parallel({...})`` (their function runs in a step), nor the callables a control-flow
    primitive runs at once (:func:`run_now_callables`, followed with their own link)."""
    if step_kind(site) is not None:
        return []
    run_now = {id(e) for _, e in run_now_callables(index, site.node, shadowed)}
    return [
        a.value
        for a in site.args
        if not a.star
        and isinstance(a.value, (cst.Name, cst.Attribute))
        and id(a.value) not in run_now
    ]


#: What a function run by a durable primitive is, when it runs again on resume.
_BODIES = {"workflow": "workflow body", "parallel": "parallel branch"}


def build_scope(
    index: ModuleIndex,
    root: FunctionInfo,
    chain: Sequence[tuple[str, cst.CSTNode]] = (),
    orchestration: bool = True,
    body: str = "",
) -> Scope:
    """Functions reached from ``root``: its orchestration body (helpers it calls) and its
    step dependencies (functions passed to ``step``/``workflow``/``parallel`` and their
    helpers); those reached through a ``workflow(...)`` body or a durable
    ``parallel({...})`` branch are marked, since a model call there is asked again when
    the interrupted workflow or branch resumes."""
    scope = Scope(root=root)
    Todo = tuple[FunctionInfo, tuple[str, ...], list[tuple[str, cst.CSTNode]], bool, str]
    # ``body``: ``root`` runs in a workflow body or durable parallel branch of another module
    todo: list[Todo] = [(root, receiver_classes(index, root), list(chain), orchestration, body)]
    # a function is followed once per set of classes self may be in it (a base method
    # calling self.hook() reaches each subclass's hook once)
    followed: set[tuple[str, tuple[str, ...], bool, str]] = set()
    while todo:
        fn, receivers, chain, orch, in_workflow = todo.pop(0)
        table = scope.orchestration if orch else scope.dependencies
        key = (fn.qualname, receivers, orch, in_workflow)
        if key in followed or (not orch and fn.qualname in scope.orchestration):
            continue
        followed.add(key)
        if fn.qualname not in scope.orchestration and (
            fn.qualname not in table or (in_workflow and fn.qualname not in scope.workflow_bodies)
        ):
            table[fn.qualname] = chain
            if in_workflow:
                scope.workflow_bodies[fn.qualname] = in_workflow
        # nested functions belong to the same scope as their parent
        for info in index.children.get(fn.qualname, ()):
            todo.append((info, receivers, chain, orch, in_workflow))
        for site in fn.calls:
            for callee, on in _callees(index, fn, site.node.func, receivers):
                if callee is fn and on == receivers:
                    continue
                link: tuple[str, cst.CSTNode] = (
                    f"'{fn.qualname}' calls '{callee.qualname}' here",
                    site.node,
                )
                todo.append((callee, on, [*chain, link], orch, in_workflow))
            for primitive, expr in run_now_callables(index, site.node, fn.locals()):
                for dep, on in _callees(index, fn, expr, receivers):
                    if dep is fn and on == receivers:
                        continue
                    link = (f"'{fn.qualname}' passes '{dep.qualname}' to {primitive} here", expr)
                    todo.append((dep, on, [*chain, link], orch, in_workflow))
            for expr in passed_callables(index, site, fn.locals()):
                for dep, on in _callees(index, fn, expr, receivers):
                    if dep is fn and on == receivers:
                        continue
                    to = _code(index, site.node.func)
                    link = (f"'{fn.qualname}' passes '{dep.qualname}' to {to} here", expr)
                    todo.append((dep, on, [*chain, link], orch, in_workflow))
            kind = step_kind(site)
            body = _BODIES.get(kind or "", "")
            for expr in _step_callables(site):
                for dep, on in _callees(index, fn, expr, receivers):
                    what = f"a {kind}" if kind in ("workflow", "parallel") else "a step"
                    link = (f"'{fn.qualname}' passes '{dep.qualname}' to {what} here", expr)
                    todo.append((dep, on, [*chain, link], False, body))
    for q in list(scope.dependencies):
        if q in scope.orchestration:
            del scope.dependencies[q]
    return scope


# ------------------------------------------------------------------ checks per function


def _is_mutable_default(index: ModuleIndex, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    if isinstance(expr, cst.Call):
        target = index.resolve(expr.func)
        return target in MUTABLE_FACTORIES
    return False


def _module_object(index: ModuleIndex, name: str) -> bool:
    """Whether the module-level name ``name`` is bound by an import to a module: ``import
    os``, ``import a.b as c``, or ``from os import path`` (a standard-library module)."""
    imp = index.imports.get(name)
    if imp is None:
        return False
    if imp.name is None:
        return True
    return imp.absolute and standard_attribute_kind(imp.module, imp.name) == "module"


def _imported_object(index: ModuleIndex, name: str) -> bool:
    """Whether the module-level name ``name`` is only bound by an import of something a
    module holds, not a module (``from os import environ``, ``from sys import path``):
    changing that object (``environ.pop("X")``, ``path.append(d)``, ``environ["X"] = v``)
    changes it as ``os.environ.pop("X")`` does, not a global of this module; only
    rebinding the name (``global environ``) does."""
    return (
        name in index.imports
        and name not in index.module_assigns
        and not _module_object(index, name)
    )


def _changes_module(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node``, a mutation through the imported module ``name``, changes what
    the name stands for: ``global name`` (then rebinding it) or assigning or deleting an
    attribute of the module itself (``json.dumps = f``). Calling its functions
    (``os.remove(p)``) or changing an object it holds (``sys.path.insert(0, d)``,
    ``os.environ.pop("X")``, ``os.environ["X"] = v``) changes process state, as a file
    write does, not a global of this module."""
    if isinstance(node, cst.Global):
        return True
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == name
    )


def _module_attribute(node: cst.CSTNode, name: str) -> str | None:
    """The attribute of the module ``name`` a mutation ``node`` changes in place: ``CACHE``
    in ``store_mod.CACHE.append(x)``, ``store_mod.SEEN[k] = v`` (not a function of the
    module called: ``store_mod.add(x)``)."""
    expr = (
        node.func.value
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        else node
    )
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        if (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == name
        ):
            return expr.attr.value
        expr = expr.value
    return None


def _mutated_globals(index: ModuleIndex) -> dict[str, cst.CSTNode]:
    """The module globals changed in this module (rebound, or mutated in place), by name;
    the data of a first-party module this module changes in place, by the name it is
    used by here (``CACHE`` of ``from store_mod import CACHE``; ``store_mod.CACHE`` of
    ``import store_mod``: :attr:`ModuleIndex.project_globals`)."""
    out: dict[str, cst.CSTNode] = {}
    for name, func_q, node in index.mutations:
        if name not in index.defined:
            continue
        attr = _module_attribute(node, name) if index.project_globals else None
        if attr is not None and f"{name}.{attr}" in index.project_globals:
            if not _shadowed_at(index, func_q, name, node):
                out.setdefault(f"{name}.{attr}", node)
            continue
        if _module_object(index, name) and not _changes_module(node, name):
            continue
        if (
            _imported_object(index, name)
            and not isinstance(node, cst.Global)
            and name not in index.project_globals
        ):
            continue
        if _shadowed_at(index, func_q, name, node):
            continue
        out.setdefault(name, node)
    return out


def _shadowed_at(index: ModuleIndex, func_q: str | None, name: str, node: cst.CSTNode) -> bool:
    """Whether ``name``, changed by ``node`` in the function ``func_q``, is its local."""
    fn = index.functions.get(func_q) if func_q is not None else None
    return fn is not None and name in fn.locals() and not isinstance(node, cst.Global)


def _global_used(
    index: ModuleIndex,
    where: str,
    name: str,
    node: cst.CSTNode,
    chain: list[tuple[str, cst.CSTNode]],
) -> DetFinding:
    """OP203 at a use of the changed global ``name`` (a key of :func:`_mutated_globals`)."""
    dotted = index.project_globals.get(name)
    if dotted is None:
        what = f"module global {name!r}, which is rebound or mutated in this module"
    else:
        module = dotted.rpartition(".")[0]
        what = f"{dotted!r}, a global of the project module {module!r} mutated in this module"
    return DetFinding(
        "OP203",
        f"{where} uses {what}: pass state through step inputs and results instead",
        node,
        chain,
    )


def _module_attributes(fn: FunctionInfo, modules: set[str]) -> list[cst.Attribute]:
    """``m.x`` in the body of ``fn`` (not of functions nested in it), ``m`` in ``modules``."""
    found: list[cst.Attribute] = []

    class _Attributes(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn.node

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in modules:
                found.append(node)

    fn.node.visit(_Attributes())
    return found


def _third_party(index: ModuleIndex, name: str) -> str | None:
    imp = index.imports.get(name)
    if imp is None or name in index.first_party:
        return None
    if imp.relative:
        kind = "user package"
    elif imp.root in STDLIB_MODULES or imp.root == "openprogram":
        return None
    else:
        kind = "third-party"
    if imp.name is None:
        return f"{kind} module {imp.module!r}"
    if looks_like_class(imp.name):
        return f"{kind} class {imp.dotted!r}"
    return None


def _check_function(
    index: ModuleIndex,
    fn: FunctionInfo,
    orch: bool,
    mutated: Mapping[str, cst.CSTNode],
    out: list[DetFinding],
    chain: list[tuple[str, cst.CSTNode]],
) -> None:
    outer = fn
    while outer.parent is not None and outer.parent in index.functions:
        outer = index.functions[outer.parent]
    if chain:
        where = f"helper '{fn.qualname}'"
    elif outer is fn:
        where = f"resumable function '{fn.qualname}'"
    else:  # a nested def of the resumable function, run in its body
        where = f"helper '{fn.qualname}' of resumable function '{outer.qualname}'"
    if not orch:
        where = f"step dependency '{fn.qualname}'"
    locals_ = fn.locals()
    enclosing: set[str] = set()
    parent = index.functions.get(fn.parent) if fn.parent else None
    while parent is not None:
        enclosing |= parent.locals()
        parent = index.functions.get(parent.parent) if parent.parent else None

    # OP201 dynamic code
    shadowed = locals_ | enclosing
    for site in fn.calls:
        imported = index.resolve_imported(site.node.func, shadowed) or ""
        builtin = (
            site.target in DYNAMIC_BUILTINS
            and site.head not in shadowed
            and site.head not in index.defined
        )
        if builtin or imported.split(".")[0] in DYNAMIC_PREFIXES or imported in DYNAMIC_EXACT:
            target = site.target or imported
            out.append(
                DetFinding(
                    "OP201",
                    f"dynamic code ({target}) in {where}: resumable runs save and restore "
                    "source code, so dynamic imports and generated code are rejected",
                    site.node.func,
                    chain,
                )
            )
    # OP202 imports inside functions
    for imp in fn.imports:
        out.append(
            DetFinding(
                "OP202",
                f"import inside {where}: step dependencies must be imported at module level",
                imp,
                chain,
            )
        )
    # OP203 mutable globals, OP208 third-party objects
    reported: set[tuple[str, str]] = set()
    for name_node in fn.loads:
        name = name_node.value
        if name in locals_ or name in enclosing:
            continue
        if name in mutated and ("OP203", name) not in reported:
            reported.add(("OP203", name))
            out.append(_global_used(index, where, name, name_node, chain))
        what = _third_party(index, name)
        if what is not None and ("OP208", name) not in reported:
            reported.add(("OP208", name))
            out.append(
                DetFinding(
                    "OP208",
                    f"{where} references the {what}: only standard-library module and class "
                    "objects can be restored",
                    name_node,
                    chain,
                )
            )
    # OP203 on the data of a first-party module used through it (``store_mod.CACHE``)
    through = {k.split(".")[0] for k in mutated if "." in k} - locals_ - enclosing
    for node in _module_attributes(fn, through) if through else ():
        key = f"{cst.ensure_type(node.value, cst.Name).value}.{node.attr.value}"
        if key in mutated and ("OP203", key) not in reported:
            reported.add(("OP203", key))
            out.append(_global_used(index, where, key, node, chain))
    # OP204 mutable defaults and closure state
    params = fn.node.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.default is not None and _is_mutable_default(index, p.default):
            out.append(
                DetFinding(
                    "OP204",
                    f"mutable default argument {p.name.value!r} in {where}: its state is not "
                    "saved between steps; use None and create the value inside",
                    p.default,
                    chain,
                )
            )
    for nl in fn.nonlocals:
        out.append(
            DetFinding(
                "OP204",
                f"closure state (nonlocal) in {where}: it is not saved between steps",
                nl,
                chain,
            )
        )
    if orch:
        _check_orchestration(index, fn, where, out, chain, shadowed)


def _check_workflow_body(
    index: ModuleIndex,
    fn: FunctionInfo,
    out: list[DetFinding],
    chain: list[tuple[str, cst.CSTNode]],
    body: str,
) -> None:
    """OP206 on model calls in a ``workflow(...)`` body or a durable ``parallel({...})``
    branch (``body`` says which): an interrupted one runs its body again on resume, so a
    model call there (not in a step) is asked twice."""
    where = f"{body} '{fn.qualname}'"
    shadowed = fn.locals()
    for site in run_now_sites(index, fn, shadowed):
        imported = _called(index, site, shadowed)
        if _side_effect(index, fn, site, imported, shadowed) == "model call":
            target = site.target or _code(index, site.node.func)
            out.append(
                DetFinding(
                    "OP206",
                    f"model call ({target}) directly in {where}: side effects outside a step "
                    "run again on resume; wrap it in step('name', fn, ...)",
                    site.node,
                    chain,
                )
            )


def _lambda_captures(lam: cst.Lambda, names: set[str]) -> bool:
    found = False

    class _V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            if node.value in names:
                found = True

    lam.body.visit(_V())
    return found


def _code(index: ModuleIndex, node: cst.CSTNode) -> str:
    return index.module.code_for_node(node).strip()


def _env_finding(
    what: str, where: str, node: cst.CSTNode, chain: list[tuple[str, cst.CSTNode]]
) -> DetFinding:
    return DetFinding(
        "OP205",
        f"environment read ({what}) in {where} outside a step: a resumed run may see a "
        "different environment; read it in a step or pass it as an argument",
        node,
        chain,
    )


def _instance(
    index: ModuleIndex,
    fn: FunctionInfo | None,
    expr: cst.BaseExpression,
    shadowed: set[str],
    made: Callable[[cst.BaseExpression], str | None],
    depth: int = 0,
) -> str | None:
    """What ``made`` says the object ``expr`` evaluates to is (an Agent class, a model
    runtime): ``made(expr)`` itself (``Agent(...)``), a name bound to such a value in the
    function ``fn`` (``None``: module level) or at module level (one of its values is
    enough: it may be one), a class attribute (``W.bot``, ``self.bot``: see
    :func:`_class_attribute`), an instance attribute a method assigns one to
    (``self.bot = Bot()`` in ``__init__``: :func:`_instance_attribute`), or a call of a function of the module that returns one
    (``make_bot()``), followed up to five links."""
    head = head_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    found = made(expr) if head is None or head not in shadowed else None
    if found is not None or depth > 4:
        return found
    if isinstance(expr, cst.Name):
        annotation = _annotation(fn, expr.value) if expr.value in shadowed else None
        if annotation is not None:  # ``rt: Runtime``: as if made by ``Runtime(...)``
            found = made(cst.Call(func=annotation))
            if found is not None:
                return found
        scope = fn if fn is not None and expr.value in fn.bindings else None
        if scope is None and expr.value in shadowed:
            return None
        values = scope.bindings[expr.value] if scope else index.module_assigns.get(expr.value, [])
        inner = scope.locals() if scope else set()
        for value in values:
            found = _instance(index, scope, value, inner, made, depth + 1) if value else None
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.Attribute):
        cls, of_instance = _receiver(index, fn, expr.value, shadowed)
        value = _class_attribute(index, cls, expr.attr.value) if cls else None
        if value is not None:
            return _instance(index, None, value, set(), made, depth + 1)
        if cls is None or not of_instance:
            return None
        for method_q, assigned in _instance_attribute(index, cls, expr.attr.value):
            method = index.functions.get(method_q)
            if method is None or assigned is None:
                continue
            found = _instance(index, method, assigned, method.locals(), made, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.Call):
        factory: FunctionInfo | None = None
        if fn is not None:
            factory = _callee(index, fn, expr.func)
        elif isinstance(expr.func, cst.Name) and expr.func.value not in shadowed:
            factory = index.function_at_module(expr.func.value)
        if factory is None:
            return None
        for ret in factory.returns:
            found = (
                _instance(index, factory, ret.value, factory.locals(), made, depth + 1)
                if ret.value
                else None
            )
            if found is not None:
                return found
    return None


def _annotation(fn: FunctionInfo | None, name: str) -> cst.BaseExpression | None:
    """The class a parameter ``name`` of ``fn`` is annotated with (``rt: Runtime``,
    ``bot: op.Agent``), written as a name or attribute (a string annotation is not read)."""
    if fn is None or name not in fn.params:
        return None
    params = fn.node.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.name.value == name and p.annotation is not None:
            value = p.annotation.annotation
            return value if isinstance(value, (cst.Name, cst.Attribute)) else None
    return None


def _class_attribute(index: ModuleIndex, cls_name: str, attr: str) -> cst.BaseExpression | None:
    """The value ``attr`` is bound to in the body of the class ``cls_name`` or of its
    nearest base class binding it (``bot = Bot()``): only when that is its one binding
    there, it is no method, and the module assigns no ``x.<attr>`` anywhere (an instance
    attribute of that name may hide it)."""
    if any(
        isinstance(node, cst.Attribute) and node.attr.value == attr
        for _, _, node in index.mutations
    ):
        return None
    for owner in _class_chain(index, cls_name):
        info = index.classes[owner]
        if attr in info.methods or attr in info.rebound:
            return None
        if attr in info.attributes:
            return info.attributes[attr]
    return None


def _receiver(
    index: ModuleIndex, fn: FunctionInfo | None, expr: cst.BaseExpression, shadowed: set[str]
) -> tuple[str | None, bool]:
    """The class of the module whose attribute ``expr.<attr>`` reads, and whether ``expr``
    is an instance of it (its ``self.<attr>`` assignments count) or the class itself:
    ``self`` / ``cls`` in a method, ``Team``, ``Team()``, or a name bound to ``Team()``
    (one of its values is enough, as for names)."""
    if isinstance(expr, cst.Call):
        made = expr.func
        if isinstance(made, cst.Name) and made.value in index.classes:
            if made.value not in shadowed:
                return made.value, True
        return None, False
    if not isinstance(expr, cst.Name):
        return None, False
    owner = expr.value
    if owner in index.classes and owner not in shadowed:
        return owner, False
    if fn is not None and owner in SELF and fn.class_name:
        return fn.class_name, owner == "self"
    scope = fn if fn is not None and owner in fn.bindings else None
    if scope is None and owner in shadowed:
        return None, False
    values = scope.bindings[owner] if scope else index.module_assigns.get(owner, [])
    inner = scope.locals() if scope else set()
    for value in values:
        if isinstance(value, cst.Call):
            cls, of_instance = _receiver(index, scope, value, inner)
            if cls is not None:
                return cls, of_instance
    return None, False


def _instance_attribute(
    index: ModuleIndex, cls_name: str, attr: str
) -> list[tuple[str, cst.BaseExpression | None]]:
    """The values ``self.<attr>`` is assigned in the methods of ``cls_name`` and its base
    classes (``self.bot = Bot()`` in ``__init__``): any of them may be the one it holds."""
    return [
        pair
        for owner in _class_chain(index, cls_name)
        for pair in index.classes[owner].instance_attributes.get(attr, ())
    ]


def _agent_instance(
    index: ModuleIndex, fn: FunctionInfo | None, expr: cst.BaseExpression, shadowed: set[str]
) -> str | None:
    """The Agent class ``expr`` is an instance of: ``Agent(...)``, ``Writer()``, a name bound
    to one, a class attribute holding one, a call of a factory returning one."""
    return _instance(index, fn, expr, shadowed, index.agent_class_of_call)


def _runtime_made(index: ModuleIndex, expr: cst.BaseExpression) -> str | None:
    """``create_runtime(...)`` / ``Runtime(...)`` of ``openprogram``: what makes it."""
    if not isinstance(expr, cst.Call):
        return None
    imported = index.resolve_imported(expr.func) or ""
    last = imported.rsplit(".", 1)[-1]
    return imported if imported.startswith("openprogram.") and last in RUNTIME_MAKERS else None


def agent_instance_at(
    index: ModuleIndex, function: str | None, expr: cst.BaseExpression
) -> str | None:
    """The Agent class ``expr`` is an instance of, where it is written: in the function
    ``function`` (qualname; its locals shadow the module's names) or at module level."""
    fn = index.functions.get(function) if function else None
    return _agent_instance(index, fn, expr, fn.locals() if fn is not None else set())


def _agent_class(index: ModuleIndex, expr: cst.BaseExpression, shadowed: set[str]) -> bool:
    """``Writer`` (a class of this module deriving from Agent) or the imported ``Agent``."""
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return False
    head: cst.BaseExpression = expr
    while isinstance(head, cst.Attribute):
        head = head.value
    if isinstance(head, cst.Name) and head.value in shadowed:
        return False
    target = index.resolve(expr)
    if target is None:
        return False
    if target in index.classes:
        return index.is_agent_class(target)
    return is_agent_base(target) and index.resolve_imported(expr) is not None


def runtime_at(index: ModuleIndex, function: str | None, expr: cst.BaseExpression) -> str | None:
    """What made the model runtime ``expr`` is, where it is written (``function``'s
    qualname, None at module level): ``create_runtime(...)`` / ``Runtime(...)`` of
    ``openprogram``, a name bound to one, a parameter annotated ``Runtime``... as
    :func:`_instance` follows them; None when ``expr`` is not known to be a runtime."""
    fn = index.functions.get(function) if function else None
    shadowed = fn.locals() if fn is not None else set()
    return _instance(index, fn, expr, shadowed, lambda e: _runtime_made(index, e))


def callee_at(index: ModuleIndex, site: CallSite) -> str | None:
    """The import-resolved callee of ``site`` (``op.decision.make``), also through a name
    bound to an imported callable (``pick = decision.make; pick(...)``), as OP206 sees it."""
    fn = index.functions.get(site.function) if site.function else None
    shadowed = fn.locals() if fn is not None else set()
    found = index.resolve_imported(site.node.func, shadowed)
    return found if found is not None else _aliased_call(index, fn, site.node.func, shadowed)


def _aliased_call(
    index: ModuleIndex, fn: FunctionInfo | None, func: cst.BaseExpression, shadowed: set[str]
) -> str | None:
    """The imported callable a name bound to one names (``dm = op.decision.make`` in the
    function, or at module level when no local shadows it), followed one link."""
    if not isinstance(func, cst.Name):
        return None
    name = func.value
    if name in shadowed:
        values = list(fn.bindings.get(name, ())) if fn is not None else []
        inner = shadowed
    elif name in index.imports or index.function_at_module(name) is not None:
        return None
    else:
        values = [v for v in index.module_assigns.get(name, ()) if v is not None]
        inner = set()
    for value in values:
        if isinstance(value, (cst.Name, cst.Attribute)):
            found = index.resolve_imported(value, inner)
            if found is not None:
                return found
    return None


def _agent_method_requests(index: ModuleIndex, cls_name: str, method: str) -> bool:
    """Whether ``method`` called on an instance (or the class) ``cls_name`` of an Agent
    sends the model a request by itself: not a method the module's classes define (its
    body runs in a call scope that records a ``code`` node and is followed as a helper,
    as ``self.method()`` is), not one of ``Agent``'s own that sends none, nor a name no
    class defines (an ``AttributeError``); a method a base class of another module may
    define is taken as one."""
    if cls_name in index.classes and _lookup_method(index, cls_name, method) is not None:
        return False
    if method in AGENT_REQUESTS:
        return True
    if method in AGENT_OTHER_METHODS:
        return False
    chain = _class_chain(index, cls_name)
    return any(
        base is None or (base not in index.classes and not is_agent_base(base))
        for name in chain
        for base in index.classes[name].bases
    )


def _side_effect(
    index: ModuleIndex, fn: FunctionInfo, site: CallSite, imported: str, shadowed: set[str]
) -> str | None:
    """What side effect the call is (model call, network, file, process), if any."""
    target = site.target or ""
    func = site.node.func
    last = target.rsplit(".", 1)[-1]
    if not imported:  # dm = op.decision.make; dm(...)
        imported = _aliased_call(index, fn, func, shadowed) or ""
        last = imported.rsplit(".", 1)[-1] if imported else last
    if _model_callable(imported):
        if last in PRIMITIVES and not _judged_by_model(index, fn, site.node, shadowed):
            return None  # judged in Python; what it runs is checked as orchestration
        return "model call"
    if target == "self" or (last == "exec" and "runtime" in imported):
        return "model call"
    # an Agent instance called (bot(q), make_bot()(q), self.bot(q) with a class attribute)
    if _agent_instance(index, fn, func, shadowed) is not None:
        return "model call"
    # calls through Agent instances, Agent classes and their methods; a runtime's requests
    owner = func.value if isinstance(func, cst.Attribute) else None
    method = func.attr.value if isinstance(func, cst.Attribute) else ""
    if isinstance(owner, cst.Name) and owner.value in SELF:
        owner = None  # own methods are followed as helpers
    if owner is not None:
        agent = _agent_instance(index, fn, owner, shadowed)
        if agent is None and _agent_class(index, owner, shadowed):
            agent = index.resolve(owner)
        if agent is not None and _agent_method_requests(index, agent, method):
            return "model call"
        if agent is None and (
            method in RUNTIME_REQUESTS
            and _instance(index, fn, owner, shadowed, lambda e: _runtime_made(index, e))
        ):
            return "model call"
    root = imported.split(".")[0]
    if root in NETWORK_ROOTS:
        return "network I/O"
    if imported in FILE_CALLS or (
        target == "open" and site.head not in shadowed and "open" not in index.defined
    ):
        return "file I/O"
    if root in ("subprocess", "shutil") or imported in PROCESS_CALLS:
        return "subprocess or file-system call"
    if isinstance(func, cst.Attribute) and func.attr.value in FILE_METHODS:
        return "file I/O"
    if owner is not None and _instance(
        index, fn, owner, shadowed, lambda e: _database_opened(index, e)
    ):
        return "file I/O"
    return None


def _database_opened(index: ModuleIndex, expr: cst.BaseExpression) -> str | None:
    """``sqlite3.connect(...)`` (a :data:`DATABASE_OPENERS` call): what opens it."""
    if not isinstance(expr, cst.Call):
        return None
    imported = index.resolve_imported(expr.func) or ""
    return imported if imported in DATABASE_OPENERS else None


def _nondeterministic(imported: str) -> bool:
    """Whether the import-resolved callable ``imported`` returns a different value each run."""
    parts = imported.split(".")
    return imported in NONDET_EXACT or (
        parts[0] in NONDET_ROOTS and len(parts) > 1 and imported not in DETERMINISTIC_EXACT
    )


def _model_callable(imported: str) -> bool:
    """Whether the import-resolved callable ``imported`` sends the model a request."""
    last = imported.rsplit(".", 1)[-1]
    return imported.startswith("openprogram.") and (
        last in MODEL_CALLS or imported.endswith("decision.make")
    )


#: Calls that call the callables handed to them (the builtins by name; the others as
#: imported): an object that is callable but is mostly handed over as data (an Agent
#: instance, ``self``) counts as called only when handed to one of these. ``sorted`` /
#: ``min`` / ``max`` / ``list.sort`` call only their ``key``.
CALLING_BUILTINS = frozenset({"map", "filter"})
CALLING_IMPORTS = frozenset(
    {
        "functools.partial",
        "functools.reduce",
        "itertools.starmap",
        "itertools.filterfalse",
        "itertools.takewhile",
        "itertools.dropwhile",
        "itertools.groupby",
        "itertools.accumulate",
    }
)
KEY_CALLERS = frozenset({"sorted", "min", "max", "sort"})


def _calls_argument(index: ModuleIndex, site: CallSite, arg: cst.Arg, shadowed: set[str]) -> bool:
    """Whether the call ``site`` calls the argument ``arg`` handed to it: a positional
    argument of ``map`` / ``filter`` / ``functools.partial`` / ``functools.reduce``..., the
    ``key`` of ``sorted`` / ``min`` / ``max`` / ``xs.sort``."""
    func = site.node.func
    imported = index.resolve_imported(func, shadowed) or ""
    builtin = (
        isinstance(func, cst.Name)
        and func.value not in index.defined
        and _builtin_callable(index, func.value, shadowed)
    )
    name = func.value if builtin and isinstance(func, cst.Name) else ""
    if arg.keyword is not None and arg.keyword.value == "key":
        method = isinstance(func, cst.Attribute) and func.attr.value == "sort"
        return name in KEY_CALLERS or method
    if arg.keyword is not None:
        return False
    return name in CALLING_BUILTINS or imported in CALLING_IMPORTS


def _check_passed(
    index: ModuleIndex,
    fn: FunctionInfo,
    site: CallSite,
    where: str,
    out: list[DetFinding],
    chain: list[tuple[str, cst.CSTNode]],
    shadowed: set[str],
) -> None:
    """OP205/OP206 on a non-deterministic or side-effecting callable handed to a call that
    may call it in the orchestration body (``map(random.choice, xs)``, ``map(llm, xs)``,
    ``map(open, paths)``): what calling it there would be (:func:`_side_effect`), so the
    same functions count. A callable object that is mostly handed over as data (an Agent
    instance such as ``bot``, ``self.critic`` or ``self``) counts only where the call is
    known to call it (``map(bot, xs)``, not ``isinstance(bot, Agent)``)."""
    callee = _code(index, site.node.func)
    args = {id(a.value): a for a in site.args}
    for expr in passed_callables(index, site, shadowed):
        imported = index.resolve_imported(expr, shadowed) or ""
        if _nondeterministic(imported):
            out.append(
                DetFinding(
                    "OP205",
                    f"non-deterministic callable {imported} passed to {callee}() in {where} "
                    "outside a step: a resumed run would see a different value; move it "
                    "into a step",
                    expr,
                    chain,
                )
            )
            continue
        called = CallSite(cst.Call(func=expr), index.resolve(expr), fn.qualname, head_name(expr))
        effect = _side_effect(index, fn, called, imported, shadowed)
        if effect is None:
            continue
        instance = called.target in SELF or _agent_instance(index, fn, expr, shadowed)
        if instance and not _calls_argument(index, site, args[id(expr)], shadowed):
            continue
        out.append(
            DetFinding(
                "OP206",
                f"{effect} ({_code(index, expr)} passed to {callee}) directly in "
                f"{where}: side effects outside a step run again on resume; wrap it "
                "in step('name', fn, ...)",
                expr,
                chain,
            )
        )


def _called(index: ModuleIndex, site: CallSite, shadowed: set[str]) -> str:
    """The imported callable ``site`` calls: its callee resolved through the imports, or
    what the ``functools.partial`` it calls wraps (``ask = partial(llm, system=s)``,
    :func:`index.bind_partials`); ``""`` when neither."""
    found = index.resolve_imported(site.node.func, shadowed)
    if found is None and site.partial:
        found = site.target
    return found or ""


def _check_orchestration(
    index: ModuleIndex,
    fn: FunctionInfo,
    where: str,
    out: list[DetFinding],
    chain: list[tuple[str, cst.CSTNode]],
    shadowed: set[str],
) -> None:
    for node in fn.env_reads:
        out.append(_env_finding("os.environ", where, node, chain))
    for site in run_now_sites(index, fn, shadowed):
        target = site.target or ""
        imported = _called(index, site, shadowed)
        _check_passed(index, fn, site, where, out, chain, shadowed)
        # OP205 non-determinism
        if _nondeterministic(imported):
            out.append(
                DetFinding(
                    "OP205",
                    f"non-deterministic call {imported}() in {where} outside a step: a "
                    "resumed run would see a different value; move it into a step",
                    site.node,
                    chain,
                )
            )
            continue
        if imported in ENV_CALLS:
            out.append(_env_finding(imported + "()", where, site.node, chain))
            continue
        # OP206 side effects
        effect = _side_effect(index, fn, site, imported, shadowed)
        if effect is not None:
            out.append(
                DetFinding(
                    "OP206",
                    f"{effect} ({target or _code(index, site.node.func)}) directly in {where}: "
                    "side effects outside "
                    "a step run again on resume; wrap it in step('name', fn, ...)",
                    site.node,
                    chain,
                )
            )
        # OP207 step names
        kind = step_kind(site)
        if kind in ("step", "workflow"):
            args = [a for a in site.args if a.keyword is None and a.star == ""]
            name_args = [a for a in site.args if a.keyword and a.keyword.value == "name"]
            name_arg = args[0].value if args else (name_args[0].value if name_args else None)
            if name_arg is not None and not is_literal_string(name_arg):
                out.append(
                    DetFinding(
                        "OP207",
                        f"{kind} name is not a literal string in {where}: the step identity "
                        "would depend on data; use a literal name (repeats are fine)",
                        name_arg,
                        chain,
                    )
                )
        elif kind == "parallel" and site.args:
            arg = site.args[0].value
            if isinstance(arg, _CONTROL_FLOW_BRANCHES):
                pass  # a list of callables: the control-flow parallel, no branch names
            elif isinstance(arg, cst.Dict):
                for el in arg.elements:
                    if not isinstance(el, cst.DictElement) or not is_literal_string(el.key):
                        node = el.key if isinstance(el, cst.DictElement) else el
                        out.append(
                            DetFinding(
                                "OP207",
                                f"parallel branch name is not a literal string in {where}",
                                node,
                                chain,
                            )
                        )
            else:
                out.append(
                    DetFinding(
                        "OP207",
                        f"parallel branches are not a literal dict in {where}: branch names "
                        "must be literal strings",
                        arg,
                        chain,
                    )
                )
        # OP204 closures handed to steps
        for expr in _step_callables(site) if kind else []:
            if isinstance(expr, cst.Lambda) and _lambda_captures(expr, fn.locals() - fn.params):
                out.append(
                    DetFinding(
                        "OP204",
                        f"lambda passed to {kind} in {where} captures local state: pass "
                        "values as step arguments instead",
                        expr,
                        chain,
                    )
                )


def compute_for(
    index: ModuleIndex,
    roots: Iterable[FunctionInfo],
    *,
    chain: Sequence[tuple[str, cst.CSTNode]] = (),
    orchestration: bool = True,
    body: str = "",
) -> list[DetFinding]:
    """All OP201–OP208 findings for the given resumable functions (deduplicated).

    With a ``chain`` the roots are helpers reached that way from a resumable function of
    another module (in its orchestration body unless ``orchestration`` is False; in a
    workflow body or durable parallel branch there when ``body`` says which)."""
    out: list[DetFinding] = []
    mutated = _mutated_globals(index)
    done: set[tuple[str, bool]] = set()
    for root in roots:
        if not chain and (root.is_async or root.yields):
            what = "an async function" if root.is_async else "a generator"
            out.append(
                DetFinding(
                    "OP208",
                    f"'{root.qualname}' is resumable but is {what}: resumable "
                    "orchestrations must be plain synchronous functions",
                    root.node.name,
                )
            )
        scope = build_scope(index, root, chain, orchestration, body)
        for orch, table in ((True, scope.orchestration), (False, scope.dependencies)):
            for qual, path in table.items():
                if (qual, orch) in done:
                    continue
                done.add((qual, orch))
                fn = index.functions[qual]
                _check_function(index, fn, orch, mutated, out, path)
                if not orch and qual in scope.workflow_bodies:
                    _check_workflow_body(index, fn, out, path, scope.workflow_bodies[qual])
    seen: set[tuple[str, int]] = set()
    unique: list[DetFinding] = []
    for f in out:
        key = (f.code, id(f.node))
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def step_usage(index: ModuleIndex, within: Collection[str] | None = None) -> list[DetFinding]:
    """OP212/OP213 on every literal ``step``/``workflow``/``parallel`` call of the module
    (``within``: only those in these functions, by qualname): the runtime's own rules
    (:mod:`openprogram.contract.steps`), same code and message."""
    out: list[DetFinding] = []
    for site in index.calls:
        kind = step_kind(site)
        if kind is None or (within is not None and site.function not in within):
            continue
        named: list[tuple[str, cst.BaseExpression, list[cst.BaseExpression]]] = []
        if kind in ("step", "workflow"):
            args = [a for a in site.args if a.keyword is None and a.star == ""]
            if args:
                named.append((kind, args[0].value, _step_callables(site)))
        elif site.args and isinstance(site.args[0].value, cst.Dict):
            for el in site.args[0].value.elements:
                if isinstance(el, cst.DictElement):
                    v = el.value
                    fn_expr = v.elements[0].value if isinstance(v, cst.Tuple) and v.elements else v
                    named.append(("parallel branch", el.key, [fn_expr]))
        fn = index.functions.get(site.function) if site.function else None
        for what, name_node, fns in named:
            if not is_literal_string(name_node):
                continue
            name = string_value(name_node)
            if name is None:
                continue
            problem = step_rules.name_problem(what, name)
            if problem is not None:
                out.append(DetFinding(problem[0], problem[1], name_node))
                continue
            for expr in fns:
                if isinstance(expr, cst.Lambda):
                    problem = step_rules.lambda_problem(what, name)
                elif fn is not None and isinstance(expr, cst.Name) and expr.value in fn.locals():
                    nested = index.functions.get(f"{fn.qualname}.<locals>.{expr.value}")
                    if nested is None:
                        continue
                    problem = step_rules.nested_problem(what, name, nested.qualname)
                else:
                    continue
                out.append(DetFinding(problem[0], problem[1], expr))
    return out


def compute(ctx: Context) -> list[DetFinding]:
    return [
        *compute_for(ctx.index, resumable_functions(ctx.index)),
        *step_usage(ctx.index),
    ]


def findings_for(ctx: Context, code: str) -> list[DetFinding]:
    found: list[DetFinding] = ctx.shared("determinism", compute)
    return [f for f in found if f.code == code]


# ------------------------------------------------------------------ OP209


def _evaluation_order(node: cst.CSTNode) -> Iterable[cst.Call]:
    """The calls in ``node`` in the order Python evaluates them: a call after its callee
    expression (the receiver of ``x.m()``) and its arguments, positional ones (``*args``
    too) before keyword ones (``**kwargs`` too), nested calls first; the value of an
    assignment before its targets; the condition of ``a if c else b`` first; a
    comprehension's iterable before its element. Elsewhere in source order."""
    children: Sequence[cst.CSTNode]
    if isinstance(node, cst.Call):
        positional = [a for a in node.args if a.keyword is None and a.star != "**"]
        named = [a for a in node.args if a.keyword is not None or a.star == "**"]
        for child in (node.func, *positional, *named):
            yield from _evaluation_order(child)
        yield node
        return
    if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, cst.Assign) else (node.target,)
        children = (node.value, *targets)
    elif isinstance(node, cst.IfExp):
        children = (node.test, node.body, node.orelse)
    elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        children = (node.for_in, node.elt)
    elif isinstance(node, cst.DictComp):
        children = (node.for_in, node.key, node.value)
    elif isinstance(node, cst.CompFor):
        children = (node.iter, node.target, *node.ifs, *filter(None, [node.inner_for_in]))
    else:
        children = node.children
    for child in children:
        yield from _evaluation_order(child)


def static_step_sequence(
    index: ModuleIndex, fn: FunctionInfo, receiver: str | None = None
) -> list[tuple[str, cst.CSTNode]]:
    """Literal step/workflow/parallel names in the order they run, helpers inlined: the
    calls of a body in Python's evaluation order (:func:`_evaluation_order`: in
    ``step("last", last, self.hook(a))`` the steps of ``hook`` come before "last"), the
    same-module functions and methods the body calls followed as OP205/OP206 follow them
    (:func:`_callees`: ``helper()``, ``self.x()``, ``Helper.x()``, ``bot.x()`` on an
    instance of a class of the module), a method ``fn`` run on an instance of the class
    ``receiver`` (``self.hook()`` is that class's ``hook``, not every override's)."""
    out: list[tuple[str, cst.CSTNode]] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()

    def in_order(f: FunctionInfo) -> list[CallSite]:
        rank = {id(call): i for i, call in enumerate(_evaluation_order(f.node))}
        return sorted(f.calls, key=lambda site: rank.get(id(site.node), len(rank)))

    def walk(f: FunctionInfo, receivers: tuple[str, ...]) -> None:
        if (f.qualname, receivers) in seen:
            return
        seen.add((f.qualname, receivers))
        for site in in_order(f):
            kind = step_kind(site)
            if kind in ("step", "workflow"):
                args = [a for a in site.args if a.keyword is None and a.star == ""]
                if args:
                    name = string_value(args[0].value)
                    if name is not None:
                        out.append((name, site.node))
            elif kind == "parallel":
                out.append(("parallel", site.node))
            else:
                for callee, on in _callees(index, f, site.node.func, receivers):
                    walk(callee, on)

    walk(fn, (receiver,) if receiver is not None else ())
    return out


def _runs(n: int) -> str:
    return f"{n} unfinished run" + ("" if n == 1 else "s")


def _first_new_step(
    static: Sequence[tuple[str, cst.CSTNode]],
    recorded_names: set[str],
    after: int,
    before: int,
) -> int | None:
    """Index of the first static step in ``(after, before)`` no run recorded (a rename)."""
    for i in range(after + 1, before):
        if static[i][0] not in recorded_names:
            return i
    return None


#: How a recorded run is broken: (node, kind, recorded name, current name)
Break = tuple[cst.CSTNode, str, str, str]


def _breaks(
    fn: FunctionInfo,
    static: Sequence[tuple[str, cst.CSTNode]],
    runs_names: Sequence[Sequence[str]],
    rec_names: Sequence[str],
) -> Break | None:
    """How the static step sequence ``static`` breaks the run that recorded ``rec_names``
    (``runs_names``: the names of every run, which tell where a gone step used to be)."""
    first_pos: dict[str, int] = {}
    last_pos: dict[str, int] = {}
    for i, (n, _node) in enumerate(static):
        first_pos.setdefault(n, i)
        last_pos[n] = i
    all_recorded = {n for names in runs_names for n in names}
    missing = [n for n in rec_names if n not in first_pos]
    if missing:
        gone = missing[0]
        # where the step used to be: after the steps any run recorded before it and
        # before those recorded after it; a step there that no run knows is its rename
        before = {n for names in runs_names if gone in names for n in names[: names.index(gone)]}
        after = {n for names in runs_names if gone in names for n in names[names.index(gone) + 1 :]}
        lo = max((last_pos[n] for n in before if n in last_pos), default=-1)
        hi = min(
            (first_pos[n] for n in after if n in first_pos and first_pos[n] > lo),
            default=len(static),
        )
        new_at = _first_new_step(static, all_recorded, lo, hi)
        if new_at is None:
            return (fn.node.name, "deleted", gone, "")
        return (static[new_at][1], "renamed", gone, static[new_at][0])
    order = [first_pos[n] for n in rec_names]
    for a, b, name in zip(order, order[1:], rec_names[1:], strict=False):
        if b < a:
            return (static[b][1], "moved", name, name)
    return None


def compare_recorded(
    index: ModuleIndex,
    fn: FunctionInfo,
    recorded: Sequence[Sequence[StepIdentity]],
) -> list[DetFinding]:
    """OP209: recorded step identities that the current source no longer produces.

    One finding per change, at the changed ``step(...)`` call (a renamed step, or the step
    that now runs too early) or, for a deleted step, on the function name; the message
    names how many of the recorded runs (one sequence per run) the change breaks. A
    method is compared with the class its run's recorded entry runs it on
    (``prog.py:Smart.report``, ``report = Smart().report``: :func:`program.entry_receiver`);
    for a run whose entry does not say (called from Python, or a plain sequence), once per
    class of the module it may run on, its own and each subclass (``self.hook()`` is that
    class's ``hook``; the store keeps the defining class's qualname for a run on a
    subclass): such a run is broken when no class produces its steps, and reported as the
    class missing the fewest of them sees it (a rename before a deletion).
    """
    from openprogram_analyzers.program import entry_receiver

    owner = fn.class_name
    candidates: Sequence[str | None] = (
        _subclasses(index, owner) if owner is not None and owner in index.classes else (None,)
    )
    statics = {cls: static_step_sequence(index, fn, cls) for cls in candidates}
    runs_names = [list(dict.fromkeys(name for name, _occ in run)) for run in recorded]
    # (node, kind, recorded name, current name) -> number of runs broken that way
    broken: dict[tuple[int, str, str, str], int] = {}
    nodes: dict[int, cst.CSTNode] = {}
    for run, rec_names in zip(recorded, runs_names, strict=True):
        # the entry a run recorded names the class it ran on (``prog.py:Smart.report``)
        entry = getattr(run, "entry", None)
        on = entry_receiver(index, entry.rpartition(":")[2]) if entry else None
        found: list[tuple[tuple[int, bool], Break]] = []
        for static in [statics[on]] if on in statics else statics.values():
            how = _breaks(fn, static, runs_names, rec_names)
            if how is None:
                break
            known = {n for n, _node in static}
            # the class the run most likely ran on: missing the fewest of its steps, and
            # one with a new step where the missing one was (a rename) before a deletion
            found.append(((sum(n not in known for n in rec_names), how[1] == "deleted"), how))
        else:
            node, kind, old, new = min(found, key=lambda f: f[0])[1]
            key = (id(node), kind, old, new)
            nodes[id(node)] = node
            broken[key] = broken.get(key, 0) + 1
    out: list[DetFinding] = []
    for (node_id, kind, old, new), runs in broken.items():
        if kind == "deleted":
            message = (
                f"step {old!r} recorded for '{fn.qualname}' no longer exists: "
                f"this edit breaks {_runs(runs)}"
            )
        elif kind == "renamed":
            message = (
                f"step {new!r} replaces step {old!r} recorded for '{fn.qualname}': "
                f"this edit breaks {_runs(runs)}"
            )
        else:
            message = (
                f"step {old!r} now runs before steps recorded earlier for '{fn.qualname}': "
                f"this edit breaks {_runs(runs)}"
            )
        out.append(DetFinding("OP209", message, nodes[node_id]))
    return out


# ------------------------------------------------------------------ engine entry points


def check_resumable(source: str, path: str, function_qualname: str) -> list[Finding]:
    """Pre-run check of a resumable function (OP001, OP201–OP208), as lint findings."""
    from openprogram_analyzers.analysis import analyze_for_engine

    return analyze_for_engine(source, path, resumable=function_qualname)


def check_planner_code(
    source: str, injected_names: Iterable[str] = (), path: str = "<planner>"
) -> list[Finding]:
    """Static check of Planner-written code (SPEC §2.9); see :mod:`openprogram_analyzers.planner`.

    Only the ``injected_names`` and :data:`~openprogram_analyzers.planner.WORKFLOW_BUILTINS`
    may be used, nothing imported, and exactly one zero-argument ``def workflow()``
    defined: findings ``OP001`` (parse error), ``OP201`` (dynamic code), ``OP210``
    (imports, names, shape) and ``OP211`` (dunder names and attributes).
    """
    from openprogram_analyzers.planner import analyze_planner

    return analyze_planner(source, path, injected_names)
