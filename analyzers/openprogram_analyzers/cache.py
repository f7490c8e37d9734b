"""Result cache keyed by file content hash + configuration + analyzer version.

One JSON file per (config, version) under ``.openprogram-lint-cache/``: ``results`` maps a
file content's SHA-256 to its findings, so a file is always read and hashed (an edit that
keeps the size and the mtime is never served stale); ``files`` maps a path to the digest
last seen there, only to drop results no file has any more. Corrupt or foreign cache files
are ignored.
"""

from __future__ import annotations

import os

from openprogram_analyzers.digest import blake2b_hex

TYPE_CHECKING = False  # keep the warm (all cached) CLI run free of typing/tempfile
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from openprogram_analyzers.findings import Finding

CACHE_DIR = ".openprogram-lint-cache"


def version() -> str:
    try:
        from openprogram._version import __version__

        return str(__version__)
    except Exception:  # pragma: no cover
        return "0"


def content_hash(data: bytes) -> str:
    import hashlib  # only files that are new or changed are hashed

    return hashlib.sha256(data).hexdigest()


def cache_stem(root: str | Path, fingerprint: str) -> str:
    """Path without extension of the cache files for this configuration and analyzer."""
    return os.path.join(root, CACHE_DIR, f"{_code_hash()}-{fingerprint}")


class ResultCache:
    def __init__(self, root: str | Path, fingerprint: str) -> None:
        self.dir = os.path.join(root, CACHE_DIR)
        # the code hash covers the analyzer's sources and the engine's version file
        self.file = cache_stem(root, fingerprint) + ".json"
        self.files: dict[str, str] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.dirty = False
        import json

        try:
            with open(self.file, "rb") as fh:
                data = json.loads(fh.read())
            if isinstance(data, dict):
                files = data.get("files", {})
                if isinstance(files, dict):
                    self.files = {k: v for k, v in files.items() if isinstance(v, str)}
                self.results = dict(data.get("results", {}))
        except (OSError, ValueError):
            pass

    def get(self, digest: str, display: str) -> list[Finding] | None:
        items = self.results.get(digest)
        if items is None:
            return None
        if not items:
            return []
        from openprogram_analyzers.findings import Finding

        return [Finding.from_json({**item, "path": display}) for item in items]

    def put(
        self, path: str, st: os.stat_result | None, digest: str, findings: list[Finding]
    ) -> None:
        if self.files.get(path) == digest and digest in self.results:
            return
        self.files[path] = digest
        self.results[digest] = [f.to_json() for f in findings]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.dir, exist_ok=True)
            gi = os.path.join(self.dir, ".gitignore")
            if not os.path.exists(gi):
                with open(gi, "w", encoding="utf-8") as fh:
                    fh.write("*\n")
            import json
            import tempfile

            live = set(self.files.values())
            results = {d: r for d, r in self.results.items() if d in live}
            fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"files": self.files, "results": results}, fh)
            os.replace(tmp, self.file)
        except OSError:
            pass


_CODE_HASH: str | None = None


def _code_hash() -> str:
    """Hash of the analyzer's own sources and the engine files it reads (mtimes + sizes,
    the engine's ``_version.py`` included): edits and upgrades invalidate the cache.

    The engine is located without importing it (its package imports ``typing``).
    """
    global _CODE_HASH
    if _CODE_HASH is None:
        from importlib.machinery import PathFinder

        parts: list[str] = []
        here = os.path.dirname(os.path.abspath(__file__))
        spec = PathFinder.find_spec("openprogram")
        locations = list(spec.submodule_search_locations or []) if spec else []
        engine = locations[0] if locations else os.path.join(here, "missing-openprogram")
        files = [
            os.path.join(engine, n) for n in ("options.py", "schema_grammar.py", "_version.py")
        ]
        for dirpath, dirnames, filenames in os.walk(here):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            files.extend(os.path.join(dirpath, n) for n in filenames if n.endswith(".py"))
        for f in sorted(files):
            try:
                st = os.stat(f)
            except OSError:
                continue
            parts.append(f"{os.path.basename(f)}:{st.st_size}:{st.st_mtime_ns};")
        _CODE_HASH = blake2b_hex("".join(parts).encode(), 6)
    return _CODE_HASH
