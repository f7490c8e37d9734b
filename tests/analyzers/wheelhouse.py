"""A wheelhouse repacked from the distributions installed in this interpreter, so that
``pre-commit try-repo`` (which ``pip install``s this repository into a fresh virtualenv)
runs offline: pip is pointed at it with ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS``.

A wheel is a zip of the files a distribution installed under site-packages plus its
``.dist-info`` (``RECORD`` rewritten for the files packed); scripts outside site-packages
are left out (pip regenerates console scripts from ``entry_points.txt``).
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path


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


def build(out_dir: Path) -> list[Path]:
    """Repack every installed distribution that can be; the wheels written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    wheels = []
    for dist in metadata.distributions():
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        wheel = repack(dist, out_dir)
        if wheel is not None:
            wheels.append(wheel)
    return wheels
