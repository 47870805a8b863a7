"""Fetch the corpus sources named in README.md's source tables into /work/corpus-src.

Each row of a sources table (`| package | version | how obtained |`) says how one
package was obtained: a `pip download` command in backticks, or the bare word `wheel`
or `sdist` (then the package is downloaded by its manifest name). A wheel is unzipped
into `<root>/<package>-<version>/`; an sdist is unpacked without its top folder, so the
manifest's `file` column is a path inside that folder. Rows obtained from GitHub are
listed at the end: fetch those by hand (the README row gives the commit).

    python bench/corpus/fetch_sources.py [--root /work/corpus-src] [--jobs 8] [--only PKG ...]
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
_ROW = re.compile(r"^\|\s*([A-Za-z0-9_.\-]+)\s*\|\s*([^|\s]+)\s*\|\s*(.+?)\s*\|\s*$")
_COMMAND = re.compile(r"`(pip download [^`]+)`")


@dataclass(frozen=True)
class Source:
    package: str
    version: str
    how: str

    @property
    def folder(self) -> str:
        return f"{self.package}-{self.version}"

    def download_args(self) -> list[str] | None:
        """The pip arguments that fetch this source, or None when it is not on PyPI (a plain download when unsaid)."""
        found = _COMMAND.search(self.how)
        if found:
            return shlex.split(found.group(1))[2:]
        word = self.how.split()[0] if self.how else ""
        spec = f"{self.package.replace('_', '-')}=={self.version}"
        if word == "wheel":
            return ["--no-deps", "--only-binary=:all:", spec]
        if word == "sdist":
            return ["--no-deps", "--no-binary=:all:", spec]
        if word == "GitHub":
            return None
        return ["--no-deps", spec]


def sources(readme: Path) -> list[Source]:
    """Every row of the README's sources tables whose third column says how it was obtained."""
    seen: dict[str, Source] = {}
    for line in readme.read_text().splitlines():
        row = _ROW.match(line)
        if not row:
            continue
        package, version, how = row.groups()
        if not re.search(r"\d", version) or package in ("set", "package"):
            continue
        if not (how.startswith(("wheel", "sdist", "GitHub")) or _COMMAND.search(how)):
            continue
        source = Source(package, version, how)
        seen.setdefault(source.folder, source)
    return list(seen.values())


def _unpack(archive: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    name = archive.name
    if name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if name.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
        tops = list(Path(tmp).iterdir())
        inner = tops[0] if len(tops) == 1 and tops[0].is_dir() else Path(tmp)
        for item in inner.iterdir():
            shutil.move(str(item), dest / item.name)


def fetch(source: Source, root: Path, pip: list[str]) -> str:
    dest = root / source.folder
    if dest.is_dir() and any(dest.iterdir()):
        return f"have   {source.folder}"
    args = source.download_args()
    if args is None:
        return f"BY HAND {source.folder}: {source.how}"
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([*pip, "download", "-q", "-d", tmp, *args], capture_output=True, text=True)
        got = sorted(Path(tmp).iterdir())
        if run.returncode != 0 or not got:
            return f"FAILED {source.folder}: {run.stderr.strip().splitlines()[-1:]!s}"
        _unpack(got[0], dest)
    return f"got    {source.folder} ({got[0].name})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/work/corpus-src"))
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--only", nargs="*", help="fetch only these manifest package names")
    args = parser.parse_args(argv)
    todo = sources(HERE / "README.md")
    if args.only:
        todo = [s for s in todo if s.package in set(args.only)]
    args.root.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda s: fetch(s, args.root, pip), todo))
    for line in sorted(results):
        print(line)
    return 1 if any(r.startswith("FAILED") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
