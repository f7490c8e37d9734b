"""Result cache keyed by file content hash + configuration + analyzer version.

One JSON file per (config, version) under ``.openprogram-lint-cache/``: ``results`` maps a
file content's SHA-256 to its findings, so a file is always read and hashed (an edit that
keeps the size and the mtime is never served stale); ``files`` maps a path to the digest
last seen there, only to drop results no file has any more. Corrupt or foreign cache files
are ignored.

A result that followed first-party helper modules (``helpers.py`` next to a Program) also
depends on them: ``deps`` maps the content hash to those files (relative to the linted
file's folder) and their digests, or None for a module file that was looked for and not
found; a result is reused only while each is unchanged. Paths inside stored findings are
relative to the linted file's folder too ("" for the file itself), so a result is reused
for the same content elsewhere.
"""

from __future__ import annotations

import os

from openprogram_analyzers.digest import blake2b_hex, file_digest, stat_key

TYPE_CHECKING = False  # keep the warm (all cached) CLI run free of typing/tempfile
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from openprogram_analyzers.findings import Finding
    from openprogram_analyzers.first_party import Dependency

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
        # content hash -> helper file (relative to the file's folder) -> digest (None: absent)
        self.deps: dict[str, dict[str, str | None]] = {}
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
                deps = data.get("deps", {})
                if isinstance(deps, dict):
                    self.deps = {k: v for k, v in deps.items() if isinstance(v, dict)}
        except (OSError, ValueError):
            pass

    def get(
        self, digest: str, display: str, seen: dict[str, str | None] | None = None
    ) -> list[Finding] | None:
        """The findings stored for this content, if the helper files it depends on are
        unchanged (their stat keys, read before their content, go to ``seen``)."""
        items = self.results.get(digest)
        if items is None:
            return None
        folder = os.path.dirname(display)
        for rel, want in self.deps.get(digest, {}).items():
            dep = os.path.normpath(os.path.join(folder, rel))
            try:
                st = os.stat(dep)
            except OSError:
                key = have = None
            else:
                key, have = stat_key(st), file_digest(dep) or ""
            if have != want:
                return None
            if seen is not None:
                seen[os.path.abspath(dep)] = key
        if not items:
            return []
        from openprogram_analyzers.findings import Finding

        return [Finding.from_json(_placed(item, display, folder)) for item in items]

    def hit(self, path: str, digest: str) -> None:
        """``path`` holds content whose result ``get`` returned."""
        if self.files.get(path) != digest:
            self.files[path] = digest
            self.dirty = True

    def put(
        self,
        path: str,
        st: os.stat_result | None,
        digest: str,
        findings: list[Finding],
        display: str,
        deps: dict[str, Dependency] | None = None,
    ) -> None:
        """Store the findings of ``path`` (shown as ``display``) and the helper files they
        depend on (``analysis.analyze_file``: paths spelt like ``display``)."""
        folder = os.path.dirname(display)
        self.files[path] = digest
        self.results[digest] = [_stored(f.to_json(), display, folder) for f in findings]
        if deps:
            self.deps[digest] = {
                os.path.relpath(p, folder or os.curdir): None if d is None else d[1]
                for p, d in deps.items()
            }
        else:
            self.deps.pop(digest, None)
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
            deps = {d: r for d, r in self.deps.items() if d in live}
            fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"files": self.files, "results": results, "deps": deps}, fh)
            os.replace(tmp, self.file)
        except OSError:
            pass


def _stored(item: dict[str, Any], display: str, folder: str) -> dict[str, Any]:
    """A finding's JSON with its paths relative to ``folder`` ("" for the file itself)."""

    def rel(p: str) -> str:
        return "" if p == display else os.path.relpath(p, folder or os.curdir)

    item["path"] = rel(item["path"])
    for r in item.get("related", ()):
        r["path"] = rel(r["path"])
    return item


def _placed(item: dict[str, Any], display: str, folder: str) -> dict[str, Any]:
    """Inverse of ``_stored`` for the file shown as ``display``."""

    def place(p: str) -> str:
        return display if not p else os.path.normpath(os.path.join(folder, p))

    out = {**item, "path": place(item.get("path", ""))}
    if "related" in item:
        out["related"] = [{**r, "path": place(r.get("path", ""))} for r in item["related"]]
    return out


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
