"""The import rules of ARCHITECTURE.md, read from the code with ``ast``.

Every module of ``stream_nb/`` and ``connectors/`` is parsed (nothing is
imported) and each ``import`` / ``from ... import`` of our own modules becomes an
edge of the import graph. The build fails on:

- an import cycle;
- a private name (``_name``) imported from another module, or a private module
  (``pkg._mod``) imported from outside the package that holds it (the bottom
  layer, :data:`SHARED_PRIVATE`, is the whole project's);
- an import of our own modules inside a function or a class (heavy optional
  libraries such as matplotlib may be loaded late: they are not ours);
- a module of more than :data:`MAX_LINES` lines;
- a module in no layer, or an import from a higher layer (:data:`LAYERS`);
- :mod:`connectors` imported from :mod:`stream_nb` (the daemon loads a connector
  by name, once the mode is known);
- the learners importing the engine, or the engine importing a learner's class;
- in the count store, a module outside its concept folders, or a folder importing
  a folder after it in :data:`STATS_FOLDERS` (the folders are imported in one direction);
- a part of the count store (:data:`STORE_PARTS`) or of a learner (:data:`LEARNER_PARTS`) whose methods
  touch an attribute of ``self`` that the class does not define, or reach ``self`` by a computed name
  (``getattr``, ``setattr``, ``vars``): each part works on its own state and its arguments;
- a write into a count table or the Gaussian moments through a store's name (``s.value_count[c, u] += w``,
  ``np.add.at(s.pair_count, ...)``), or through a local alias of one within a function (``a = getattr(s, name);
  a[...] *= f``), outside :mod:`stream_nb.stats.tables`: the count tables part does every count's arithmetic;
- ``getattr(self, "name", ...)`` anywhere: an attribute read by its name with a default stands for one
  that may not exist; declare it (a class-level default, or set in ``__init__`` or ``_setup``).

``test_each_rule_catches_its_violation`` runs the same checks on a small tree
written for the purpose, so a rule that stopped seeing anything would fail too.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("stream_nb", "connectors")
MAX_LINES = 1000

#: Layer of each part: a module may import its own layer and those below. The longest prefix
#: wins; ``stream_nb`` itself (the package's ``__init__``, the public face) only by exact name.
LAYERS: dict[str, int] = {
    "stream_nb.exceptions": 1,
    "stream_nb._checks": 1,
    "stream_nb._version": 1,
    "stream_nb._pandas": 1,
    "stream_nb.kernels": 1,
    "stream_nb.stats": 2,
    "stream_nb.options": 2,
    "stream_nb.learners": 3,
    "stream_nb.snapshots": 4,
    "stream_nb": 4,
    "stream_nb.engine": 5,
    "stream_nb.ops": 6,
    "connectors": 6,
    "stream_nb.settings": 7,
    "stream_nb._console": 7,
    "stream_nb.daemon": 8,
    "stream_nb.tools": 8,
    "stream_nb.cli": 9,
    "stream_nb.__main__": 9,
}

#: Private modules of the bottom layer that every part of the project may import.
SHARED_PRIVATE = ("stream_nb._checks", "stream_nb._version", "stream_nb._pandas")


@dataclasses.dataclass(frozen=True)
class Import:
    """One import of one of our modules: who, what (the module), which names, where, how deep."""

    importer: str
    target: str
    names: tuple[str, ...]  # the names taken from ``target`` (empty for ``import target``)
    line: int
    local: bool  # inside a function or a class

    def __str__(self) -> str:
        what = f"from {self.target} import {', '.join(self.names)}" if self.names else f"import {self.target}"
        return f"{self.importer} line {self.line}: {what}"


def module_files(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """``{module name: file}`` of every module of :data:`PACKAGES` under ``root``."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _existing(name: str, modules: dict) -> str:
    """The longest prefix of ``name`` that is one of our modules."""
    parts = name.split(".")
    while len(parts) > 1 and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts)


def _walk(node: ast.AST, local: bool = False):
    """``(import node, local)`` for every import under ``node``; local: inside a def, lambda or class."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, local
        inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        yield from _walk(child, inner)


def imports_of(name: str, path: pathlib.Path, modules: dict) -> list[Import]:
    """The imports of our own modules in the module ``name``.

    ``from P import n`` is an import of the module ``P.n`` when that is a module,
    else of ``P`` taking the name ``n``; ``from .. import __version__`` (metadata
    of a package that holds the importer, set up before it) is not an edge.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node, local in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [Import(name, _existing(a.name, modules), (), node.lineno, local) for a in node.names
                    if _ours(a.name)]
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if not _ours(source):
            continue
        taken = []
        for alias in node.names:
            if f"{source}.{alias.name}" in modules:
                out.append(Import(name, f"{source}.{alias.name}", (), node.lineno, local))
            elif not (alias.name.startswith("__") and alias.name.endswith("__") and _inside(name, source)):
                taken.append(alias.name)
        if taken:
            out.append(Import(name, _existing(source, modules), tuple(taken), node.lineno, local))
    return out


@functools.lru_cache(maxsize=None)
def read_tree(root: pathlib.Path) -> tuple[dict[str, pathlib.Path], tuple[Import, ...]]:
    """The modules under ``root`` and every import of our own modules among them."""
    modules = module_files(root)
    return modules, tuple(i for name, path in modules.items() for i in imports_of(name, path, modules))


def layer_of(module: str) -> int | None:
    if module in LAYERS:
        return LAYERS[module]
    parts = module.split(".")
    for n in range(len(parts) - 1, 1, -1):  # packages only: "stream_nb" alone is the public face
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return LAYERS[prefix]
    if parts[0] == "connectors":
        return LAYERS["connectors"]
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# ----------------------------------------------------------------------------- the rules


def cycles(imports) -> list[list[str]]:
    """Each strongly connected component of the import graph with more than one module (or a self-import)."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        graph.setdefault(i.importer, set()).add(i.target)
        graph.setdefault(i.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def connect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def private_imports(imports) -> list[str]:
    """Private names taken from another module; private modules imported from outside their package."""
    out = []
    for i in imports:
        for n in i.names:
            if _is_private(n):
                out.append(f"{i}: the private name {n} of {i.target}")
        parts = i.target.split(".")
        first = next((k for k, part in enumerate(parts) if _is_private(part)), None)
        if first is None:
            continue
        owner, private = ".".join(parts[:first]), ".".join(parts[: first + 1])
        if not _inside(i.importer, owner) and private not in SHARED_PRIVATE:
            out.append(f"{i}: the private module {private} from outside {owner}")
    return out


#: Our modules that import numba: only the kernels' loader imports them, late (on the first learning call),
#: so that commands that never learn never import numba.
NUMBA_MODULES = ("stream_nb.kernels._address",)


def local_imports(imports) -> list[str]:
    return [f"{i}: inside a function or class" for i in imports
            if i.local and not (i.target in NUMBA_MODULES and i.importer == "stream_nb.kernels._loader")]


def long_modules(modules: dict[str, pathlib.Path]) -> list[str]:
    out = []
    for name, path in modules.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            out.append(f"{name}: {n} lines (at most {MAX_LINES})")
    return out


def layer_violations(modules: dict[str, pathlib.Path], imports) -> list[str]:
    out = [f"{m}: in no layer of ARCHITECTURE.md" for m in modules if layer_of(m) is None]
    for i in imports:
        low, high = layer_of(i.importer), layer_of(i.target)
        if low is not None and high is not None and high > low:
            out.append(f"{i}: layer {low} imports layer {high}")
    return out


def learner_classes(modules: dict[str, pathlib.Path]) -> set[str]:
    """The classifier classes of :mod:`stream_nb.learners`: ``BayesClassifier`` and every class derived from it."""
    bases: dict[str, set[str]] = {}
    for name, path in modules.items():
        if _inside(name, "stream_nb.learners"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    bases[node.name] = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    found = {"BayesClassifier"}
    while True:
        more = {c for c, b in bases.items() if b & found} - found
        if not more:
            return found
        found |= more


def forbidden_imports(modules: dict[str, pathlib.Path], imports) -> list[str]:
    """The named rules: stream_nb never imports connectors; the learners never import the engine; the
    engine never imports a learner's class (it takes any model; a helper function of the learners is fine)."""
    classes = learner_classes(modules)
    out = []
    for i in imports:
        if _inside(i.importer, "stream_nb") and _inside(i.target, "connectors"):
            out.append(f"{i}: stream_nb imports connectors (the daemon loads a connector by name)")
        if _inside(i.importer, "stream_nb.learners") and _inside(i.target, "stream_nb.engine"):
            out.append(f"{i}: a learner imports the engine")
        if _inside(i.importer, "stream_nb.engine") and (_inside(i.target, "stream_nb.learners") or i.target == "stream_nb"):
            for n in sorted(set(i.names) & classes):
                out.append(f"{i}: the engine imports the learner class {n}")
    return out


#: The count store's folders, each importing only those before it (and ``stream_nb``'s lower layers).
STATS_FOLDERS = ("values", "discretiser", "tables", "schema", "selection", "budget", "forgetting", "store")


def folder_violations(modules: dict[str, pathlib.Path], imports, package: str = "stream_nb.stats",
                      order: tuple[str, ...] = STATS_FOLDERS) -> list[str]:
    """A module of ``package`` in none of its folders ``order``; an import of a later folder from an earlier one."""
    def folder(module: str) -> str | None:
        rest = module[len(package) + 1:].split(".")[0] if _inside(module, package) and module != package else None
        return rest if rest in order else None

    out = [f"{m}: in no folder of {package}" for m in modules
           if _inside(m, package) and m != package and folder(m) is None]
    for i in imports:
        low, high = folder(i.importer), folder(i.target)
        if low is not None and high is not None and order.index(high) > order.index(low):
            out.append(f"{i}: the folder {low} imports the later folder {high}")
    return out


#: The parts the count store is composed of, by module: each is read and tested alone.
STORE_PARTS = {
    "stream_nb.stats.values._labels": ("Labels",),
    "stream_nb.stats.values._columns": ("Columns",),
    "stream_nb.stats.discretiser._discretise": ("Discretiser",),
    "stream_nb.stats.discretiser._waiting": ("Waiting",),
    "stream_nb.stats.selection._pair_selection": ("PairSelection",),
    "stream_nb.stats.selection._tuple_selection": ("TupleSelection",),
    "stream_nb.stats.tables._gaussian": ("GaussianMoments",),
    "stream_nb.stats.tables._sparse": ("SparseTable",),
    "stream_nb.stats.tables._counts": ("CountTables",),
    "stream_nb.stats.budget._budget": ("Budget",),
    "stream_nb.stats.budget._shared_pairs": ("SharedPairs",),
    "stream_nb.stats.budget._layout": ("Layout",),
    "stream_nb.stats.schema._value_types": ("ValueTypes",),
    "stream_nb.stats.schema._schema": ("Schema",),
    "stream_nb.stats.schema._runs": ("RunEncoder",),
    "stream_nb.stats.forgetting._journal": ("JournalWriter", "JournalReader"),
}


#: The parts a learner holds, by module: each works on what it is given, never on the learner's attributes.
LEARNER_PARTS = {
    "stream_nb.learners._forgetting": ("Forgetting",),
}


def foreign_attributes(modules: dict[str, pathlib.Path], parts: dict = STORE_PARTS) -> list[str]:
    """Each use in a part's methods of an attribute of ``self`` the part does not define (assigned on
    ``self``, or a name of its class body, its bases in the same module included), and each ``self``
    reached by a computed name."""
    out = []
    for module, names in parts.items():
        tree = ast.parse(modules[module].read_text(encoding="utf-8"))
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

        def own(cls: ast.ClassDef) -> set[str]:
            found = set()
            for node in cls.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        found |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            for node in ast.walk(cls):
                if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                        and isinstance(node.value, ast.Name) and node.value.id == "self"):
                    found.add(node.attr)
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in classes:
                    found |= own(classes[base.id])
            return found

        for name in names:
            cls = classes[name]
            defined = own(cls)
            for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                for node in ast.walk(method):
                    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                            and node.value.id == "self" and node.attr not in defined
                            and not (node.attr.startswith("__") and node.attr.endswith("__"))):
                        out.append(f"{module}.{name}.{method.name} line {node.lineno}: self.{node.attr} is not its own")
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                            and node.func.id in ("getattr", "setattr", "hasattr", "delattr", "vars") and node.args
                            and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
                        named = node.args[1] if len(node.args) > 1 else None
                        if not (isinstance(named, ast.Constant) and named.value in defined):
                            out.append(f"{module}.{name}.{method.name} line {node.lineno}: "
                                       f"{node.func.id}(self, ...) reaches an attribute that is computed or not its own")
    return out


#: The parts a store holds, by the name it holds each by, and the module of each: only there are a part's
#: attributes assigned; everywhere else it is changed by its methods.
HELD_PARTS = {
    "schema": "stream_nb.stats.schema._schema",
    "budget": "stream_nb.stats.budget._budget",
    "moments": "stream_nb.stats.tables._gaussian",
    "waiting": "stream_nb.stats.discretiser._waiting",
    "selection": "stream_nb.stats.selection._pair_selection",
    "tuple_selection": "stream_nb.stats.selection._tuple_selection",
    "tables": "stream_nb.stats.tables._counts",
    "sharing": "stream_nb.stats.budget._shared_pairs",
    "runs": "stream_nb.stats.schema._runs",
    "layout": "stream_nb.stats.budget._layout",
}


def part_writes(modules: dict[str, pathlib.Path], held: dict = HELD_PARTS) -> list[str]:
    """Each assignment outside a part's module to an attribute of a part a store holds (``s.selection.edges =``,
    ``s.waiting.backlog += ``, ``s.selection.allowed[f] =``, one of a tuple unpacked)."""
    def assigned(target):  # the attributes an assignment writes (or writes into, by an index)
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                yield from assigned(elt)
        elif isinstance(target, ast.Starred):
            yield from assigned(target.value)
        elif isinstance(target, ast.Subscript):
            yield from assigned(target.value)
        elif isinstance(target, ast.Attribute):
            yield target

    out = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                for a in assigned(target):
                    part = a.value.attr if isinstance(a.value, ast.Attribute) else None
                    if part in held and held[part] != module:
                        out.append(f"{module} line {a.lineno}: {ast.unparse(a)} is assigned outside {held[part]}")
    return out


#: The names a store reads its count tables by (read-only: :class:`~stream_nb.stats.tables.CountTables` writes them),
#: and its Gaussian moments by (:class:`~stream_nb.stats.tables.GaussianMoments` writes them).
COUNT_NAMES = ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat")
COUNT_NAMES += tuple("obs_" + name for name in COUNT_NAMES[1:]) + ("g_n", "g_mean", "g_m2")
#: The package whose modules write the count tables.
COUNT_WRITER = "stream_nb.stats.tables"


def count_writes(modules: dict[str, pathlib.Path], names: tuple = COUNT_NAMES, writer: str = COUNT_WRITER) -> list[str]:
    """Each write, outside ``writer``, into a count table reached by a store's name: an assignment into it
    (``s.value_count[c, u] += w``, ``getattr(s, p + "feat_count")[c, f] = 0``, ``s.tuple_count._n = n``), or an
    add at indices (``np.add.at(s.pair_count, ...)``, ``np.subtract.at(...)``, ``s.tuple_count.add(...)``,
    ``s.pair_count.add_rows(...)``); and the same through a local alias of a table within one function
    (``a = s.value_count`` or ``a = getattr(s, name)`` with a computed ``name``, a view of it ``a = s.g_n[r]``,
    an alias of an alias, one of a tuple unpacked, a loop's name over tables): ``a[...] *= f``, ``a *= f``
    (in place), ``a.add(...)``."""
    def own(scope):  # the nodes of a module or function, not those of the functions defined in it
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo += ast.iter_child_nodes(node)

    def count_name(node) -> str | None:  # the count name a node reaches a table by, if any
        if isinstance(node, ast.Attribute) and node.attr in names:
            return node.attr
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) > 1):
            for n in ast.walk(node.args[1]):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names:
                    return n.value
        return None

    def computed(node, spelled) -> bool:  # getattr(x, name) by a name no string spells: it may be a count
        # table's, unless every binding of the name in the function is a loop over strings (``spelled``) none of
        # which is a count name
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) == 2 and not any(isinstance(n, ast.Constant) for n in ast.walk(node.args[1]))):
            return False
        key = node.args[1]
        return not (isinstance(key, ast.Name) and key.id in spelled and not spelled[key.id] & set(names))

    def table(node, aliases, spelled) -> bool:  # whether a node is (a view of) a count table, or an alias of one
        while isinstance(node, ast.Subscript):
            node = node.value
        return bool(count_name(node)) or computed(node, spelled) or (isinstance(node, ast.Name) and node.id in aliases)

    def bound(target, value):  # (name, value) pairs an assignment binds, a tuple unpacked element by element
        if isinstance(target, ast.Name):
            yield target.id, value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                yield from bound(t, v)

    def aliases_of(scope, spelled) -> set:  # the local names bound, anywhere in the scope, to a count table
        pairs = []
        for node in own(scope):
            if isinstance(node, ast.Assign):
                pairs += [p for t in node.targets for p in bound(t, node.value)]
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                pairs += list(bound(node.target, node.value))
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.Tuple, ast.List)):
                pairs += [p for v in node.iter.elts for p in bound(node.target, v)]
        aliases: set = set()
        while True:  # an alias of an alias, to a fixed point
            more = {name for name, value in pairs if table(value, aliases, spelled)} - aliases
            if not more:
                return aliases
            aliases |= more

    def written(target, aliases, spelled):  # the tables an assignment writes into (by an index or an attribute)
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                yield from written(elt, aliases, spelled)
        elif isinstance(target, ast.Starred):
            yield from written(target.value, aliases, spelled)
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and table(target.value, aliases, spelled):
            yield target

    def writes(scope, aliases, spelled):  # (line, what) of each write into a table in the scope
        for node in own(scope):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                for _ in written(target, aliases, spelled):
                    yield node.lineno, f"{ast.unparse(target)} is written"
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in aliases:
                yield node.lineno, f"{ast.unparse(node.target)} (an alias of a count table) is written in place"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                f = node.func
                at = f.attr == "at" and isinstance(f.value, ast.Attribute) and node.args and table(node.args[0], aliases, spelled)
                method = f.attr in ("add", "add_rows", "add_flat", "reserve", "set_held") and table(f.value, aliases, spelled)
                if at or method:
                    yield node.lineno, f"{ast.unparse(node.func)}(...) on a count table is written"

    def strings(node, consts) -> set | None:  # the strings a tuple or list of them (or a constant naming one) holds
        if isinstance(node, ast.Name):
            return consts.get(node.id)
        if isinstance(node, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return {e.value for e in node.elts}
        return None

    def loop_names(scope, consts) -> dict:  # each name every binding of which in the scope is a loop over strings
        spelled, loops = {}, set()
        for node in own(scope):
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                values = strings(node.iter, consts)
                if values is not None:
                    loops.add(node.target)
                    spelled.setdefault(node.target.id, set()).update(values)
        other = {node.id for node in own(scope) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                 and node not in loops}
        other |= {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)} if hasattr(scope, "args") else set()
        return {k: v for k, v in spelled.items() if k not in other}

    out = []
    for module, path in modules.items():
        if _inside(module, writer):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        consts = {t.id: v for node in tree.body if isinstance(node, ast.Assign)
                  for t in node.targets if isinstance(t, ast.Name) and (v := strings(node.value, {})) is not None}
        found = set()
        for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]:
            spelled = loop_names(scope, consts)
            found |= set(writes(scope, aliases_of(scope, spelled), spelled))
        out += [f"{module} line {line}: {what} outside {writer}" for line, what in sorted(found)]
    return out


def named_self_lookups(modules: dict[str, pathlib.Path]) -> list[str]:
    """Each ``getattr(self, "<name>", ...)``: an attribute of ``self`` looked up by a name written out."""
    out = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                out.append(f"{module} line {node.lineno}: {ast.unparse(node)} (declare {node.args[1].value!r})")
    return out


# ----------------------------------------------------------------------------- the checks on our code


def _report(found: list) -> str:
    return "\n".join(map(str, found))


def test_no_import_cycle():
    found = cycles(read_tree(ROOT)[1])
    assert not found, _report(" <-> ".join(c) for c in found)


def test_no_private_name_imported_across_modules():
    found = private_imports(read_tree(ROOT)[1])
    assert not found, _report(found)


def test_no_function_local_import_of_our_own_modules():
    found = local_imports(read_tree(ROOT)[1])
    assert not found, _report(found)


def test_no_module_over_1000_lines():
    found = long_modules(read_tree(ROOT)[0])
    assert not found, _report(found)


def test_layers_import_downward_only():
    found = layer_violations(*read_tree(ROOT))
    assert not found, _report(found)


def test_the_stores_folders_import_in_one_direction():
    found = folder_violations(*read_tree(ROOT))
    assert not found, _report(found)


def test_each_part_of_the_store_touches_only_its_own_attributes():
    found = foreign_attributes(read_tree(ROOT)[0])
    assert not found, _report(found)


def test_each_part_of_a_learner_touches_only_its_own_attributes():
    found = foreign_attributes(read_tree(ROOT)[0], LEARNER_PARTS)
    assert not found, _report(found)


def test_no_attribute_of_self_is_looked_up_by_a_name_written_out():
    found = named_self_lookups(read_tree(ROOT)[0])
    assert not found, _report(found)


def test_the_parts_a_store_holds_are_changed_by_their_methods_only():
    found = part_writes(read_tree(ROOT)[0])
    assert not found, _report(found)


def test_the_count_tables_are_written_by_their_part_only():
    found = count_writes(read_tree(ROOT)[0])
    assert not found, _report(found)


def test_connectors_learners_and_engine_keep_apart():
    found = forbidden_imports(*read_tree(ROOT))
    assert not found, _report(found)


# ----------------------------------------------------------------------------- the checks catch what they should


FIXTURE = {
    "stream_nb/__init__.py": "from .learners import NB\nfrom ._version import __version__\n",
    "stream_nb/_version.py": "__version__ = '0'\n",
    "stream_nb/_checks.py": "",
    "stream_nb/exceptions.py": "",
    "stream_nb/stats/__init__.py": "from ._store import Stats\n",
    "stream_nb/stats/_store.py": (
        "from .._checks import is_integer\nclass Stats: pass\n"
        "def choose(s, other):\n    s.selection.rule, n = 'edges', 0\n    s.selection.allowed[0] |= True\n"
        "    s.selection.choose(other.selection.allowed)\n    s.other.rule = None\n"
        "def count(s, p, c, w):\n    s.value_count[c, 1] += w\n    getattr(s, p + 'feat_count')[c][0] = 0.0\n"
        "    np.add.at(s.pair_count, (c, 0, 1), w)\n    s.obs_tuple_count.add((c, 0), w)\n"
        "    s.class_count[c], n = w, s.class_count[c]\n    total = s.value_count[c, 1] + w\n    s.counts[c] += w\n"
        "def decay(s, f, names):\n    for name in names:\n        a = getattr(s, name)\n        a[...] *= f\n"
        "    b, c = s.value_count, s.pair_count[0]\n    b *= f\n    np.subtract.at(c, (0, 1), f)\n    d = b\n"
        "    d.add((0, 1), f)\n    n = s.g_n[:2]\n    n[...], m = 0.0, n.sum()\n"
        "    for k in ('state', 'time'):\n        getattr(s, k)[0] = 0.0\n    for j in ('g_n', 'g_m2'):\n"
        "        getattr(s, j)[0] = 0.0\n    for e in (s.obs_feat_count, s.g_m2):\n        e[0] = 0.0\n"
        "    x = s.counts\n    x[0] = a.sum() + c.sum()\n"
    ),
    "stream_nb/stats/tables/__init__.py": "from ..selection import pick\n",
    "stream_nb/stats/selection/__init__.py": "def pick(): pass\n",
    "stream_nb/stats/tables/_part.py": (
        "class Base:\n    size = 0\n"
        "class Part(Base):\n    def __init__(self):\n        self.n = 0\n"
        "    def add(self, other):\n        self.n += other.n + self.size + len(self.classes)\n"
        "    def peek(self, name):\n        return getattr(self, name)\n"
        "    def size_of(self, other):\n        return getattr(self, 'n', 0) + getattr(other, 'n')\n"
        "def fill(tables, c):\n    tables.held.value_count[c, 1] += 1.0\n"
    ),
    "stream_nb/learners/__init__.py": "from ._base import BayesClassifier, step\nfrom .nb import NB\n",
    "stream_nb/learners/_base.py": "class BayesClassifier: pass\ndef step(): pass\n",
    "stream_nb/learners/_binning.py": "def check(): pass\n",
    "stream_nb/learners/nb.py": (
        "from ..stats import Stats\nfrom ..engine import Engine\nfrom ._binning import check\n"
        "from .kdb import _helper\nfrom ._base import BayesClassifier\nclass NB(BayesClassifier): pass\n"
    ),
    "stream_nb/learners/kdb.py": "def _helper(): pass\n",
    "stream_nb/engine/__init__.py": "from ._engine import Engine\n",
    "stream_nb/engine/_engine.py": (
        "from .. import __version__\nfrom ..learners import NB, step\nfrom .. import NB as Model\nclass Engine:\n"
        "    def run(self):\n        from ..stats import Stats\n        import numpy\n"
    ),
    "stream_nb/ops/__init__.py": "from ..engine import Engine\nfrom .. import settings\n",
    "stream_nb/settings.py": "from .engine import Engine\nfrom .daemon import start\n",
    "stream_nb/daemon/__init__.py": "from ..settings import x\nfrom ..engine._engine import Engine\nimport connectors.jsonl\n",
    "stream_nb/tools/__init__.py": "import stream_nb\nfrom . import report\n",
    "stream_nb/tools/report.py": "def plot():\n    import matplotlib\n",
    "stream_nb/stray.py": "",
    "stream_nb/cli.py": "from . import __version__, daemon, tools\n" + "\n" * 1001,
    "connectors/__init__.py": "",
    "connectors/jsonl.py": (
        "from stream_nb.engine import Engine\nfrom stream_nb._checks import is_integer\n"
        "class Sink:\n    def close(self):\n        getattr(self, 'handle')\n"
    ),
    "connectors/kafka.py": "from stream_nb.engine._engine import Engine\nfrom .jsonl import _split\n",
}


@pytest.fixture(scope="module")
def fixture_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    for name, text in FIXTURE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return read_tree(root)


def test_each_rule_catches_its_violation(fixture_tree):
    modules, imports = fixture_tree
    # settings -> daemon -> settings; learners.nb -> engine -> learners and the public face (through the __init__s)
    assert sorted(cycles(imports)) == [
        ["stream_nb", "stream_nb.engine", "stream_nb.engine._engine", "stream_nb.learners", "stream_nb.learners.nb"],
        ["stream_nb.daemon", "stream_nb.settings"],
    ]
    assert private_imports(imports) == [
        "stream_nb.daemon line 2: from stream_nb.engine._engine import Engine: "
        "the private module stream_nb.engine._engine from outside stream_nb.engine",
        "stream_nb.learners.nb line 4: from stream_nb.learners.kdb import _helper: "
        "the private name _helper of stream_nb.learners.kdb",
        "connectors.kafka line 1: from stream_nb.engine._engine import Engine: "
        "the private module stream_nb.engine._engine from outside stream_nb.engine",
        "connectors.kafka line 2: from connectors.jsonl import _split: the private name _split of connectors.jsonl",
    ]
    # numpy and matplotlib inside functions are not ours: only the engine's late import of stats counts
    assert local_imports(imports) == [
        "stream_nb.engine._engine line 6: from stream_nb.stats import Stats: inside a function or class"
    ]
    assert long_modules(modules) == ["stream_nb.cli: 1002 lines (at most 1000)"]
    assert layer_violations(modules, imports) == [
        "stream_nb.stray: in no layer of ARCHITECTURE.md",
        "stream_nb.learners.nb line 2: from stream_nb.engine import Engine: layer 3 imports layer 5",
        "stream_nb.ops line 2: import stream_nb.settings: layer 6 imports layer 7",
        "stream_nb.settings line 2: from stream_nb.daemon import start: layer 7 imports layer 8",
    ]
    assert forbidden_imports(modules, imports) == [
        "stream_nb.daemon line 3: import connectors.jsonl: stream_nb imports connectors "
        "(the daemon loads a connector by name)",
        "stream_nb.engine._engine line 2: from stream_nb.learners import NB, step: the engine imports the learner class NB",
        "stream_nb.engine._engine line 3: from stream_nb import NB: the engine imports the learner class NB",
        "stream_nb.learners.nb line 2: from stream_nb.engine import Engine: a learner imports the engine",
    ]
    assert folder_violations(modules, imports) == [
        "stream_nb.stats._store: in no folder of stream_nb.stats",
        "stream_nb.stats.tables line 1: from stream_nb.stats.selection import pick: "
        "the folder tables imports the later folder selection",
    ]
    assert foreign_attributes(modules, {"stream_nb.stats.tables._part": ("Part",)}) == [
        "stream_nb.stats.tables._part.Part.add line 7: self.classes is not its own",
        "stream_nb.stats.tables._part.Part.peek line 9: getattr(self, ...) reaches an attribute that is computed or not its own",
    ]
    # the store's writes into its count tables (reads, other names and the tables' own writes are fine)
    assert count_writes(modules) == [
        "stream_nb.stats._store line 9: s.value_count[c, 1] is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 10: getattr(s, p + 'feat_count')[c][0] is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 11: np.add.at(...) on a count table is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 12: s.obs_tuple_count.add(...) on a count table is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 13: (s.class_count[c], n) is written outside stream_nb.stats.tables",
        # through local aliases: a computed getattr, a view, an alias of an alias, a loop over tables, in place;
        # not a loop's name over other strings (line 28), an alias read (line 34) or another array (line 34)
        "stream_nb.stats._store line 19: a[...] is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 21: b (an alias of a count table) is written in place outside stream_nb.stats.tables",
        "stream_nb.stats._store line 22: np.subtract.at(...) on a count table is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 24: d.add(...) on a count table is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 26: (n[...], m) is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 30: getattr(s, j)[0] is written outside stream_nb.stats.tables",
        "stream_nb.stats._store line 32: e[0] is written outside stream_nb.stats.tables",
    ]
    # only a name written out, of self: not a computed one, nor another object's
    assert named_self_lookups(modules) == [
        "stream_nb.stats.tables._part line 11: getattr(self, 'n', 0) (declare 'n')",
        "connectors.jsonl line 5: getattr(self, 'handle') (declare 'handle')",
    ]
    assert part_writes(modules) == [
        "stream_nb.stats._store line 4: s.selection.rule is assigned outside stream_nb.stats.selection._pair_selection",
        "stream_nb.stats._store line 5: s.selection.allowed is assigned outside stream_nb.stats.selection._pair_selection",
    ]
