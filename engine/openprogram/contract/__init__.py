"""Facts shared by every layer (runtime, store, analyzer, server, CLI), stdlib only.

Each fact lives in exactly one submodule here and is imported wherever it is needed:

* :mod:`openprogram.contract.runs` — run states, pause reasons, code-change policies,
  durability modes.
* :mod:`openprogram.contract.steps` — step-name and step-function rules (``(code, message)``).
* :mod:`openprogram.contract.entries` — the ``PROGRAM_ENTRIES`` rules (``(code, message)``).
* :mod:`openprogram.contract.primitives` — the parameters of the control-flow primitives
  (``repeat_until``, ``validate_and_retry``, ``conditional``).
* :mod:`openprogram.contract.store_root` — the DB file name and store-root resolution.
* :mod:`openprogram.contract.nodes` — node kinds and node states.
* :mod:`openprogram.contract.suppressions` — noqa comment patterns.
* :mod:`openprogram.contract.packages` — the package a Program file belongs to (its
  relative imports).
* :mod:`openprogram.contract.json_depth` — how deeply nested a JSON value may be.
* :mod:`openprogram.contract.source` — a Python file's text as Python decodes it (PEP 263).
* :mod:`openprogram.contract.pyproject` — the ``[tool.openprogram]`` table of the nearest
  ``pyproject.toml``.

Importing this package must stay cheap: no third-party imports, no engine imports.
"""
