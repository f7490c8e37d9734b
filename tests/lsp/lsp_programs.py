"""Program sources used by the language-server tests."""

AGENT_PROGRAM = """\
from openprogram import Agent, step


def fetch(url):
    return url


class Reporter(Agent):
    method_options = {
        "report": {"resumable": True, "expose": "io"},
        "helper": {"system": "be brief"},
    }

    def report(self, topic):
        a = step("fetch", fetch, topic)
        b = step("fetch", fetch, a)
        return step("write", fetch, b)

    def helper(self):
        return 1


def summarize(text):
    return step("sum", fetch, text)


reporter = Reporter()
PROGRAM_ENTRIES = [summarize, reporter.report]
"""

# 2,000 nested parentheses: libcst's native parser overflows the C stack on this
DEEP_PROGRAM = (
    "from openprogram import step\n\n\ndef f():\n    return "
    + "(" * 2_000
    + "1"
    + ")" * 2_000
    + "\n\n\nPROGRAM_ENTRIES = [f]\n"
)

#: A resumable Program whose first step asks for a pause (a person looks before the next).
PAUSER = """\
from openprogram import step
from openprogram.durable import current_run_id, pause_run


def prepare(n: int) -> int:
    pause_run(current_run_id())  # a person has to look before the next step
    return n + 1


def finish(n: int) -> int:
    return n * 10


def pipeline(n: int = 1) -> int:
    return step("finish", finish, step("prepare", prepare, n))


pipeline.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline"]
"""
