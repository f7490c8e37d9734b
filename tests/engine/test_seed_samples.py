"""The seeds' code samples, run as written against a loopback OpenAI-wire model server.

Seeds ``next-step-decision.zh.md`` (entry one: ``decision.make`` inside an Agent method;
entry two: ``agent(choices=...)``) and ``agent-and-context.zh.md`` (direct call and Agent
class, Context content, explicit session lifecycle, method configuration) and
``workflow-control-primitives.zh.md`` (the Planner's migration ``workflow()``, ``parallel``
and ``repeat_until``). Each sample is
copied verbatim; only the helper functions the seed leaves undefined are filled in, the
model comes from ``OPENPROGRAM_MODEL`` as a user configures it, and (for the explicit
session) the store root is a temporary folder instead of ``/var/lib/myapp/sessions``.
The ``openprogram run`` tests run the same Program file in a real subprocess.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, tool_call

_restore_registry = agent_server._restore_registry
chat = agent_server.chat

ENTRY_ONE = '''
from openprogram import Agent, decision


def analyze_sentiment(text: str) -> str:
    """Analyze the sentiment of the message."""
    return f"sentiment of {text!r}: positive"


def fallback_reply() -> str:
    """Reply without analysis."""
    return "FALLBACK"


# --- seed next-step-decision.zh.md, entry one, verbatim ---
class ExampleAgent(Agent):
    method_options = {
        'route_message': {'tool': True},
    }

    def route_message(self, msg: str) -> str:
        return decision.make("Pick one way to handle this message.", {
            "analyze":  analyze_sentiment,        # 一个函数
            "fallback": fallback_reply,           # 一个函数
            "done":     "CONVERSATION_OVER",      # 一个值
        })

_example_agent = ExampleAgent()
route_message = _example_agent.route_message
# --- end of the seed sample ---

PROGRAM_ENTRIES = ["route_message"]
'''

ENTRY_TWO = '''
from openprogram import Agent, agent
from openprogram.programs import function

LOOKED_UP = []


@function(toolset="default")
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    LOOKED_UP.append(order_id)
    return f"order {order_id}: paid twice"


def issue_refund(order_id: str, amount: float) -> dict:
    """Refund an order."""
    return {"refunded": order_id, "amount": amount}


def escalate_to_human(reason: str) -> dict:
    """Hand the ticket to a person."""
    return {"escalated": reason}


# --- seed next-step-decision.zh.md, entry two, verbatim ---
class ExampleAgent(Agent):
    method_options = {
        'handle_ticket': {'tool': True},
    }

    def handle_ticket(self, ticket: str) -> dict:
        """Read the ticket, look things up, then decide which flow to route to."""
        return agent(
            f"Handle this ticket: {ticket}",
            toolset="default",          # 之前：模型用 tool 做调研、执行命令
            choices={                   # 收尾：返回必须是其中之一
                "refund":    issue_refund,
                "escalate":  escalate_to_human,
                "close":     {"status": "closed"},
            },
        )

_example_agent = ExampleAgent()
handle_ticket = _example_agent.handle_ticket
# --- end of the seed sample ---

PROGRAM_ENTRIES = ["handle_ticket"]
'''


def load(path: Path, source: str) -> types.ModuleType:
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"seed_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def configured(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    """The model configured the way a user does: OPENPROGRAM_MODEL + OPENAI_BASE_URL."""
    for key in list(os.environ):
        if key.startswith(("OPENPROGRAM_", "OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:test-model")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    return chat


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``openprogram ...`` in a subprocess with this process's model configuration."""
    env = {k: v for k, v in os.environ.items()}
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def decide(call: dict[str, Any]) -> str:
    return f"Looking at it.\n```json\n{json.dumps(call)}\n```"


# ------------------------------------------------ next-step-decision, entry one


def test_entry_one_decision_make_inside_a_method_needs_no_runtime(
    configured: ChatServer, tmp_path: Path
) -> None:
    module = load(tmp_path / "entry_one.py", ENTRY_ONE)
    configured.reply(decide({"call": "analyze", "text": "I love it"}), decide({"call": "done"}))
    assert module.route_message("I love it") == "sentiment of 'I love it': positive"
    assert module.route_message("bye") == "CONVERSATION_OVER"
    prompt = configured.user_texts(0)[-1]
    assert prompt.startswith("Pick one way to handle this message.")
    assert '"call": "analyze"' in prompt and "fallback()" in prompt


def test_entry_one_under_openprogram_run(configured: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "entry_one.py").write_text(ENTRY_ONE, encoding="utf-8")
    configured.reply(decide({"call": "fallback"}))
    proc = run_cli(
        "run", "entry_one.py:route_message", "--args", '{"msg": "hm"}', "--store", "st",
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "completed" and out["result"] == "FALLBACK"
    assert len(configured.requests) == 1


# ------------------------------------------------ next-step-decision, entry two


def test_entry_two_agent_choices_works_then_decides(configured: ChatServer, tmp_path: Path) -> None:
    module = load(tmp_path / "entry_two.py", ENTRY_TWO)
    configured.reply(
        tool_call("lookup_order", {"order_id": "A7"}),
        decide({"call": "refund", "order_id": "A7", "amount": 12.5}),
    )
    result = module.handle_ticket("charged twice for A7")
    assert result == {"refunded": "A7", "amount": 12.5}
    assert module.LOOKED_UP == ["A7"]
    assert "lookup_order" in configured.tool_names(0)
    first = configured.user_texts(0)
    assert first[-1].startswith("Handle this ticket: charged twice for A7")
    assert "finish with your decision" in first[-1]  # DECISION_FINISH_INSTRUCTION
    assert configured.tool_results(1) == ["order A7: paid twice"]


def test_entry_two_under_openprogram_run(configured: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "entry_two.py").write_text(ENTRY_TWO, encoding="utf-8")
    configured.reply(decide({"call": "close"}))
    proc = run_cli(
        "run", "entry_two.py:handle_ticket", "--args", '{"ticket": "thanks"}', "--store", "st",
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "completed" and out["result"] == {"status": "closed"}


# ------------------------------------------------ agent-and-context


def test_direct_call_and_agent_class(configured: ChatServer) -> None:
    configured.reply("a summary", "an answer")
    # --- seed agent-and-context.zh.md, "直接调用与 Agent 类", verbatim ---
    from openprogram import Agent, agent

    answer = agent("Summarize this text", tools=[])

    class Researcher(Agent):
        instructions = "Return a short, factual answer."
        tools = []

        def prepare(self, question):
            """Remove surrounding whitespace."""
            return question.strip()

        def research(self, question):
            """Answer the prepared question."""
            return self(self.prepare(question))

    researcher = Researcher(model="configured-model")
    answer = researcher.research("A question")
    # --- end of the seed sample ---
    assert answer == "an answer"
    assert configured.requests[1]["model"] == "configured-model"
    assert configured.system(1) == "Return a short, factual answer."
    assert "tools" not in configured.requests[1]


def test_context_content_and_visibility(configured: ChatServer) -> None:
    configured.reply("ok")
    # --- seed agent-and-context.zh.md, "Context 内容与可见性", verbatim ---
    from openprogram import Agent, Context

    context = Context(
        {"notes": "Use the project terminology."},
        providers={"current_topic": lambda current: "Agent context"},
    )
    researcher = Agent(context=context, tools=[])
    # --- end of the seed sample ---
    assert researcher("Go") == "ok"
    texts = configured.user_texts(0)
    assert '<context name="notes">\nUse the project terminology.\n</context>' in texts
    assert '<context name="current_topic">\nAgent context\n</context>' in texts


def test_explicit_session_lifecycle(configured: ChatServer, tmp_path: Path) -> None:
    configured.reply("requirements: A, B", "reviewed")
    root = str(tmp_path / "sessions")
    # --- seed agent-and-context.zh.md, "显式会话生命周期" (store root: a temp folder) ---
    from openprogram import Agent, Context
    from openprogram.store import SessionNodeWriter, SessionStore

    store = SessionStore(root_path=root)
    store.create_session("research", agent_id="main")
    writer = SessionNodeWriter(store, "research")
    researcher = Agent(context=Context(store=writer), tools=[])
    try:
        first = researcher("List the project requirements.")
        second = researcher("Review the requirements from the previous call.")
    finally:
        store.close()
    # --- end of the seed sample ---
    assert (first, second) == ("requirements: A, B", "reviewed")
    history = agent_server.history_block(configured.user_texts(1))
    assert history is not None and "requirements: A, B" in history


def test_method_configuration_usage(configured: ChatServer) -> None:
    configured.reply("done")
    # --- seed agent-and-context.zh.md, "方法配置 / 用法", verbatim ---
    from openprogram import Agent
    from openprogram.agentic_programming import llm

    class ExampleAgent(Agent):
        method_options = {
            "f": {"tool": True},
        }

        def f(self, x: str) -> str:
            """One-line summary of what f does."""
            return llm([{"type": "text", "text": f"...{x}..."}])

    _example_agent = ExampleAgent()
    f = _example_agent.f
    # --- end of the seed sample ---
    assert f("x") == "done"
    assert configured.user_texts(0) == ["...x..."]
    assert f.spec["parameters"]["properties"] == {"x": {"type": "string"}}


# ------------------------------------------------ workflow-control-primitives

# The seed's primitives version of the migration workflow, as the Planner writes it.
PRIMITIVES_WORKFLOW = """
def workflow():
    # Step 1: 找文件，带验证和回溯
    files = validate_and_retry(
        action=lambda: agent("找 openprogram/auth/ 下所有相关文件"),
        check="文件数量 >= 5 且包含 oauth 相关",
        retry=lambda: agent("扩大范围，包括 openid、token 相关文件"),
        max_retries=2
    )

    # Step 2: 分析
    analysis = agent("分析这些文件的依赖关系和接口：" + files)

    # Step 3: 路由选择策略
    strategy = route(
        question="根据分析结果，选择迁移策略",
        options=["直接迁移", "重构后迁移", "分阶段迁移"],
        context=analysis
    )

    # Step 4: 条件分支执行
    plan = conditional(
        condition="选择的策略是否复杂（重构或分阶段）",
        context=strategy,
        if_true=lambda: agent("写详细的多阶段迁移计划：" + analysis),
        if_false=lambda: agent("写简要的直接迁移步骤：" + analysis)
    )

    return plan
"""

PRIMITIVES_SAMPLES = """
from openprogram import agent, parallel, repeat_until


def fan_out():
    results = parallel([
        lambda: agent("分析前端代码"),
        lambda: agent("分析后端代码"),
        lambda: agent("分析数据库"),
    ])
    # results = [前端分析结果, 后端分析结果, 数据库分析结果]
    return results


def keep_looking():
    complete_files = repeat_until(
        action=lambda: agent("找剩余文件"),
        condition="已找到所有相关文件",
        max_rounds=5
    )
    return complete_files
"""


def _prompt_of(body: dict[str, Any]) -> str:
    """The caller's own text of a request's last message (history blocks left out)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        content = content[-1]["text"]
    return str(content)


def test_the_planner_workflow_sample_runs_as_written(configured: ChatServer) -> None:
    from openprogram.programs.workflow import run_workflow_code

    files = "\n".join(f"openprogram/auth/{n}.py" for n in ("oauth", "openid", "token", "a", "b"))
    configured.reply(
        files, decide({"call": "yes"}),  # validate_and_retry: found, judged valid
        "auth 依赖 token", decide({"call": "分阶段迁移"}),  # analysis, route
        decide({"call": "yes"}), "三阶段计划",  # conditional: complex -> detailed plan
    )  # fmt: skip
    assert run_workflow_code(PRIMITIVES_WORKFLOW) == "三阶段计划"
    prompts = [_prompt_of(body) for body in configured.requests]
    assert prompts[0] == "找 openprogram/auth/ 下所有相关文件"
    assert prompts[2] == "分析这些文件的依赖关系和接口：" + files
    assert prompts[5] == "写详细的多阶段迁移计划：auth 依赖 token"
    assert len(prompts) == 6


def test_the_parallel_and_repeat_until_samples_run_as_written(
    configured: ChatServer, tmp_path: Path
) -> None:
    module = load(tmp_path / "primitives.py", PRIMITIVES_SAMPLES)
    configured.default = lambda body: "结果：" + _prompt_of(body)
    assert module.fan_out() == ["结果：分析前端代码", "结果：分析后端代码", "结果：分析数据库"]
    configured.default = "ok"
    configured.reply("a.py", decide({"call": "no"}), "b.py", decide({"call": "yes"}))
    assert module.keep_looking() == "b.py"
