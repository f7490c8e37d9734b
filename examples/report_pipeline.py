"""A resumable report pipeline that needs no model: run it offline.

    openprogram run examples/report_pipeline.py:build_report --args '{"topic": "tides"}'

Each external operation is a ``step``: stop the run (Ctrl-C, a crash) and
``openprogram resume RUN_ID`` continues after the last saved step. Set
``REPORT_PIPELINE_LOG`` to a file to see which steps actually ran.
"""

from __future__ import annotations

import json
import os

from openprogram import parallel, step, workflow


def record(event: str) -> None:
    """Append ``event`` to the log named by $REPORT_PIPELINE_LOG (if set)."""
    path = os.environ.get("REPORT_PIPELINE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(event + "\n")


def collect(topic: str, section: int) -> dict:
    """Gather the facts of one section (a stand-in for a fetch or a model call)."""
    record(f"collect {topic} {section}")
    return {"section": section, "facts": [f"{topic} fact {section}.{i}" for i in range(2)]}


def summarize(facts: list) -> str:
    """Summarize a list of facts into one line."""
    record("summarize")
    return "; ".join(facts)


def outline(topic: str, sections: int) -> list:
    """The section numbers of the report."""
    record(f"outline {topic}")
    return list(range(sections))


def review(section: dict) -> dict:
    """Check one section (a nested workflow of two steps)."""
    text = step("summarize", summarize, section["facts"])
    return {"section": section["section"], "summary": text}


def build_report(topic: str, sections: int = 3) -> dict:
    """Outline, collect each section, review them, and publish the report."""
    numbers = step("outline", outline, topic, sections)
    collected = [step("collect", collect, topic, n) for n in numbers]
    reviewed = [workflow("review", review, s) for s in collected]
    extras = parallel(
        {
            "glossary": (collect, (topic, 100), {}),
            "sources": (collect, (topic, 200), {}),
        }
    )
    report = {"topic": topic, "sections": reviewed, "extras": sorted(extras)}
    return step("publish", publish, report)


def publish(report: dict) -> dict:
    """Publish the report (here: record it) and return its summary."""
    record("publish " + json.dumps(report["topic"]))
    return {"topic": report["topic"], "sections": len(report["sections"])}


build_report.__agent_options__ = {"resumable": True}

PROGRAM_ENTRIES = ["build_report"]
