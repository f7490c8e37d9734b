"""Stand-in for ``<interpreter> -m openprogram.cli run|resume ... --json`` in LSP tests.

Invoked as an executable "interpreter": argv = [-m, openprogram.cli, run|resume, ...].
Prints progress lines on stderr and one JSON object on stdout, with the CLI's exit codes.
Expects ``--`` before the positional argument (as the server sends) and the store in
``$OPENPROGRAM_STORE`` (never ``--store``: a command line is public). Appends its argv to
``calls.jsonl`` in the store, and for ``resume`` marks the run
completed in the store's ``runs`` table (a real SQLite file) when there is one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    assert argv[:2] == ["-m", "openprogram.cli"], argv
    cmd, rest = argv[2], argv[3:]
    # like argparse: options first, then ``--`` and the one positional argument
    assert rest.count("--") == 1 and rest.index("--") == len(rest) - 2, rest
    positional = rest[-1]
    assert "--store" not in rest, rest
    store = Path(os.environ["OPENPROGRAM_STORE"])
    store.mkdir(parents=True, exist_ok=True)
    with open(store / "calls.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(argv) + "\n")
    if cmd == "run":
        target = positional
        args = json.loads(rest[rest.index("--args") + 1])
        entry = target.rpartition(":")[2]
        for i in range(3):
            print(f"step {i + 1}/3 of {entry}", file=sys.stderr, flush=True)
        if entry == "slow":
            import time

            while True:  # until killed
                print("still working", file=sys.stderr, flush=True)
                time.sleep(0.2)
        if entry == "summarize":
            if "text" not in args:
                print(
                    json.dumps(
                        {
                            "run_id": None,
                            "status": "failed",
                            "error": "summarize() missing required argument 'text'",
                        }
                    )
                )
                return 2
            print(
                json.dumps({"run_id": "r-1", "status": "completed", "result": args["text"].upper()})
            )
            return 0
        print(json.dumps({"run_id": "r-2", "status": "failed", "error": f"boom in {entry}"}))
        return 1
    if cmd == "resume":
        run_id = positional
        db = sqlite3.connect(store / "openprogram.db")
        try:
            with db:
                db.execute(
                    "UPDATE runs SET status = 'completed', paused_step = NULL WHERE id = ?",
                    (run_id,),
                )
        except sqlite3.OperationalError:  # a store without runs: only argv is of interest
            pass
        db.close()
        print("resuming", run_id, file=sys.stderr, flush=True)
        print(json.dumps({"run_id": run_id, "status": "completed", "result": 42}))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
