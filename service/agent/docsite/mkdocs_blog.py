"""Material for MkDocs' blog plugin: where posts live, the pages it generates, and the metadata a post needs.

Posts (under `post_dir`, `{blog}/posts` by default) are not listed in `nav:`: the plugin puts them under the
blog's index. It generates the index's archive, category, pagination and author pages from `*_url_format`
settings, and each post's own URL from its date and slug, none of them files in the repository. A post's `links`
name pages from the docs folder. A post without a
`date`, with an author `.authors.yml` does not define, or with a category outside `categories_allowed` stops the
build. With the meta plugin, a post's front matter is merged onto the `.meta.yml` files of its folder and those
above it first (lists added up, mappings merged, the post's own values kept), so those count as its own.
"""

import datetime
import posixpath
import re
from dataclasses import dataclass

from service.agent.docsite.frontmatter import FrontMatterError, parse_front_matter
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import is_external
from service.agent.docsite.site import normal_join, read_text
from service.agent.docsite.yamltext import YAMLError, load_yaml

PLUGIN_NAMES = ("blog", "material/blog")
# The first part of the URL formats of generated pages, by default.
GENERATED_FORMATS = {
    "archive_url_format": "archive/{date}",
    "categories_url_format": "category/{slug}",
    "pagination_url_format": "page/{page}",
    "authors_profiles_url_format": "author/{slug}",
}
_DATE_PART = re.compile(r"^\d{4}$")  # a post URL's year (`{date}/{slug}` with `yyyy/MM/dd`)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Blog:
    """One blog of a MkDocs site, as repository paths."""

    folder: str  # the blog's folder (its index.md)
    posts: str  # the folder of its posts
    generated: tuple[str, ...]  # first URL parts (under `folder`) of pages the plugin generates
    authors_file: str | None  # None when authors are off
    categories_allowed: tuple[str, ...]


def read_blog(option, root: str) -> Blog | None:
    """The blog the plugin's settings describe (`option(name)` reads one setting, None when unset); None when
    `blog_dir` leaves the docs folder."""
    folder = normal_join(root, option("blog_dir") or "blog")
    relative_folder = folder[len(root) + 1 :] if root and folder.startswith(root + "/") else folder
    posts = normal_join(root, (option("post_dir") or "{blog}/posts").replace("{blog}", relative_folder))
    if folder.startswith("..") or posts.startswith(".."):
        return None
    generated = tuple(
        sorted(
            {(option(name) or default).strip("/").split("/", 1)[0] for name, default in GENERATED_FORMATS.items()}
            - {""}
        )
    )
    authors_on = (option("authors") or "true").lower() not in ("false", "no", "off")
    authors = normal_join(root, (option("authors_file") or "{blog}/.authors.yml").replace("{blog}", relative_folder))
    allowed = option("categories_allowed")
    return Blog(
        folder,
        posts,
        generated,
        authors if authors_on else None,
        tuple(allowed) if isinstance(allowed, (list, tuple)) else (),
    )


def is_generated(blog: Blog, resolved: str) -> bool:
    """Whether repository path `resolved` (a link's target) is a page the plugin generates: an archive, category,
    pagination or author page, or a post's URL."""
    if blog.folder and not resolved.startswith(blog.folder + "/"):
        return False
    rest = resolved[len(blog.folder) + 1 :] if blog.folder else resolved
    first = rest.split("/", 1)[0]
    return first in blog.generated or bool(_DATE_PART.match(first))


def is_post(blog: Blog, path: str) -> bool:
    """Whether the page at `path` is one of the blog's posts."""
    return not blog.posts or path.startswith(blog.posts + "/")


def post_problems(blog: Blog, workspace, text: str, front: dict) -> list[tuple[int, str]]:
    """What in a post's front matter stops the plugin's build, with the line to fix."""
    problems = []
    date = front.get("date")
    created = date.get("created") if isinstance(date, dict) else date
    if not _is_date(created):
        problems.append(
            (
                _key_line(text, "date"),
                "blog post without a valid `date` in its front matter (the blog "
                "plugin stops the build): add e.g. `date: 2024-01-31`",
            )
        )
    authors = front.get("authors") or []
    known = _authors(workspace, blog) if authors else None
    if known is not None:
        for name in authors if isinstance(authors, list) else [authors]:
            if str(name) not in known:
                problems.append(
                    (
                        _key_line(text, "authors"),
                        f"blog post author `{name}` is not defined in "
                        f"{blog.authors_file} (the blog plugin stops the build)",
                    )
                )
    categories = front.get("categories") or []
    if blog.categories_allowed:
        for name in categories if isinstance(categories, list) else [categories]:
            if str(name) not in blog.categories_allowed:
                problems.append(
                    (
                        _key_line(text, "categories"),
                        f"blog post category `{name}` is not in the plugin's `categories_allowed`",
                    )
                )
    return problems


def with_meta_files(files: set[str], read_text, root: str, meta_file: str, page: str, front: dict) -> dict:
    """The post's front matter as the meta plugin hands it to the blog plugin: every `meta_file` whose folder
    (from the docs folder) starts the page's path, in level order, then the page's own; `read_text(path)` reads a
    repository file. A meta file that does not parse is skipped (the build would stop, and says why)."""
    relative = page[len(root) + 1 :] if root else page
    found = []
    for path in files:
        source = path[len(root) + 1 :] if root and path.startswith(root + "/") else None if root else path
        if source is None or posixpath.basename(source) != meta_file:
            continue
        if relative.startswith(posixpath.dirname(source)):  # the plugin's own test, a plain prefix
            found.append((source.count("/"), source, path))
    merged: dict = {}
    for _, _, path in sorted(found):
        try:
            defaults = load_yaml(read_text(path) or "")
        except (YAMLError, Uncheckable):
            continue
        if isinstance(defaults, dict):
            merged = _merged(merged, defaults)
    return _merged(merged, front) if merged else front


def _merged(base, extra):
    # mergedeep's additive strategy, as the meta plugin uses it: mappings merged, lists added up, else `extra`.
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _merged(out[key], value) if key in out else value
        return out
    if isinstance(base, list) and isinstance(extra, list):
        return base + extra
    return extra


def post_links(text: str) -> list[tuple[int, str]]:
    """(line, path) of each page a post's `links` front matter names, as nav entries do (`- path`, `- Title: path`,
    sections of them), without anchors; paths are relative to the docs folder."""
    try:
        links = parse_front_matter(text).get("links")
    except FrontMatterError:
        return []
    found: list[tuple[int, str]] = []
    pending = [links]
    while pending:
        item = pending.pop(0)
        if isinstance(item, list):
            pending[:0] = item
        elif isinstance(item, dict):
            pending[:0] = list(item.values())
        elif isinstance(item, str) and item.strip() and not is_external(item.strip()):
            path = item.strip().split("#", 1)[0]
            line = next((number for number, written in enumerate(text.split("\n"), 1) if path in written), 1)
            found.append((line, path.lstrip("/")))
    return found


def _is_date(value) -> bool:
    if isinstance(value, (datetime.date, datetime.datetime)):
        return True
    return isinstance(value, str) and bool(_ISO_DATE.match(value.strip()))


def _authors(workspace, blog: Blog) -> set[str] | None:
    """The author ids `.authors.yml` defines; None when authors are off or the file cannot be read (then no
    author is judged)."""
    if blog.authors_file is None:
        return None
    text = read_text(workspace, blog.authors_file)
    if text is None:
        return None
    try:
        data = load_yaml(text)
    except (YAMLError, Uncheckable):
        return None
    authors = data.get("authors") if isinstance(data, dict) else None
    return {str(key) for key in authors} if isinstance(authors, dict) else None


def _key_line(text: str, key: str) -> int:
    match = re.search(rf"^{re.escape(key)}\s*:", text, re.M)
    return text.count("\n", 0, match.start()) + 1 if match else 1
