"""Lines of code of the project's packages: not blank lines, comments or docstrings.

    python bench/loc.py                       # the issue's two counts
    python bench/loc.py stream_nb/stats ...   # any folders, module by module

A line counts when a token other than a comment or a docstring stands on it; a
string that is the first statement of a module, class or function is a docstring.
"""

from __future__ import annotations

import ast
import io
import pathlib
import sys
import tokenize

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The two counts the project keeps: the store, the learners and the kernels; and both packages.
GROUPS = {
    "stream_nb/stats + stream_nb/learners + stream_nb/kernels": ("stream_nb/stats", "stream_nb/learners",
                                                                 "stream_nb/kernels"),
    "stream_nb + connectors": ("stream_nb", "connectors"),
}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def lines_of_code(path: pathlib.Path) -> int:
    """The lines of ``path`` that hold code."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _SKIP:
            code.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docstrings)
    return len(code)


def count(folders) -> dict[str, int]:
    """``{module path: lines of code}`` of every module under ``folders``."""
    return {str(p.relative_to(ROOT)): lines_of_code(p) for folder in folders
            for p in sorted((ROOT / folder).rglob("*.py"))}


def main(argv: list[str]) -> None:
    if argv:
        rows = count(argv)
        for path, n in sorted(rows.items(), key=lambda item: item[1]):
            print(f"{n:6d}  {path}")
        print(f"{sum(rows.values()):6d}  total")
        return
    for name, folders in GROUPS.items():
        print(f"{sum(count(folders).values()):6d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
