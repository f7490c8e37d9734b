"""OP900: a suppression comment that suppresses nothing."""

from openprogram import Agent


class Quiet(Agent):
    method_options = {"run": {"expose": "io"}}  # noqa: OP104

    def run(self) -> str:
        return "ok"
