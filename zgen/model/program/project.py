"""The rest of the program: classes a checked file imports, read from their source files.

A file's `class Encoder(BaseEncoder)` or `self.mlp = Mlp(dim)` is only
understood once `BaseEncoder` and `Mlp` are: are they `nn.Module`s, what do
they build, which parameters do they own? `Project` answers by finding the
file that defines the name, through the checked file's package (relative
imports) and the directories of the import path (`sys.path`, the way
`importlib` would, but without importing or executing anything), then the
site-packages of the checked code's own environment when zgen runs from
another one (a pre-commit or pipx install): the active virtual or conda
environment (`VIRTUAL_ENV`, `CONDA_PREFIX`) and a `.venv`/`venv` with a
`pyvenv.cfg` in the checked file's project directory or a parent of it. An
installed library's class (`open_clip.CLIP`) is then read like the file's
own; one found nowhere stays unknown, and nothing is guessed about it. A file
found is a `SourceFile`: its text and skeleton; `index.ModelIndex` builds
the same lazy model of it as of a checked file. Re-exports through a
package's `__init__.py` are followed.

Every file read this way is recorded with its content hash in `deps`, so
the findings cache can tell when a checked file's findings are stale because
a file it depends on changed. Files are kept per process, keyed by path,
size and modification time, so a worker checking many files of one library
reads each shared base file once; with `summary_dir` set, the skeleton of
each library file (the `ast` pass, the costly part) is also kept on disk as
JSON under its content hash, so later runs skip it. Files above 200 kB are
not read: they are utility hubs (generation loops, the model base class),
not layer definitions, and parsing them would cost more than they tell.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from zgen.files import temporary_file

from .skeleton import Skeleton, SourceError, build_skeleton, skeleton_from_dict, skeleton_to_dict, with_lf

__all__ = [
    "Project", "SourceFile", "absolute_name", "module_name_of", "definers_digest", "definers_key", "definers_of_key",
    "file_digest", "package_table", "project", "site_packages",
]

# Packages never read: torch is described by known.py, the rest define no model classes.
_SKIPPED = frozenset(sys.stdlib_module_names) | {
    "torch",
    "numpy",
    "deepspeed",
    "typing_extensions",
    "einops",
    "scipy",
    "pandas",
    "PIL",
    "cv2",
    "tqdm",
    "yaml",
    "omegaconf",
    "hydra",
    "safetensors",
    "huggingface_hub",
    "tokenizers",
    "packaging",
    "jax",
    "flax",
    "tensorflow",
    "triton",
}
# Files above this size are not indexed: generated tables, vendored bundles.
_MAX_BYTES = 200_000
_SUMMARY_FORMAT = 4  # 2: nested classes are classes of their own; 3: star imports recorded; 4: aliases
_MAX_HOPS = 8  # re-export chains followed per name


def file_digest(data: bytes) -> str:
    """The content hash the findings cache stores for a dependency."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def module_name_of(path: str) -> tuple[str, str, bool]:
    """(dotted module name, directory its top package lives in, is a package `__init__`) for a file path.

    The package is found by walking up while directories hold an `__init__.py`,
    as the import system would see the file from that directory; a directory without one inside a package
    (`lerobot/policies/sac/` under `lerobot/policies/__init__.py`) is a namespace portion of that package, which
    imports it by its name (`lerobot.policies.sac.modeling_sac`), so the walk goes on through it.
    """
    full = os.path.abspath(path)
    directory, filename = os.path.split(full)
    stem = filename[:-3] if filename.endswith(".py") else filename
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")) or _in_package(directory):
        directory, name = os.path.split(directory)
        parts.insert(0, name)
        if not name:
            break
    return ".".join(parts), directory, is_package


def _in_package(directory: str) -> bool:
    """Is `directory` (without an `__init__.py`) a namespace portion of a package: is the directory above one?"""
    parent = os.path.dirname(directory)
    return parent != directory and os.path.isfile(os.path.join(parent, "__init__.py"))


def absolute_name(name: str, module: str, is_package: bool, path: str | None = None) -> str:
    """`..layers.Mlp` written in `module` as an absolute name (unchanged when `module` is not known). With the file's
    `path`, an absolute name of a sibling of the file's package (`scaling.ScaledLinear`) is qualified by the package
    (`_sibling_prefix`)."""
    level = len(name) - len(name.lstrip("."))
    if not level and module and path is not None:
        prefix = _sibling_prefix(_directory_of(path), module, is_package, name.partition(".")[0])
        return f"{prefix}.{name}" if prefix else name
    if not level or not module:
        return name
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts) or (level - 1 == len(parts) and not name[level:]):
        return name
    base = parts[: len(parts) - (level - 1)]
    rest = name[level:]
    return ".".join(base + [rest]) if rest else ".".join(base)


@lru_cache(maxsize=8192)
def _sibling_prefix(directory: str, module: str, is_package: bool, top: str) -> str | None:
    """The package a bare import of `top` in a file of `module` (in `directory`) finds `top` in when a script of the
    package runs: the file's own package directory or one above it inside the package (icefall's recipes run
    `./pruned_transducer_stateless7/train.py`, whose `zipformer.py` says `from scaling import ScaledLinear`;
    tdmpc2's `common/world_model.py` says `from common import layers`). None when the package's own top, the
    directory above it, the standard library or torch answers the import. Read from the file's place alone, so
    what a file's import means never depends on which file is being checked."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if not parts or top == parts[0] or top in sys.stdlib_module_names or top in _NEVER_SIBLINGS:
        return None
    above = directory
    for _ in parts:
        above = os.path.dirname(above)
    if _module_in(above, top):
        return None  # (`python -m pkg.train` from the top: the import finds the top's own)
    for depth in range(len(parts)):
        if _module_in(directory, top):
            return ".".join(parts[: len(parts) - depth])
        directory = os.path.dirname(directory)
    return None


@lru_cache(maxsize=4096)
def _directory_of(path: str) -> str:
    return os.path.dirname(os.path.abspath(path))


def _module_in(directory: str, top: str) -> bool:
    return os.path.isfile(os.path.join(directory, top + ".py")) or os.path.isfile(
        os.path.join(directory, top, "__init__.py"))


# Names a package's own files never stand in for.
_NEVER_SIBLINGS = frozenset({"torch", "numpy", "typing_extensions"})


@dataclass(eq=False)
class SourceFile:
    """One file of the program read from disk: where it is, its module name, text and content hash; its
    skeleton is built when first asked for (a file read for its text alone is never parsed)."""

    path: str
    module: str
    is_package: bool
    digest: str
    source: str
    project: Project

    @cached_property
    def skeleton(self) -> Skeleton | None:
        """The file's skeleton, None if it does not parse."""
        return self.project.skeleton_of(self.digest, self.source)

    def absolute(self, name: str) -> str:
        return absolute_name(name, self.module, self.is_package, self.path)


@dataclass(eq=False)
class _View:
    """Where one checked file's imports are looked for: the directory its top package lives in, its own directory
    when it may run as a script, then the environment; and what was found there. Files with the same view share it."""

    roots: tuple[str, ...]  # (the package's directory first)
    system: tuple[str, ...]
    paths: dict[str, str | None] = field(default_factory=dict)  # module name -> file path
    # qualified name -> where it is defined, and the files the answer was read from
    names: dict[str, tuple[tuple[SourceFile, str] | None, tuple[SourceFile, ...]]] = field(default_factory=dict)


class Project:
    """Finds and reads the source files that define imported names. One per process.

    What a checked file's imports resolve to depends on that file alone (its package, its directory, the
    environment), never on which other files the same run or process checked: each file is read through its own
    `_View`. Pre-commit passes only the changed files, so a file's findings must not change with its company.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, int], str, SourceFile | None]] = {}  # path -> (stamp, digest, file)
        self.deps: dict[str, str] = {}  # files read for the check in progress: path -> content hash
        self.summary_dir: str | None = None  # where skeletons of library files are kept between runs
        environment = [p for p in sys.path if p and os.path.isdir(p)]
        for prefix in (os.environ.get("VIRTUAL_ENV"), os.environ.get("CONDA_PREFIX")):
            environment += site_packages(prefix) if prefix else []
        self._environment = tuple(dict.fromkeys(environment))
        self._views: dict[tuple[str, str | None, tuple[str, ...]], _View] = {}
        self._view = _View((), self._environment)  # (no file begun: the environment alone)
        self._checked = ""  # the file being checked
        # (package directory, most definers) -> method name -> modules defining it
        self._package_methods: dict[tuple[str, int | None], dict[str, tuple[str, ...]]] = {}

    def begin(self, path: str) -> tuple[str, bool]:
        """Start checking `path`: reset `deps`, look up its imports through its own view; its module name."""
        self.deps = {}
        self._checked = os.path.abspath(path)
        name, root, is_package = module_name_of(path)
        script = _script_directory(path, root)
        # (a script's own additions to the import path; a module of a package is imported, not run)
        in_package = os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(path)), "__init__.py"))
        added = _added_to_path(path) if not in_package else ()
        view = self._views.get((root, script, added))
        if view is None:
            view = self._views[(root, script, added)] = self._view_of(root, script, added)
        self._view = view
        return name, is_package

    def start_run(self) -> None:
        """Forget what was found on disk by earlier runs of this process (files may have been added since);
        the files read stay, each read again when its size or time changed."""
        self._views.clear()
        self._view = _View((), self._environment)
        self._package_methods.clear()
        _sibling_prefix.cache_clear()  # (read from disk too: a sibling added since)

    def _view_of(self, root: str, script: str | None, added: tuple[str, ...] = ()) -> _View:
        environment = _project_environment(root)
        system = self._environment + tuple(
            d for d in (site_packages(environment) if environment else ()) if d not in self._environment
        )
        roots = (root, script) if script is not None else (root,)
        return _View(roots + tuple(d for d in added if d not in roots), system)

    # --- files -------------------------------------------------------------

    def module_file(self, module: str, besides: str = "") -> str | None:
        """The source file of a dotted module name, searched like the import system, or None. With `besides`, the
        first one found that is not that file (uncached)."""
        view = self._view
        if module in view.paths and not besides:
            return view.paths[module]
        found = None
        if module and module.split(".", 1)[0] not in _SKIPPED:
            rel = module.replace(".", os.sep)
            # A namespace package (`megatron/` without `__init__.py`) is imported by its own name from the directory
            # above its package directory; only that name is looked up there, never a sibling project's files.
            top = view.roots[0] if view.roots else ""
            above = (os.path.dirname(top),) if top and module.split(".", 1)[0] == os.path.basename(top) else ()
            projects = _project_roots(top, module.split(".", 1)[0])
            # (another module of the name a file has itself is the project's, as its scripts run from its top)
            order = view.roots + above + (projects + view.system if besides else view.system + projects)
            for root in order:
                for candidate in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
                    if os.path.isfile(candidate) and candidate != besides:
                        found = candidate
                        break
                if found:
                    break
        if not besides:
            view.paths[module] = found
        return found

    def file(self, module: str, besides: str = "") -> SourceFile | None:
        """A module's source file as it is now (read again when it changed); records it in `deps`. With `besides`,
        one that is not that file."""
        path = self.module_file(module, besides)
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        stamp = (stat.st_size, stat.st_mtime_ns)
        cached = self._files.get(path)
        if cached is None or cached[0] != stamp:
            cached = (stamp, *self._read(path, module, stat.st_size))
            self._files[path] = cached
        if cached[1]:  # a file too large to read is not a dependency: nothing of it was used
            self.deps[path] = cached[1]
        return cached[2]

    def _read(self, path: str, module: str, size: int) -> tuple[str, SourceFile | None]:
        if size > _MAX_BYTES:
            return "", None
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return "", None
        digest = file_digest(data)
        source = with_lf(data.decode("utf-8", errors="replace"))
        return digest, SourceFile(path, module, path.endswith("__init__.py"), digest, source, self)

    def skeleton_of(self, digest: str, source: str) -> Skeleton | None:
        """The file's skeleton from the summary cache, else built (and stored); None if it does not parse."""
        path = os.path.join(self.summary_dir, f"{digest}.json") if self.summary_dir else None
        if path is not None:
            try:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
                if doc.get("format") == _SUMMARY_FORMAT:
                    return skeleton_from_dict(doc["skeleton"], source) if doc["skeleton"] else None
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                pass
        skeleton = build_skeleton(source)
        parsed = None if isinstance(skeleton, SourceError) else skeleton
        if path is not None:
            _write_json(path, {"format": _SUMMARY_FORMAT, "skeleton": skeleton_to_dict(parsed) if parsed else None})
        return parsed

    def package_definers(self, module: str, name: str) -> tuple[str, ...]:
        """The modules of `module`'s top-level package, other than `module`, whose text defines a method `name`
        (`def name(`): what an object of the package that no import names may run when `name` is called
        on it. A text trigger, read once per process and package; the files named are read (and recorded in
        `deps`) only when a caller opens them."""
        every = self.package_methods(module).get(name, ())
        directory = self.package_directory(module)
        if directory is not None:  # (the answer holds while the same files define `name`: a new or edited one may)
            self.deps[definers_key(directory, name)] = definers_digest(every)
        return _others(every, module)

    def package_definer_names(self, module: str, most: int) -> frozenset[str]:
        """The method names `package_definers` names 1 to `most` modules for (other than `module`), read from the
        package's table (once per process and package) without recording any name's definers as a dependency."""
        return frozenset(
            name for name, every in self.package_methods(module, most + 1).items()
            if 0 < len(_others(every, module)) <= most and not name.startswith(_HEIR)
        )

    def package_heirs(self, module: str, base: str) -> tuple[str, ...]:
        """The modules of `module`'s top-level package, other than `module`, whose text defines a class with a base
        named `base` (`class Child(EncBase):`, `class Child(base.EncBase, Mixin):`): where the classes inheriting a
        method of `base` (and no definer of the method) may be. Read from the same table as `package_definers`."""
        return self.package_definers(module, heir_key(base))

    def package_methods(self, module: str, most: int | None = None) -> dict[str, tuple[str, ...]]:
        """Method name -> the modules of `module`'s top-level package defining one (see `package_definers`); with
        `most`, only the names at most that many modules define."""
        directory = self.package_directory(module)
        if directory is None:
            return {}  # a file of no package, or a namespace package's (no directory of its own to read)
        key = (directory, most)
        table = self._package_methods.get(key)
        if table is None:
            if most is None:
                table = package_table(directory)
            else:
                table = {n: modules for n, modules in self.package_methods(module).items() if len(modules) <= most}
            self._package_methods[key] = table
        return table

    def package_directory(self, module: str) -> str | None:
        """The directory of `module`'s top-level package (None for a file of no package or a namespace package)."""
        top = module.partition(".")[0]
        init = self.module_file(top) if top and "." in module else None
        return os.path.dirname(init) if init is not None and os.path.basename(init) == "__init__.py" else None

    # --- names -------------------------------------------------------------

    def resolve(self, qualified: str) -> tuple[SourceFile, str] | None:
        """The file that defines a qualified name (a class or function, through re-exports) and the name there."""
        names = self._view.names
        cached = names.get(qualified)
        # Every file the answer passed through still as it is now (this records each in `deps`)? Else look again.
        if cached is not None and all(self.file(f.module) is f for f in cached[1]):
            return cached[0]
        names[qualified] = (None, ())  # a re-export cycle ends here
        visited: list[SourceFile] = []
        found = self._resolve(qualified, 0, visited)
        names[qualified] = (found, tuple(visited))
        return found

    def _resolve(self, qualified: str, hops: int, visited: list[SourceFile]) -> tuple[SourceFile, str] | None:
        if hops > _MAX_HOPS or "." not in qualified or qualified.startswith("."):
            return None
        module, _, name = qualified.rpartition(".")
        file = self.file(module)
        if file is not None and not hops and file.path == self._checked and file.skeleton is not None \
                and not _has_name(file, name, qualified):
            # `from model import FastSpeech2` in `utils/model.py`, which defines no such name: a module does not import
            # itself; the package of that name the project's top holds does
            file = self.file(module, besides=file.path) or file
        if file is None:
            return None
        visited.append(file)
        skeleton = file.skeleton
        if skeleton is None:
            return None
        if name in skeleton.classes or name in skeleton.functions:
            return file, name
        alias = skeleton.aliases.get(name)
        if alias is not None:  # `MLP = MultiLayerPerceptron` beside the class or its import
            head, _, rest = alias.partition(".")
            if not rest and (head in skeleton.classes or head in skeleton.functions):
                return file, head
            target = skeleton.imports.get(head)
            if target is None:
                return None
            target = file.absolute(target)
            return self._resolve(f"{target}.{rest}" if rest else target, hops + 1, visited)
        target = skeleton.imports.get(name)
        if target is None:
            for star in skeleton.stars:  # `from .policies import *` in a package's `__init__.py`
                found = self._resolve(f"{file.absolute(star)}.{name}", hops + 1, visited)
                if found is not None:
                    return found
            return None
        target = file.absolute(target)
        return self._resolve(target, hops + 1, visited) if target != qualified else None


def _has_name(file: SourceFile, name: str, qualified: str) -> bool:
    """Does `file` define or alias `name` at its top, or import it from elsewhere than `qualified` (its own import
    `from model import FastSpeech2` names the other module)?"""
    skeleton = file.skeleton
    if skeleton is None:
        return False
    if name in skeleton.classes or name in skeleton.functions or name in skeleton.aliases:
        return True
    return name in skeleton.imports and file.absolute(skeleton.imports[name]) != qualified


def _others(modules: tuple[str, ...], module: str) -> tuple[str, ...]:
    """The modules of a package's method table other than `module` (the checked file's own)."""
    return tuple(m for m in modules if m != module)


def site_packages(prefix: str) -> list[str]:
    """The site-packages directories of the Python environment installed at `prefix` (POSIX and Windows layouts)."""
    found = sorted(glob.glob(os.path.join(glob.escape(prefix), "lib", "python3*", "site-packages")))
    found.append(os.path.join(prefix, "Lib", "site-packages"))
    return [d for d in found if os.path.isdir(d)]


def _script_directory(path: str, root: str) -> str | None:
    """The directory of a file in a namespace portion (no `__init__.py` beside it), which may also run as a script
    importing its siblings by their own names (`from utils import x`): searched after its package's directory."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isfile(os.path.join(directory, "__init__.py")) or directory == root:
        return None
    return directory


def _added_to_path(path: str) -> tuple[str, ...]:
    """Directories a script puts on `sys.path` before its imports, relative to itself
    (`sys.path.append(os.path.join(os.path.dirname(__file__), ".."))`, `sys.path.insert(0,
    str(Path(__file__).parent.parent))`, `sys.path.append(os.path.join(ROOT_DIR, "models"))`) or to the directory it
    runs from, its own (`sys.path.append("core")`): its imports are found there too. Read from the file's head; a
    directory that does not exist is left out."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ()
    if "sys.path" not in head:
        return ()
    here = os.path.dirname(os.path.abspath(path))
    found = []
    for call in _PATH_ADDED.findall(head):
        base = here
        if "__file__" in call:
            for _ in range(max(call.count("dirname(") - 1, 0) + max(call.count(".parent") - 1, 0)):
                base = os.path.dirname(base)
        # (the literal parts joined on: `".."`, `"core"`; a name such as `ROOT_DIR` read as the script's directory)
        directory = os.path.normpath(os.path.join(base, *_STRING.findall(call)))
        if not os.path.isdir(directory):
            if "__file__" not in call:
                continue
            directory = base
        if directory not in found:
            found.append(directory)
    return tuple(found)


_HEAD_BYTES = 8192
# `sys.path.append(...)` / `sys.path.insert(0, ...)` on one line
_PATH_ADDED = re.compile(r"sys\.path\.(?:append|insert)\(([^\n]*)\)")
# A string literal of such a call (`"core"`, `'..'`).
_STRING = re.compile(r"""["']([^"'\n]*)["']""")


def _project_roots(top: str, package: str, levels: int = 5) -> tuple[str, ...]:
    """The directory above the checked file's own, a few levels up and not past the project's top (where `.git`,
    `pyproject.toml` or `setup.py` is), that holds the package `package` (at the project's top, a namespace
    package's directory too: `ldm/` with no `__init__.py`), searched last: a script kept in a folder of its project
    (`scripts/base_train.py`, `spinup/algos/pytorch/ppo/ppo.py` in a folder with no `__init__.py`) importing the
    project's package (`from nanochat.engine import Engine`), run from the project's top (`python -m
    scripts.base_train`) wherever zgen itself was started. Above a script's folders with no `__init__.py`
    (`autoregressive/train/`), a namespace package is that too, top or not, where that directory holds scripts of
    its own (`runs_scripts`: a project's home, not a folder of projects side by side)."""
    directory = top
    at_top = _project_top(directory)
    plain = not os.path.isfile(os.path.join(top, "__init__.py"))  # (no folder between is a package)
    for _ in range(levels):
        if at_top:
            break
        parent = os.path.dirname(directory)
        if not parent or parent == directory:
            break
        directory = parent
        at_top = _project_top(directory)
        if os.path.isfile(os.path.join(directory, package, "__init__.py")):
            return (directory,)
        if at_top and os.path.isdir(os.path.join(directory, package)):
            return (directory,)  # (a namespace package at the project's top: `ldm/` with no `__init__.py`)
        if plain and os.path.isdir(os.path.join(directory, package)) and runs_scripts(directory):
            # a script in a folder with no `__init__.py` (`exp/exp_main.py`, `autoregressive/train/train_c2i.py`)
            # importing a folder with none either beside its own top folder (`from utils.tools import
            # EarlyStopping`): both run from the folder above them, which holds the project's own entry scripts
            # (`run_longExp.py`, `app.py`)
            return (directory,)
        plain = plain and not os.path.isfile(os.path.join(directory, "__init__.py"))
    return ()


def runs_scripts(directory: str) -> bool:
    """Does `directory` hold Python scripts of its own (`run_longExp.py`, `main.py`): a project's home, run from
    there, not a folder of unrelated projects side by side?"""
    try:
        return any(name.endswith(".py") and name != "__init__.py" for name in os.listdir(directory))
    except OSError:
        return False


def _project_top(directory: str) -> bool:
    """Is `directory` the top of a project (its repository, its packaging)?"""
    return any(os.path.exists(os.path.join(directory, marker)) for marker in _PROJECT_TOP)


# What marks the top directory of a project (its repository, its packaging).
_PROJECT_TOP = (".git", "pyproject.toml", "setup.py")


def _project_environment(root: str, levels: int = 4) -> str | None:
    """A virtual environment kept in the checked file's project: `.venv` or `venv` (with its `pyvenv.cfg`) in the
    directory its top package lives in or in one of the few directories above it."""
    directory = root
    for _ in range(levels):
        for name in (".venv", "venv"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(os.path.join(candidate, "pyvenv.cfg")):
                return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None


def _write_json(path: str, doc: dict) -> None:
    """Write atomically; a cache that cannot be written only costs time."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = temporary_file(directory, ".summary.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass


# `def name(`: a method or function defined in a file, the text `package_methods` reads (a literal first: fast).
_METHOD_DEF = re.compile(rb"def (\w+)\(")
# `class Child(EncBase, nn.Module):`: the bases a class of a file names, kept in the same table as method names
# under `heir_key` (a key no method name can be), what `package_heirs` reads.
_CLASS_BASES = re.compile(rb"class \w+\(([^()]*)\):")
_BASE_NAME = re.compile(rb"(?<![\w.=])[A-Za-z_][\w.]*(?=\s*(?:,|$))")
_HEIR = "("


def heir_key(base: str) -> str:
    """The package table's key for the files defining a class with a base named `base` (its last dotted part)."""
    return f"{_HEIR}{base}"


# A package of more files than this is not read for method names (its table stays empty): the scan reads every file
# once per process, about 0.07 s per 1,000 files of 26 KB, which a larger package would spend on a one-file check.
_MAX_PACKAGE_FILES = 1000


def package_files(directory: str) -> list[str]:
    """The `.py` files under a package's `directory`, sorted (none when there are more than `_MAX_PACKAGE_FILES`)."""
    paths: list[str] = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        paths += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py")]
        if len(paths) > _MAX_PACKAGE_FILES:
            return []
    return paths


def package_table(directory: str) -> dict[str, tuple[str, ...]]:
    """Method name -> the modules defining one, over the package whose directory is `directory`."""
    return _package_methods(directory, os.path.basename(directory), package_files(directory))


# A finding that asked which files of a package define a method depends on that answer, not only on the files it
# read: the findings cache keeps it under `definers_key` (a path that names no file) with `definers_digest`.
def definers_key(directory: str, name: str) -> str:
    return f"{directory}{os.sep}def {name}("


def definers_of_key(key: str) -> tuple[str, str] | None:
    """(package directory, method name) of a `definers_key`, else None (a file's path)."""
    directory, sep, rest = key.rpartition(os.sep)
    return (directory, rest[4:-1]) if sep and rest.startswith("def ") and rest.endswith("(") else None


def definers_digest(modules: tuple[str, ...]) -> str:
    return file_digest("\n".join(modules).encode("utf-8"))


def package_module(directory: str, top: str, path: str) -> str:
    """The module name of the file `path` under the directory of the package `top` (`pkg/a/b.py`: `pkg.a.b`)."""
    parts = os.path.relpath(path, directory)[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join((top, *parts))


def _package_methods(directory: str, top: str, paths: list[str]) -> dict[str, tuple[str, ...]]:
    """Method name -> modules defining one, over the `.py` files `paths` under `directory`, the package `top`."""
    table: dict[str, list[str]] = {}
    for path in paths:
        try:
            if os.path.getsize(path) > _MAX_BYTES:
                continue
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        module = package_module(directory, top, path)
        for name in set(_METHOD_DEF.findall(data)):
            table.setdefault(name.decode("ascii", "replace"), []).append(module)
        heirs = {b.rpartition(b".")[2] for bases in _CLASS_BASES.findall(data) for b in _BASE_NAME.findall(bases)}
        for base in heirs:
            table.setdefault(heir_key(base.decode("ascii", "replace")), []).append(module)
    return {name: tuple(modules) for name, modules in table.items()}


_PROJECT: Project | None = None


def project() -> Project:
    """The process's project (one per worker, so library files are indexed once per process)."""
    global _PROJECT
    if _PROJECT is None:
        _PROJECT = Project()
    return _PROJECT
