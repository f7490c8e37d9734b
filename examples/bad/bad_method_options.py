"""method_options mistakes: OP101-OP108."""

from openprogram import Agent

SHARED = {"summarize": {"expose": "io"}}


class Writer(Agent):
    method_options = {
        "sumarize": {"expose": "io"},  # OP101: no such method
        "summarize": {
            "expsoe": "io",  # OP102: did you mean 'expose'?
            "system": 42,  # OP103: must be str
            "render_range": {"callers": -1},  # OP105
            "cache": True,  # OP106: tool-only without "tool": True
            "input": {"texts": {"description": "Text"}},  # OP107: no parameter 'texts'
        },
        "draft": {"expose": "ful"},  # OP104: did you mean 'full'?
    }

    def summarize(self, text: str) -> str:
        return text

    def draft(self, topic: str) -> str:
        return topic


class Computed(Agent):
    method_options = dict(SHARED)  # OP108: cannot be checked statically

    def summarize(self, text: str) -> str:
        return text
