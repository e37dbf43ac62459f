"""Stamps: whether an output is still what its inputs make.

A stamp records a digest of the inputs an output was made from, next to
the output: the cached tree's series (tree.py), a build directory's kernel
(buildstamp.py), a job of make matrix (jobstamp.py). Each follows one
order: forget() the stamp before the work, write it once the work
succeeded, so work that fails or is interrupted leaves none; and whoever
reads one takes a missing, unreadable or corrupt stamp for "not up to
date", never for "up to date".

fingerprint() digests files by name and content, digest() any JSON value;
write() and write_text() replace a stamp whole (a reader sees the old
stamp or the new one, never half of one); read() and read_text() give
None for a stamp that is not there or not readable.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence


def fingerprint(paths: Sequence[Path], extra: str = '') -> str:
    """The sha256 of @extra, then of each of @paths' name and content."""
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.name.encode() + b'\0' + p.read_bytes() + b'\0')
    return h.hexdigest()


def digest(value: Any) -> str:
    """The sha256 of @value as JSON with sorted keys: the same for equal values."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def write_text(path: Path, text: str) -> None:
    """@path holds @text: written beside it, then renamed over it."""
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write(path: Path, data: Dict[str, Any]) -> None:
    """@path holds @data, one line of JSON (write_text())."""
    write_text(path, json.dumps(data) + '\n')


def read_text(path: Path) -> Optional[str]:
    """What @path holds; None when it is missing or unreadable."""
    try:
        return path.read_text()
    except (OSError, ValueError):
        return None


def read(path: Path) -> Optional[Dict[str, Any]]:
    """The JSON object @path holds; None when it is missing, unreadable or
    anything but a JSON object."""
    text = read_text(path)
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def forget(path: Path) -> None:
    """Before the work @path's stamp speaks for: none is left if it fails."""
    path.unlink(missing_ok=True)
