"""Hugo's `permalinks`: URL patterns per top-level section (`posts = "/:year/:month/:slug/"`), expanded for a
regular page from its path and front matter as Hugo does (https://gohugo.io/configuration/permalinks/).

Patterns with a token the check does not know, and a page without what its pattern needs (a `date` for `:year`,
a `title` for `:title`), leave that section's routes unknown rather than guessed.
"""

import datetime
import posixpath
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r":(\w+)(\[[^\]]*\])?")
_DATE_KEYS = ("date", "publishdate", "pubdate", "published", "lastmod", "modified")  # Hugo's `:default` order
_DATE_FORMATS = {
    "year": "%Y",
    "month": "%m",
    "monthname": "%B",
    "day": "%d",
    "weekday": "%w",
    "weekdayname": "%A",
}
_NOT_IN_PATHS = re.compile(r"[^\w\-./_+~#]")


@dataclass(frozen=True)
class Permalinks:
    """The patterns for regular pages by section, and sections whose routes cannot be known (patterns for other
    page kinds, or values that are not strings)."""

    patterns: dict[str, str] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()


def read_permalinks(value) -> Permalinks:
    """The config's `permalinks`: the flat form (`section = pattern`, for regular pages) or the per-kind form
    (`[permalinks.page]`, `[permalinks.section]`, …), of which only `page` patterns are expanded."""
    if not isinstance(value, dict):
        return Permalinks()
    kinds = ("page", "section", "taxonomy", "term")
    nested = any(str(key).lower() in kinds and isinstance(item, dict) for key, item in value.items())
    flat = next((item for key, item in value.items() if str(key).lower() == "page"), {}) if nested else value
    patterns = {
        str(key).strip("/"): item
        for key, item in (flat.items() if isinstance(flat, dict) else ())
        if isinstance(item, str)
    }
    unknown = {
        str(key).strip("/")
        for key, item in (flat.items() if isinstance(flat, dict) else ())
        if not isinstance(item, str)
    }
    if nested:
        for key, item in value.items():
            if str(key).lower() != "page" and isinstance(item, dict):
                unknown |= {str(section).strip("/") for section in item}
    return Permalinks(patterns, tuple(sorted(unknown - set(patterns))))


def expand(pattern: str, relative: str, meta: dict, is_section) -> str | None:
    """The route `pattern` gives the regular page at `relative` (its path in its content folder, the language
    suffix dropped) with front matter `meta`; None when a token is unknown or the page lacks what it needs.
    `is_section(folder)` says whether a content folder is a section (top level, or has an `_index.md`)."""
    stem = posixpath.splitext(relative)[0]
    folder, name = posixpath.split(stem)
    if name == "index":  # a leaf bundle: the folder is the page
        folder, name = posixpath.split(folder)
    parts = folder.split("/") if folder else []
    sections: list[str] = []
    for index in range(len(parts)):
        if index and not is_section("/".join(parts[: index + 1])):
            break
        sections.append(parts[index])
    failed = False

    def token(match: re.Match) -> str:
        nonlocal failed
        value = _token(match.group(1).lower(), match.group(2), name, sections, meta)
        if value is None:
            failed = True
            return ""
        return value

    route = _TOKEN.sub(token, pattern)
    return None if failed else re.sub(r"/{2,}", "/", route)


def _token(token: str, selection: str | None, name: str, sections: list[str], meta: dict) -> str | None:
    slug = meta.get("slug")
    slug = str(slug).strip() if isinstance(slug, (str, int)) and str(slug).strip() else None
    title = meta.get("title")
    title = urlize(str(title)) if isinstance(title, (str, int)) and str(title).strip() else None
    if token in _DATE_FORMATS or token == "yearday":
        date = _date(meta)
        if date is None:
            return None
        return str(date.timetuple().tm_yday) if token == "yearday" else date.strftime(_DATE_FORMATS[token]).lower()
    if token == "section":
        return sections[0] if sections else None
    if token == "sections":
        chosen = _select(sections, selection)
        return "/".join(chosen) if chosen is not None else None
    if token == "title":
        return title
    if token == "slug":
        return urlize(slug) if slug else title
    if token in ("filename", "contentbasename"):
        return urlize(name)
    if token in ("slugorfilename", "slugorcontentbasename"):
        return urlize(slug) if slug else urlize(name)
    return None


def _select(sections: list[str], selection: str | None) -> list[str] | None:
    # `:sections[1:]`, `:sections[last]`, `:sections[0]`: a Go slice of the section path.
    if not selection:
        return sections
    inner = selection[1:-1].strip()
    if inner == "last":
        return sections[-1:]
    if re.fullmatch(r"\d+", inner):
        index = int(inner)
        return sections[index : index + 1] if index < len(sections) else None
    match = re.fullmatch(r"(\d*):(\d*)", inner)
    if match is None:
        return None
    start = int(match.group(1) or 0)
    end = int(match.group(2)) if match.group(2) else len(sections)
    return sections[start:end]


def _date(meta: dict) -> datetime.date | None:
    lowered = {str(key).lower(): value for key, value in meta.items()}
    for key in _DATE_KEYS:
        value = lowered.get(key)
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value
        if isinstance(value, str):
            try:
                return datetime.date.fromisoformat(value.strip()[:10])
            except ValueError:
                return None
    return None


def urlize(text: str) -> str:
    """Hugo's `urlize` of a title or name: lowercase, spaces to `-`, characters a path does not keep dropped."""
    return _NOT_IN_PATHS.sub("", text.strip().lower().replace(" ", "-"))
