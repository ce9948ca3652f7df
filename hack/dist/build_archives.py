#!/usr/bin/env python3
"""Build the Krew archives: a self-contained ``kubectl-rollout_plus`` that needs only python3 >= 3.11.

    .venv/bin/python hack/dist/build_archives.py [--out dist]

The executable is a shiv zipapp holding the plugin and every runtime
dependency pinned in hack/dist/runtime.lock, as pure Python: compiled modules
are left out (each bundled package falls back to its pure-Python code), so one
zipapp runs on every OS, architecture and CPython >= 3.11. Each platform Krew
selects gets its own tar.gz (the executable and LICENSE), as Krew expects,
with identical content.

Why shiv: zipimport cannot cache bytecode, so a zipapp that imports from
itself compiles the kubernetes client on every start (seconds). shiv's
bootstrap unpacks the packages once per build into a cache directory
(``$SHIV_ROOT``, by default ``$XDG_CACHE_HOME/kubectl-rollout-plus/shiv`` or
``~/.cache/kubectl-rollout-plus/shiv``) and imports from there, where the
bytecode is cached after the first run. The cache is keyed by shiv's build id,
the sha256 of everything unpacked, so a new build never runs an old tree.
Bytecode is written there as modules are first imported, rather than by
shiv's --compile-pyc, which would compile all ~2,000 modules on the first run;
--no-modify is not used either: it hashes every unpacked source on each start.

Reproducible: shiv gets fixed timestamps (SOURCE_DATE_EPOCH) and sorts its
entries; the archive is then rewritten once with normalised file modes and our
``__main__``, and gzip headers carry no time, so building the same commit
twice gives the same sha256.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
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
#: what the unpacked tree runs (after shiv's bootstrap has put it on sys.path)
ENTRY_POINT = "kubectl_rollout.cli.standalone:main"
#: bundled but never imported: the kubernetes client's asyncio twin (its
#: dependencies are left out of the lock, see lock.py); a quarter of the files,
#: and each file costs every start a little (Python reads the archive's whole
#: directory before it runs __main__)
UNUSED_TREES = ("kubernetes/aio",)

# Replaces shiv's own __main__, which only calls shiv's bootstrap. Ours refuses
# an old Python before unpacking anything, unpacks into the user's cache
# directory rather than ~/.shiv (SHIV_ROOT, if set, wins, as in shiv), and once
# this build is unpacked runs it from there as shiv's bootstrap would (its
# site-packages first on sys.path, then the entry point), without importing the
# bootstrap or opening the archive again: that costs a third of a warm start.
# Any other SHIV_* variable (shiv's interpreter mode, forced extraction, ...)
# goes to shiv's bootstrap. Written for any python3, so an old one gets the message.
MAIN = '''\
"""Entry point of the kubectl-rollout_plus zipapp (built with shiv by hack/dist/build_archives.py)."""
import os
import sys

if sys.version_info < (3, 11):
    sys.exit(
        "kubectl rollout-plus needs Python >= 3.11; found %d.%d at %s" % (sys.version_info[:2] + (sys.executable,))
    )

#: shiv's build id: the sha256 of everything under site-packages/ in this archive
BUILD_ID = "@BUILD_ID@"

if not os.environ.get("SHIV_ROOT"):
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):  # unset, or not absolute: ignored, as the XDG spec says
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    # Inherited by child processes: a plugin started from here finds the same tree.
    os.environ["SHIV_ROOT"] = os.path.join(cache, "kubectl-rollout-plus", "shiv")


def unpacked_site_packages():
    """This build's site-packages where shiv unpacked it, or None (not yet, or shiv's other modes asked for)."""
    if any(name.startswith("SHIV_") and name != "SHIV_ROOT" for name in os.environ):
        return None
    # Named as shiv's bootstrap names it: the archive's file name (links resolved) and the build id.
    name = os.path.basename(os.path.realpath(sys.argv[0])) + "_" + BUILD_ID
    path = os.path.join(os.path.expanduser(os.environ["SHIV_ROOT"]), name, "site-packages")
    # shiv unpacks into a temporary folder and renames it: if it exists, it is whole.
    return path if os.path.isdir(path) else None


site_packages = unpacked_site_packages()
if site_packages is None:
    import _bootstrap

    _bootstrap.bootstrap()
else:
    import site

    length = len(sys.path)
    first = next((i for i, p in enumerate(sys.path) if os.path.basename(p) in ("site-packages", "dist-packages")), length)
    site.addsitedir(site_packages)
    sys.path[:] = sys.path[:first] + sys.path[length:] + sys.path[first:length]
    from @ENTRY_MODULE@ import @ENTRY_FUNCTION@

    sys.exit(@ENTRY_FUNCTION@())
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
    for unused in UNUSED_TREES:
        shutil.rmtree(target / unused)
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


def shiv(site_packages: Path, destination: Path) -> None:
    """Build the zipapp with shiv from the staged packages."""
    subprocess.run(
        [sys.executable, "-m", "shiv", "--site-packages", str(site_packages), "--entry-point", ENTRY_POINT,
         "--python", "/usr/bin/env python3", "--reproducible", "--uncompressed", "--output-file", str(destination)],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(FIXED_EPOCH)},
        stdout=subprocess.DEVNULL,
    )


def main_py(build_id: str) -> bytes:
    module, _, function = ENTRY_POINT.partition(":")
    text = MAIN.replace("@BUILD_ID@", build_id).replace("@ENTRY_MODULE@", module)
    return text.replace("@ENTRY_FUNCTION@", function).encode()


def finish_zipapp(built: Path, destination: Path) -> None:
    """Rewrite shiv's zipapp: our ``__main__``, modes that do not depend on the umask, compressed.

    Entries keep shiv's order, names and (fixed) times; environment.json, with
    the build id, is shiv's.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(built) as source, zipfile.ZipFile(buffer, "w") as archive:
        names = [info.filename for info in source.infolist()]
        assert "__main__.py" in names and "environment.json" in names, names[-3:]
        build_id = json.loads(source.read("environment.json"))["build_id"]
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=FIXED_TIME)
            entry.external_attr = (stat.S_IFREG | 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            data = main_py(build_id) if info.filename == "__main__.py" else source.read(info)
            archive.writestr(entry, data, compresslevel=9)
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
        built = Path(scratch) / "shiv.pyz"
        shiv(staged, built)
        executable = Path(scratch) / EXECUTABLE
        finish_zipapp(built, executable)
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
