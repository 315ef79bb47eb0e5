"""Tiny pure-Python wheels written on the spot, so pip can install offline in tests."""

from __future__ import annotations

import zipfile
from pathlib import Path


def write_wheel(folder: Path, name: str, version: str, body: str = "") -> Path:
    """A wheel of package `name` whose module holds VERSION and `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n{body}",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: labcoat-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", record)
    return wheel
