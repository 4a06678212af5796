"""The build backend of agentweb-hook as a package of its own (PEP 517, standard library).

`pip install ./agentweb_hook` and `pipx install "git+…#subdirectory=agentweb_hook"` build
it with this module, named in pyproject.toml: it needs nothing to be downloaded first
(setuptools would, and an older one also `wheel`), so it installs offline too. The wheel
holds the package's two modules and the `agentweb-hook` command.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAME = "agentweb_hook"
MODULES = ("__init__.py", "__main__.py")
SDIST_FILES = ("pyproject.toml", "_build.py", *MODULES)


def version() -> str:
    found = re.search(r'^__version__ = "([^"]+)"$', (HERE / "__init__.py").read_text(), re.M)
    if found is None:
        raise RuntimeError("agentweb_hook/__init__.py has no __version__ line")
    return found.group(1)


def _metadata() -> str:
    return (
        "Metadata-Version: 2.1\n"
        "Name: agentweb-hook\n"
        f"Version: {version()}\n"
        "Summary: agentweb's command hook for Claude Code, Codex CLI and Gemini CLI\n"
        "Requires-Python: >=3.9\n"
    )


def _wheel_files() -> dict[str, bytes]:
    info = f"{NAME}-{version()}.dist-info"
    files = {f"{NAME}/{module}": (HERE / module).read_bytes() for module in MODULES}
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: agentweb_hook._build\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\nagentweb-hook = agentweb_hook:main\n"
    return files


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    files = _wheel_files()
    record = f"{NAME}-{version()}.dist-info/RECORD"
    lines = [_record_line(path, data) for path, data in files.items()]
    files[record] = ("".join(lines) + f"{record},,\n").encode()
    name = f"{NAME}-{version()}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    return name


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    root = f"{NAME}-{version()}"
    files = {name: (HERE / name).read_bytes() for name in SDIST_FILES}
    files["PKG-INFO"] = _metadata().encode()
    with tarfile.open(Path(sdist_directory) / f"{root}.tar.gz", "w:gz") as sdist:
        for name, data in files.items():
            entry = tarfile.TarInfo(f"{root}/{name}")
            entry.size, entry.mode = len(data), 0o644
            sdist.addfile(entry, io.BytesIO(data))
    return f"{root}.tar.gz"
