"""The package's shape: imports between its modules flow one way (no cycle, even through an import
inside a function), no module reaches back into the package's facade, and no module touches the
interpreter's global machinery."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_propositions"
FACADE = "__init__"


def _module_name(package: Path, path: Path) -> str:
    """A module's dotted name inside the package: ``judging.judge``; a wing's ``__init__`` is the
    wing's name, the package's own is ``__init__`` (the facade)."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _modules(package: Path) -> set[str]:
    return {_module_name(package, p) for p in package.rglob("*.py")}


def _imports(source: str, modules: set[str], here: str = "") -> set[str]:
    """Package modules a module imports: at module level, inside functions, and under ``if
    TYPE_CHECKING:`` too (a type named from a module is a dependency on it, and a cycle through
    one is a cycle all the same). ``here`` is the importing module's own package (``judging``
    for ``judging.judge``). ``from . import name`` of a name that is no module reads that
    package's ``__init__``: at the top, the facade."""
    found: set[str] = set()
    base = here.split(".") if here else []

    def package_init(parts: list[str]) -> str:
        return ".".join(parts) if parts else FACADE

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            parts: list[str] | None = None
            if node.level >= 1:
                up = node.level - 1
                parts = base[: len(base) - up] if up else list(base)
                parts = [*parts, *((node.module or "").split(".") if node.module else [])]
            elif node.module is not None and node.module.split(".")[0] == PACKAGE.name:
                parts = node.module.split(".")[1:]
            if parts is not None:
                dotted = ".".join(parts)
                if parts and dotted in modules and not _is_package(dotted, modules):
                    found.add(dotted)
                else:
                    for alias in node.names:
                        name = ".".join([*parts, alias.name])
                        found.add(name if name in modules else package_init(parts))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE.name:
                    found.add(".".join(parts[1:]) or FACADE)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found & modules


def _is_package(dotted: str, modules: set[str]) -> bool:
    return any(m.startswith(dotted + ".") for m in modules)


def _lazy_names(source: str, modules: set[str]) -> set[str]:
    """The modules the facade loads on first use of a name (its ``_LAZY`` table's values)."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {v.value for v in node.value.values if isinstance(v, ast.Constant)} & modules
    return set()


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        name = _module_name(package, path)
        here = name if path.stem == "__init__" and name != FACADE else name.rpartition(".")[0]
        source = path.read_text(encoding="utf-8")
        edges = _imports(source, modules, here)
        if name == FACADE:
            edges |= _lazy_names(source, modules)
        graph[name] = edges - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_module_imports_flow_one_way() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_an_import_for_annotations_only_counts_for_cycles_and_layers(tmp_path: Path) -> None:
    """The store's seam once named the disk cache for an annotation while the disk cache took
    its base class from the seam: a cycle, though neither import ran alone."""
    package = tmp_path / PACKAGE.name
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "seam.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .disk import Disk\n",
        encoding="utf-8",
    )
    (package / "disk.py").write_text("from .seam import Closing\n", encoding="utf-8")
    assert _cycle(_graph(package)) == ["disk", "seam", "disk"]
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert config["exclude_type_checking_imports"] is False  # import-linter's layers: the same


def test_no_module_imports_the_facade() -> None:
    """``__init__`` only re-exports; a module reading it would close a cycle through its lazy
    names (and could see it half-initialized)."""
    graph = _graph()
    assert sorted(m for m, edges in graph.items() if FACADE in edges) == []
    assert {"claims.proposition", "verdict"} <= graph[FACADE]  # its lazy names are seen as edges


def test_the_local_engine_and_the_transport_do_not_know_the_judge() -> None:
    """The data flow the module names tell: the judge orchestrates, the transport talks to
    endpoints, the local engine provides one."""
    graph = _graph()

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    transports = ("judging.transport", "judging.transport_http", "judging.transport_litellm")
    lower = ("local.engine", *transports, "judging.endpoint", "redaction", "judging.judge_loop")
    for module in lower:
        assert "judging.judge" not in reaches(module), module
    for transport in transports:
        assert transport not in reaches("local.engine")
        assert "local.engine" not in reaches(transport)


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_every_kind_of_import_counts(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE.name
    package.mkdir()
    for name in ("__init__", "a", "b", "c", "d", "e", "f", "typing_only", "g"):
        (package / f"{name}.py").write_text("", encoding="utf-8")
    (package / "user.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import a\n"
        "from .b import thing\n"
        f"import {PACKAGE.name}.c\n"
        f"from {PACKAGE.name}.d import other\n"
        f"from {PACKAGE.name} import e\n"
        "def later():\n"
        "    from .f import late\n"
        "if TYPE_CHECKING:\n"
        "    from .typing_only import T\n"
        "else:\n"
        "    from .g import runtime_fallback\n",
        encoding="utf-8",
    )
    (package / "reader.py").write_text("from . import __version__\n", encoding="utf-8")
    graph = _graph(package)
    assert graph["user"] == {"a", "b", "c", "d", "e", "f", "g", "typing_only"}
    assert graph["reader"] == {FACADE}


def _forbidden_uses(source: str) -> set[str]:
    """Calls into the interpreter's global machinery: the collector's settings and frozen
    generation, the import system's finders and hooks, exit hooks, tracing hooks."""
    forbidden_attributes = {
        ("gc", "freeze"),
        ("gc", "unfreeze"),
        ("gc", "disable"),
        ("gc", "enable"),
        ("gc", "set_threshold"),
        ("gc", "callbacks"),
        ("sys", "meta_path"),
        ("sys", "path_hooks"),
        ("sys", "settrace"),
        ("sys", "setprofile"),
        ("sys", "excepthook"),
        ("atexit", "register"),
        ("threading", "excepthook"),
    }
    tree = ast.parse(source)
    # "import gc as collector": the alias names the module.
    aliases = {
        alias.asname or alias.name: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id, node.value.id)
            if (module, node.attr) in forbidden_attributes:
                found.add(f"{module}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in {"gc", "atexit", "sys"}:
            for alias in node.names:
                if (node.module, alias.name) in forbidden_attributes:
                    found.add(f"{node.module}.{alias.name}")
    return found


# Each exception names its reason. The local judge's server process must not outlive the
# interpreter: its stop is registered while the process runs and unregistered when it stops
# (the test below checks the pair), so no hook is left behind once the server is down.
ALLOWED = {("local/server.py", "atexit.register")}


def test_no_interpreter_global_machinery() -> None:
    offenders = sorted(
        f"{path.relative_to(PACKAGE).as_posix()}: {use}"
        for path in PACKAGE.rglob("*.py")
        for use in _forbidden_uses(path.read_text(encoding="utf-8"))
        if (path.relative_to(PACKAGE).as_posix(), use) not in ALLOWED
    )
    assert offenders == []


def test_an_allowed_exit_hook_is_unregistered_too() -> None:
    for name, use in ALLOWED:
        source = (PACKAGE / name).read_text(encoding="utf-8")
        if use in _forbidden_uses(source):  # still used: its pair must be there as well
            assert "atexit.unregister(" in source, name


def test_the_machinery_finder_finds_uses() -> None:
    source = (
        "import gc, sys, atexit\n"
        "import gc as collector\n"
        "from atexit import register\n"
        "collector.disable()\n"
        "gc.freeze()\n"
        "sys.meta_path.insert(0, object())\n"
        "# sys.settrace in a comment is not a use\n"
    )
    assert _forbidden_uses(source) == {
        "gc.freeze",
        "gc.disable",
        "sys.meta_path",
        "atexit.register",
    }


HEAVY_OWNERS = {
    # one module each; litellm and the openai SDK are one provider library
    "litellm": "judging.transport_litellm",
    "openai": "judging.transport_litellm",
    "httpx": "judging.transport_http",
    "diskcache": "store.database",
    "psycopg": "store.postgres",  # the optional [postgres] extra
}


def _importers(top_level: str) -> set[str]:
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(name.split(".")[0] == top_level for name in names):
                importers.add(_module_name(PACKAGE, path))
    return importers


def test_each_heavy_library_is_imported_by_exactly_one_module() -> None:
    """One adapter owns each provider library (litellm's path, the light path's HTTP client),
    and the transport that chooses between them imports neither: a change of library touches
    one module."""
    for library, owner in HEAVY_OWNERS.items():
        assert _importers(library) == {owner}, library


def test_no_heavy_library_is_imported_at_module_level() -> None:
    for owner in set(HEAVY_OWNERS.values()):
        tree = ast.parse((PACKAGE / f"{owner.replace('.', '/')}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom) and node.col_offset == 0:
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                assert not any(name.split(".")[0] in HEAVY_OWNERS for name in names), owner


# -- the layers, as import-linter contracts (pyproject.toml, [tool.importlinter]) ----------------

PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _layer_contract() -> dict[str, Any]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["type"] == "layers"]
    return dict(contract)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package found first on ``root`` (its own process: the contract
    reads whichever ``pytest_propositions`` that path holds)."""
    code = (
        "import sys\n"
        "from importlinter.cli import lint_imports\n"
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )


def test_the_layer_contract_names_every_wing_and_top_module() -> None:
    """A new wing or top-level module must be given its place in the layers."""
    named = {
        part.strip()
        for layer in _layer_contract()["layers"]
        for part in layer.replace("|", ":").split(":")
    }
    tops = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} | {
        p.stem for p in PACKAGE.glob("*.py") if p.stem != FACADE
    }
    assert tops - named == set()
    assert named - tops == set()
    assert len(list(PACKAGE.glob("*.py"))) <= 20  # the top stays small: kernel and face


def test_the_wings_import_downward_only() -> None:
    result = _lint(PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


def test_a_wing_importing_upward_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    store = tmp_path / PACKAGE.name / "store" / "cache.py"
    # The lowest wing reaching the judge, inside a function: still an import that runs.
    store.write_text(
        store.read_text(encoding="utf-8") + "\n\ndef _up():\n    from ..judging import judge\n",
        encoding="utf-8",
    )
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    assert "pytest_propositions.store.cache -> pytest_propositions.judging.judge" in result.stdout


def test_the_plugin_holds_hooks_and_fixtures_only() -> None:
    """Logic lives in the wings and the face's other modules (as xdist keeps ``DSession`` apart
    from its plugin): the entry point stays short enough to read in one sitting."""
    source = (PACKAGE / "plugin.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 350
    tree = ast.parse(source)
    assert not [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
            assert fixture or node.name.startswith("pytest_"), node.name


def test_main_only_hands_over_to_the_cli_wing() -> None:
    source = (PACKAGE / "__main__.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 20
    assert "from .cli.main import main" in source


def test_no_wing_is_named_like_a_public_name() -> None:
    """Importing a wing binds its name on the package, where it would hide a public name the
    facade loads lazily (``runs`` the function, shadowed by a ``runs/`` wing)."""
    import pytest_propositions

    wings = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert wings & set(pytest_propositions.__all__) == set()


# -- the optional wings' seams, module size, private names (issue 49) ----------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _named_modules(source: str, here: str) -> set[tuple[str, bool]]:
    """Every package module or name a module's imports name, dotted (``store.postgres``,
    ``local.engine.LocalServer``), each with whether the import runs when the module is loaded
    (at module level, outside ``if TYPE_CHECKING:``). Imports under TYPE_CHECKING count: a wing
    named in an annotation is still named."""
    base = here.split(".") if here else []
    found: set[tuple[str, bool]] = set()

    def visit(node: ast.AST, at_load: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            at_load = False
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, at_load)
            return
        if isinstance(node, ast.ImportFrom):
            parts: list[str] | None = None
            if node.level >= 1:
                up = node.level - 1
                parts = base[: len(base) - up] if up else list(base)
                parts = [*parts, *(node.module.split(".") if node.module else [])]
            elif node.module is not None and node.module.split(".")[0] == PACKAGE.name:
                parts = node.module.split(".")[1:]
            if parts is not None:
                for alias in node.names:
                    found.add((".".join([*parts, alias.name]), at_load))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE.name:
                    found.add((".".join(alias.name.split(".")[1:]), at_load))
        for child in ast.iter_child_nodes(node):
            visit(child, at_load)

    visit(ast.parse(source), True)
    return found


def _package_sources(package: Path = PACKAGE) -> dict[str, tuple[str, str]]:
    """Each module's dotted name -> (its own package, its source)."""
    sources = {}
    for path in sorted(package.rglob("*.py")):
        name = _module_name(package, path)
        here = name if path.stem == "__init__" and name != FACADE else name.rpartition(".")[0]
        sources[name] = (here, path.read_text(encoding="utf-8"))
    return sources


# Each optional wing and the one module of the core that names it: it imports the wing on first
# use, and everything else reaches the wing through the seam's Protocol
# (``judging.local_judge.LocalJudge``; ``store.shared.SharedStore``).
WING_SEAMS = {"local": "runtime", "store.postgres": "store.shared"}


def _wing_offenders(package: Path = PACKAGE) -> list[str]:
    offenders = []
    for module, (here, source) in _package_sources(package).items():
        for wing, seam in WING_SEAMS.items():
            if module == wing or module.startswith(wing + "."):
                continue
            for named, at_load in _named_modules(source, here):
                if named != wing and not named.startswith(wing + "."):
                    continue
                if module != seam:
                    offenders.append(f"{module} names {named}")
                elif at_load:
                    offenders.append(f"{module} imports {named} when it is loaded")
    return sorted(offenders)


def test_each_optional_wing_is_named_by_its_seam_only() -> None:
    """The local judge and the shared store stay optional: one module of the core reaches
    each, on first use (as pytest-xdist's scheduler modes are reached through one protocol)."""
    assert _wing_offenders() == []


def test_the_wing_seam_check_finds_a_second_door(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE.name
    for folder in ("", "local", "store", "cli"):
        (package / folder).mkdir(exist_ok=True)
        (package / folder / "__init__.py").write_text("", encoding="utf-8")
    (package / "local" / "engine.py").write_text("from . import other\n", encoding="utf-8")
    (package / "store" / "postgres.py").write_text("", encoding="utf-8")
    (package / "runtime.py").write_text(
        "def connect():\n    from .local.engine import local_connection\n", encoding="utf-8"
    )
    (package / "store" / "shared.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .postgres import Stats\n"
        "def open_it():\n    from .postgres import PostgresStore\n",
        encoding="utf-8",
    )
    assert _wing_offenders(package) == []
    (package / "cli" / "store.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from ..store.postgres import PostgresStore\n",
        encoding="utf-8",
    )
    (package / "session.py").write_text("from .local import engine\n", encoding="utf-8")
    (package / "store" / "shared.py").write_text(
        "from .postgres import PostgresStore\n", encoding="utf-8"
    )
    assert _wing_offenders(package) == [
        "cli.store names store.postgres.PostgresStore",
        "session names local.engine",
        "store.shared imports store.postgres.PostgresStore when it is loaded",
    ]


MAX_MODULE_LINES = 700


def test_no_package_module_is_over_700_lines() -> None:
    """A module a reader takes in at once; a longer one holds more than one thing to split by
    what each part owns."""
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES} == {}
    assert max(sizes.values()) > MAX_MODULE_LINES // 2  # the files were read


def _private_names(package: Path = PACKAGE) -> list[str]:
    """Another module's ``_private`` names that a module imports or reads as an attribute of a
    module it imported."""
    modules = _modules(package)
    found = []
    for module, (here, source) in _package_sources(package).items():
        for named, _ in _named_modules(source, here):
            owner, _, name = named.rpartition(".")
            if name.startswith("_") and not name.startswith("__") and named not in modules:
                found.append(f"{module} imports {owner}.{name}")
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith(PACKAGE.name)
            ):
                imported |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                imported |= {
                    alias.asname or alias.name.split(".")[0]
                    for alias in node.names
                    if alias.name.split(".")[0] == PACKAGE.name
                }
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{module} reads {node.value.id}.{node.attr}")
    return sorted(found)


def test_no_module_uses_another_modules_private_names() -> None:
    """A name shared between modules is public in the module that owns it (the trajectory
    notation is ``trace.notation``'s, not the recorder's private helpers)."""
    assert _private_names() == []


def test_the_private_name_check_finds_them(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE.name
    (package / "claims").mkdir(parents=True)
    for name in ("__init__", "trace", "claims/__init__", "claims/_hidden"):
        (package / f"{name}.py").write_text("", encoding="utf-8")
    (package / "claims" / "reader.py").write_text(
        "from ..trace import _format_entry, public\n"
        "from . import _hidden\n"  # a private module is imported by its name, which is allowed
        "from .. import trace\n"
        "def later():\n    return trace._select_window, trace.__name__\n",
        encoding="utf-8",
    )
    assert _private_names(package) == [
        "claims.reader imports trace._format_entry",
        "claims.reader reads trace._select_window",
    ]


def test_a_free_port_is_found_in_one_place() -> None:
    """Binding a probe to port 0 on loopback, reading the number and letting it go has one home,
    ``local/ports.py``: a second copy elsewhere in the package or the tests fails here."""
    import re

    probe = re.compile(r"\.bind\(\(\s*['\"]127\.0\.0\.1['\"]\s*,\s*0\s*\)\)")
    home = PACKAGE / "local" / "ports.py"
    assert probe.search(home.read_text(encoding="utf-8")), "the home lost its probe"
    tests = PACKAGE.parent / "tests"
    copies = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted([*PACKAGE.rglob("*.py"), *tests.rglob("*.py")])
        if path != home and probe.search(path.read_text(encoding="utf-8"))
    ]
    assert copies == [], "find a free port with pytest_propositions.local.ports"


def test_one_tinytroupe_stand_in() -> None:
    """TinyTroupe's shapes (its objects, and the package an inner run imports) live in
    ``tests/support/tinytroupe_like.py``: a second stand-in elsewhere in the tests fails here."""
    import re

    tests = PACKAGE.parent / "tests"
    home = tests / "support" / "tinytroupe_like.py"
    shapes = re.compile(r"[\"']tinytroupe/\w|^\s*MAX_SCORE = 9$|^class Library\w+", re.M)
    assert len(shapes.findall(home.read_text(encoding="utf-8"))) >= 3, "the home lost its shapes"
    copies = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("*.py"))
        if path != home and shapes.search(path.read_text(encoding="utf-8"))
    ]
    assert copies == [], "extend tests/support/tinytroupe_like.py instead"


def test_both_transports_only_where_the_path_differs() -> None:
    """A test runs once per path only in the modules ``tests/conftest.py`` names (what they check
    differs by path), and litellm's run of it is ``slow``: the fast tier takes the light path."""
    import re

    from tests.conftest import BOTH_PATHS_MODULES, LITELLM_PATH

    tests = PACKAGE.parent / "tests"
    twice = re.compile(r"def transport_path\(both_paths|\bon_paths\(")
    modules = {
        path.stem for path in tests.glob("test_*.py") if twice.search(path.read_text("utf-8"))
    }
    assert modules == BOTH_PATHS_MODULES
    assert [mark.name for mark in LITELLM_PATH.marks] == ["slow"]


def test_the_tests_serve_http_from_the_scripted_judge() -> None:
    """One HTTP server for the tests, ``tests/support/judge_server.py`` (on loopback, or run as a
    program): a test module writing its own request handler fails here."""
    import re

    tests = PACKAGE.parent / "tests"
    handler = re.compile(r"\bBaseHTTPRequestHandler\b|\bHTTPServer\(")
    own = {
        str(path.relative_to(tests))
        for path in tests.rglob("*.py")
        if handler.search(path.read_text(encoding="utf-8"))
    }
    assert own == {"support/judge_server.py"}
