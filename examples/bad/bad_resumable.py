"""Determinism mistakes in resumable functions: OP201-OP208."""

import importlib
import time

import httpx
from openprogram import Agent, llm, step

CACHE: dict[str, str] = {}


def remember(key: str, value: str) -> None:
    CACHE[key] = value


def fetch(url: str) -> str:
    import json  # OP202: import inside a step dependency

    client = httpx.Client()  # OP208: third-party module object
    return json.dumps(client.get(url).text)


def plugin(name: str) -> object:
    return importlib.import_module(name)  # OP201: dynamic import


class Reporter(Agent):
    method_options = {"report": {"resumable": True}, "stream": {"resumable": True}}

    def report(self, url: str, seen: list[str] = []) -> str:  # OP204: mutable default
        started = time.time()  # OP205: non-deterministic outside a step
        summary = llm(f"Summarize {url}")  # OP206: model call outside a step
        page = step(f"fetch {url}", fetch, url)  # OP207: step name depends on data
        remember(url, page)
        plugin("json")
        return f"{started} {summary} {CACHE[url]}"  # OP203: mutated global

    async def stream(self, url: str) -> str:  # OP208: async resumable
        return step("fetch", fetch, url)
