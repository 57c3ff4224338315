"""The README is one screen, and the documentation site builds with ``mkdocs build --strict``.

The site (``mkdocs.yml``, pages under ``docs/``) fails its strict build on any
warning: a broken link or anchor, a page left out of the navigation. The
settings page is rendered from the settings schema at build time
(``docs/hooks.py``), so it can never disagree with ``stream-nb run --help``.
Every code block of the README and of the pages is a doctest (``pyproject.toml``
collects ``*.md`` under ``docs/``); a ``python`` block without ``>>>`` would run
nothing, so none may exist.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from stream_nb.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = ("evaluate-agrawal", "evaluate-led")  # stream-nb evaluate --report writes them


def pages() -> list[Path]:
    """README.md and every hand-written page of the site."""
    out = [ROOT / "README.md"]
    for page in sorted(DOCS.rglob("*.md")):
        if page.relative_to(DOCS).parts[0] not in GENERATED:
            out.append(page)
    return out


def build(site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_readme_is_one_screen():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; at most 250: move the rest to a page under docs/"


def test_ci_runs_the_readmes_test_command_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python -m pip install -e '.[test]' && python -m pytest -n 2 --dist loadgroup"
    assert f"```sh\n{command}\n```" in readme
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()[-1] == command


def test_every_python_block_is_a_doctest():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S):
            assert block.lstrip().startswith(">>> "), f"{page.relative_to(ROOT)}: a python block that is no doctest"


def test_the_site_builds_strictly_with_the_generated_settings_table(tmp_path):
    assert importlib.util.find_spec("material") is not None, "pip install -e '.[test]' installs mkdocs-material"
    proc = build(tmp_path / "site")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log, log
    for page in pages()[1:]:
        rel = page.relative_to(DOCS)
        built = tmp_path / "site" / (rel.parent if rel.stem == "index" else rel.with_suffix("")) / "index.html"
        assert built.is_file(), f"{rel} was not built"
    settings = html.unescape((tmp_path / "site" / "daemon" / "settings" / "index.html").read_text(encoding="utf-8"))
    for setting in SETTINGS:
        assert f"<code>{setting.flag}</code>" in settings and f"<code>{setting.env}</code>" in settings, setting.name
    source = (DOCS / "daemon" / "settings.md").read_text(encoding="utf-8")
    assert not re.search(r"^\| `--", source, flags=re.M), "settings.md holds a copied table: the hook renders it"
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text(encoding="utf-8")
    for heading in re.findall(r"^## (.+)$", (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"), flags=re.M):
        assert html.escape(heading, quote=False) in architecture, heading


def test_the_benchmark_plots_are_drawn_from_the_pages_tables(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("docs_plots", DOCS / "plots.py")
    plots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plots)
    monkeypatch.setattr(plots, "OUT", tmp_path)
    assert plots.main() == 0
    drawn = sorted(p.name for p in tmp_path.glob("*.png"))
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    embedded = sorted(re.findall(r"\]\(img/(bench-[a-z-]+\.png)\)", page))
    assert drawn == embedded and len(drawn) == len(plots.PLOTS)
    for name in drawn:
        assert (DOCS / "img" / name).is_file(), f"docs/img/{name}: run python docs/plots.py and commit it"
    rows = plots.table(plots.tables(page), "mean delay D")
    assert [plots.number(r[0]) for r in rows] == [20, 200, 2000]  # the parser reads the page's own numbers


def test_every_module_the_pages_name_exists():
    """A module path in backticks (``stats/schema/_runs.py``, or a bare ``_confluent.py`` named beside its
    folder) names a file of the repository: a module moved or merged takes its mentions with it."""
    files = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if ".git" not in p.parts}
    stale = []
    for page in [ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", *pages()]:
        if not page.is_file():
            continue
        for name in set(re.findall(r"`([\w/.]+\.py)\b", page.read_text(encoding="utf-8"))):
            if not any(f == name or f.endswith("/" + name) for f in files):
                stale.append(f"{page.relative_to(ROOT)}: {name}")
    assert not stale, stale
