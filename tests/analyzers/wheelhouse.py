"""A wheelhouse repacked from the distributions installed in this interpreter, so that
``pre-commit try-repo`` (which ``pip install``s this repository into a fresh virtualenv)
runs offline: pip is pointed at it with ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS``.

A wheel is a zip of the files a distribution installed under site-packages plus its
``.dist-info`` (``RECORD`` rewritten for the files packed); scripts outside site-packages
are left out (pip regenerates console scripts from ``entry_points.txt``). Only the
distributions that the given requirements need are packed (they and everything they
require, as installed), not every tool of the development environment.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def repack(dist: metadata.Distribution, out_dir: Path) -> Path | None:
    """Write ``dist`` as a wheel into ``out_dir``; None if it cannot be repacked
    (no ``WHEEL`` file, e.g. an editable install of this repository)."""
    wheel_info = dist.read_text("WHEEL")
    if wheel_info is None or dist.files is None:
        return None
    if dist.read_text("direct_url.json") and '"editable": true' in (
        dist.read_text("direct_url.json") or ""
    ):
        return None
    tags = [
        line.split(":", 1)[1].strip() for line in wheel_info.splitlines() if line.startswith("Tag:")
    ]
    if not tags:
        return None
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    version = dist.version
    dist_info = f"{name}-{version}.dist-info"
    target = out_dir / f"{name}-{version}-{tags[0]}.whl"
    records: list[str] = []
    record_name = None
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in dist.files:
            posix = rel.as_posix()
            if posix.startswith("..") or "__pycache__" in posix or posix.endswith(".pyc"):
                continue
            if posix.endswith(".dist-info/RECORD"):
                record_name = posix
                continue
            source = Path(str(dist.locate_file(rel)))
            if not source.is_file():
                continue
            data = source.read_bytes()
            arcname = posix
            if ".dist-info/" in posix:
                arcname = f"{dist_info}/{posix.split('.dist-info/', 1)[1]}"
            zf.writestr(arcname, data)
            records.append(_record_line(arcname, data))
        record_name = f"{dist_info}/RECORD"
        zf.writestr(record_name, "\n".join([*records, f"{record_name},,"]) + "\n")
    return target


def needed(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions that installing ``requirements`` takes: each named one
    and, through its ``Requires-Dist`` (markers evaluated here, with the extras asked
    for), everything it requires. A requirement not installed here is left out (pip
    then names it, offline)."""
    found: dict[str, metadata.Distribution] = {}
    extras_seen: set[tuple[str, str]] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        key = canonicalize_name(req.name)
        extras = sorted(req.extras)
        if key in found and all((key, e) in extras_seen for e in extras):
            continue
        try:
            dist = found.get(key) or metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        found[key] = dist
        extras_seen.update((key, e) for e in extras)
        for line in dist.requires or []:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in ["", *extras]):
                todo.append(dep)
    return list(found.values())


def build(out_dir: Path, requirements: list[str]) -> list[Path]:
    """Repack what installing ``requirements`` takes (see ``needed``); the wheels written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    wheels = []
    for dist in needed(requirements):
        wheel = repack(dist, out_dir)
        if wheel is not None:
            wheels.append(wheel)
    return wheels
