"""MkDocs hooks: pages built from the repository's own sources at build time.

``<!-- settings-table -->`` becomes the table of ``stream-nb run``'s settings,
rendered from :data:`stream_nb.settings.SETTINGS` (flag, environment variable,
TOML key, default, meaning), so the page never holds a copy that can drift.
``<!-- include PATH -->`` becomes the text of ``PATH`` (relative to the
repository's root): ARCHITECTURE.md and CHANGELOG.md stay where readers of the
repository look for them and are pages of the site too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's package, not another installed copy
    sys.path.insert(0, str(ROOT))

INCLUDE = re.compile(r"^<!-- include (\S+) -->$", re.M)
SETTINGS_TABLE = "<!-- settings-table -->"


def cell(text: str) -> str:
    """One table cell: pipes escaped, never a line break."""
    return " ".join(str(text).split()).replace("|", "\\|")


def default_text(setting) -> str:
    """The default as the TOML file would write it; empty when the setting has none."""
    default = setting.default
    if default in (None, {}, (), []):
        return ""
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, str):
        return f'`"{default}"`'
    return f"`{default}`"


def settings_table() -> str:
    """The settings of ``stream-nb run``, one table per group, in the order of ``SETTINGS``."""
    from stream_nb.settings import SETTINGS

    groups: dict[str, list] = {}
    for setting in SETTINGS:
        groups.setdefault(setting.group, []).append(setting)
    out = []
    for group, settings in groups.items():
        out += [f"### {group[0].upper()}{group[1:]}", "",
                "| flag | environment variable | TOML key | default | meaning |", "|---|---|---|---|---|"]
        for s in settings:
            meaning = s.help
            if s.choices:
                meaning += " (one of " + ", ".join(f"`{c}`" for c in s.choices) + ")"
            out.append(f"| `{s.flag}` | `{s.env}` | `{s.name}` | {default_text(s)} | {cell(meaning)} |")
        out.append("")
    return "\n".join(out)


def expand(markdown: str) -> str:
    """The page with its includes and its settings table in place."""
    markdown = INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8").strip("\n"), markdown)
    if SETTINGS_TABLE in markdown:
        markdown = markdown.replace(SETTINGS_TABLE, settings_table())
    return markdown


def on_page_markdown(markdown, page, config, files, **kwargs):
    """MkDocs' hook: each page's Markdown, before it is rendered."""
    return expand(markdown)
