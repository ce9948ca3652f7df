#!/usr/bin/env python3
"""Build the Krew archives: a self-contained ``kubectl-rollout_plus`` that needs only python3 >= 3.11.

    .venv/bin/python hack/dist/build_archives.py [--out dist]

The executable is a zipapp holding the plugin and every runtime dependency
pinned in hack/dist/runtime.lock, as pure Python: compiled modules are left
out (each bundled package falls back to its pure-Python code), so one zipapp
runs on every OS, architecture and CPython >= 3.11. Each platform Krew
selects gets its own tar.gz (the executable and LICENSE), as Krew expects,
with identical content.

Reproducible: entries are sorted, timestamps and owners fixed, gzip headers
carry no time, so building the same commit twice gives the same sha256.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "hack" / "dist" / "runtime.lock"
EXECUTABLE = "kubectl-rollout_plus"
PLATFORMS = [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")]
#: 1980-01-01, the earliest time a zip entry can hold; used for every entry and tar member
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
FIXED_EPOCH = 315532800

MAIN = '''\
"""Entry point of the kubectl-rollout_plus zipapp."""
import sys

if sys.version_info < (3, 11):
    sys.exit(
        "kubectl rollout-plus needs Python >= 3.11; found %d.%d at %s" % (sys.version_info[:2] + (sys.executable,))
    )
from kubectl_rollout.cli.main import main

main()
'''


def version() -> str:
    text = (ROOT / "kubectl_rollout" / "__init__.py").read_text()
    found = re.search(r'__version__ = "([^"]+)"', text)
    assert found is not None
    return found.group(1)


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True,
                   env={**os.environ, "PIP_NO_INPUT": "1", "SOURCE_DATE_EPOCH": str(FIXED_EPOCH)})


def stage(target: Path) -> None:
    """Install the locked dependencies and the plugin into ``target``, pure Python only."""
    pip("install", "--target", str(target), "--no-compile", "--no-deps", "--require-hashes", "--only-binary=:all:",
        "-r", str(LOCK))
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts with this machine's paths
    pip("install", "--target", str(target), "--no-compile", "--no-deps", str(ROOT))
    for path in sorted(target.rglob("*")):
        if path.is_dir() and path.name in ("__pycache__", "bin"):
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file() and (path.suffix in (".so", ".pyd", ".dylib") or path.name in ("RECORD", "direct_url.json")):
            # RECORD lists the compiled files we drop; direct_url.json names the checkout's
            # path (a build elsewhere would differ). Neither is needed to import anything.
            path.unlink()
    for metadata in target.glob("kubectl_rollout_plus-*.dist-info/METADATA"):
        # Keep the headers, drop the long description (the README): editing the
        # README must not change the archive and its sha256 in krew-manifest.yaml.
        metadata.write_text(metadata.read_text().split("\n\n", 1)[0] + "\n")
    (target / "__main__.py").write_text(MAIN)


def write_zipapp(source: Path, destination: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(path.relative_to(source).as_posix(), date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes(), compresslevel=9)
    destination.write_bytes(b"#!/usr/bin/env python3\n" + buffer.getvalue())
    destination.chmod(0o755)


def write_tarball(files: list[tuple[Path, str, int]], destination: Path) -> None:
    """files: (path, name in the archive, mode)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, name, mode in sorted(files, key=lambda f: f[1]):
            info = tarfile.TarInfo(name)
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), mode, FIXED_EPOCH
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    with destination.open("wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())


def archive_name(plugin_version: str, goos: str, goarch: str) -> str:
    return f"{EXECUTABLE}-v{plugin_version}-{goos}-{goarch}.tar.gz"


def build(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    plugin_version = version()
    with tempfile.TemporaryDirectory() as scratch:
        staged = Path(scratch) / "app"
        stage(staged)
        executable = Path(scratch) / EXECUTABLE
        write_zipapp(staged, executable)
        shutil.copy(executable, out / EXECUTABLE)
        archives = []
        for goos, goarch in PLATFORMS:
            destination = out / archive_name(plugin_version, goos, goarch)
            write_tarball([(executable, EXECUTABLE, 0o755), (ROOT / "LICENSE", "LICENSE", 0o644)], destination)
            archives.append(destination)
    return archives


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder (default dist/)")
    args = parser.parse_args()
    for archive in build(args.out):
        print(f"{sha256(archive)}  {archive.relative_to(ROOT) if archive.is_relative_to(ROOT) else archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
