"""Where links land on a Docusaurus site: file links, `@site/` paths, doc routes (ids, slugs, number prefixes,
category index pages, versions from `versions.json`) and static files."""

import posixpath
import re

from service.agent.docsite.routing import (
    GENERATED_ROUTES,
    OTHER_ROUTES,
    SKIP,
    Outcome,
    Router,
    Verdict,
    join,
    unknown,
)

SUFFIXES = (".md", ".mdx")
# Docusaurus drops "01-", "2_", "3. " number prefixes from ids by default.
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")


def strip_number_prefixes(path: str) -> str:
    """`path` without Docusaurus's number prefixes ("01-intro" -> "intro") in any of its parts."""
    return "/".join(_NUMBER_PREFIX.sub("", part) for part in path.split("/")) if path else path


class DocusaurusRouter(Router):
    """Docusaurus: Markdown file links resolve from the page's folder, then from the docs folder; `@site/` from
    the site folder; URL links are doc routes under routeBasePath (ids, `slug`, number prefixes, category
    index pages), static files or other plugins' routes (not judged)."""

    page_suffixes = SUFFIXES

    def route(self, page: str, path: str) -> Outcome:
        site_dir = self.site.routing.get("site_dir", "")
        if path.startswith("@site/"):
            return self.file_landing(join(site_dir, path[len("@site/") :]))
        if path.lower().endswith(SUFFIXES):
            return self._file_link(page, path)
        if path.startswith("/"):
            return self._absolute(path)
        # A relative URL: against the page's route (which has no trailing slash), else as a file path.
        route = self.routes_of(page)
        if route is not None:
            found = self._doc_route(posixpath.normpath(posixpath.join(posixpath.dirname(route), path)))
            if found is not None:
                return Outcome(Verdict.OK, found)
            found = self._doc_route(posixpath.normpath(posixpath.join(route, path)))
            if found is not None:
                return Outcome(Verdict.OK, found)
        outcome = self.landing(join(posixpath.dirname(page), path), path)
        return outcome if outcome.ok or route is None else Outcome(Verdict.BROKEN, reason=f"no doc at {path}")

    def file_landing(self, resolved: str | None) -> Outcome:
        if resolved is None:
            return Outcome(Verdict.OUTSIDE)
        return (
            Outcome(Verdict.OK, resolved)
            if self.tree.is_file(resolved)
            else Outcome(Verdict.BROKEN, reason=f"no file {resolved}")
        )

    def _file_link(self, page: str, path: str) -> Outcome:
        tried = []
        bases = (
            [posixpath.dirname(page)]
            if path.startswith(("./", "../"))
            else [posixpath.dirname(page), self._content_root(page), self.site.routing.get("site_dir", "")]
        )
        source = self._source_of(page)
        if source is not None:  # a translation's links fall back to the default locale's files
            bases.insert(1, posixpath.dirname(source))
        for base in bases:
            resolved = join(base, path.lstrip("/"))
            if resolved is not None and self.tree.is_file(resolved):
                return Outcome(Verdict.OK, resolved)
            if resolved is not None:
                tried.append(resolved)
        if not tried:
            return Outcome(Verdict.OUTSIDE)
        root = self.site.docs_root
        prefix = f"{root}/" if root else ""
        if any(r.startswith(prefix) and self.in_generated_folder(root, r[len(prefix) :]) for r in tried):
            return unknown(GENERATED_ROUTES)
        return Outcome(Verdict.BROKEN, reason="no file " + " or ".join(dict.fromkeys(tried)))

    def _content_root(self, page: str) -> str:
        # Versioned docs resolve against their own version folder (also when versions.json does not list it), a
        # translation against the folder of the docs it translates.
        source = self._source_of(page)
        if source is not None:
            page = source
        root = self.site.root_of(page)
        if root is not None and root != self.site.docs_root:
            return root
        parts = page.split("/")
        for index, part in enumerate(parts[:-1]):
            if part.startswith("version-") and index and parts[index - 1].endswith("versioned_docs"):
                return "/".join(parts[: index + 1])
        return self.site.docs_root

    def _absolute(self, path: str) -> Outcome:
        base_url = self.site.routing.get("base_url", "/")
        if base_url != "/" and (path == base_url or path.startswith(base_url + "/")):
            path = path[len(base_url) :] or "/"
        locale = path.strip("/").split("/", 1)[0]
        if any(lang.code == locale for lang in self.site.languages[1:]):
            path = path[len(locale) + 1 :] or "/"  # a locale's route; its missing pages are the default locale's
        route_base = self.site.routing.get("route_base", "/docs")
        site_dir = self.site.routing.get("site_dir", "")
        static = join(site_dir, "static/" + path.lstrip("/"))
        if static is not None and (self.tree.is_file(static) or self.tree.is_file(static.rstrip("/") + "/index.html")):
            return Outcome(Verdict.OK, static)
        if self._redirected(path):
            return Outcome(Verdict.OK)
        bases = [route_base] + [i.route_base for i in self.site.routing.get("instances", [])]
        inside = [base for base in bases if base == "/" or path == base or path.startswith(base + "/")]
        if not inside:
            return unknown(OTHER_ROUTES)  # the blog, pages and other plugins' routes are not read
        found = self._doc_route(path)
        if found is not None:
            return Outcome(Verdict.OK, found)
        route_base = max(inside, key=len)
        if route_base == "/" and not self._doc_route_prefix(path):
            return unknown(OTHER_ROUTES)
        if path.startswith(route_base.rstrip("/") + "/category/"):
            return SKIP  # a generated index page of a sidebar category (`_category_.json`, `link: generated-index`)
        if self.in_generated_folder(self._instance_root(route_base), path[len(route_base) :]):
            return unknown(GENERATED_ROUTES)
        return Outcome(Verdict.BROKEN, reason=f"no doc has the route {path}")

    def _instance_root(self, route_base: str) -> str:
        for instance in self.site.routing.get("instances", []):
            if instance.route_base == route_base:
                return instance.root
        return self.site.docs_root

    def _doc_route(self, route: str) -> str | None:
        routes = self._routes()
        route = "/" + route.strip("/")
        if route in routes:
            return routes[route]
        if self.site.routing.get("versions"):
            return None  # versions.json was read, so every version's routes are in the map
        # Without versions.json, versioned routes (/docs/next/x, /docs/1.2/x) fall back to the current docs' page
        # of the same path.
        route_base = self.site.routing.get("route_base", "/docs").rstrip("/")
        rest = route[len(route_base) :].lstrip("/").split("/", 1)
        if len(rest) == 2 and (rest[0] == "next" or rest[0][:1].isdigit()):
            return routes.get(route_base + "/" + rest[1])
        return None

    def _redirected(self, path: str) -> bool:
        sources = self.site.routing.get("redirects") or ()
        route = "/" + path.strip("/")
        if route in sources:
            return True
        stem, extension = posixpath.splitext(route)
        return bool(extension) and f"*{extension}" in sources and self._doc_route(stem) is not None

    def redirect_place(self) -> str | None:
        if self.site.routing.get("redirects") is None:
            return None
        return f"the `redirects` of @docusaurus/plugin-client-redirects in {self.site.config_path}"

    def page_address(self, page: str) -> str | None:
        return self.routes_of(page)

    def redirected(self, address: str) -> bool:
        return self._redirected(address)

    def _doc_route_prefix(self, route: str) -> bool:
        first = "/" + route.strip("/").split("/", 1)[0]
        return any(r == first or r.startswith(first + "/") for r in self._routes())

    def routes_of(self, page: str) -> str | None:
        """The route of a doc page (a translation's is its default-locale source's), or None when `page` is not
        a doc."""
        if not hasattr(self, "_by_page"):
            self._routes()
        return self._by_page.get(page) or self._by_page.get(self._source_of(page) or "")

    def _source_of(self, page: str) -> str | None:
        """The default locale's doc a translation in `i18n/<locale>/…/current/` (or a version's or a further
        docs instance's translation folder) stands for; None for other pages."""
        language = self.site.language_of(page)
        if language is not None and not language.suffix and language.folder:
            relative = page[len(language.folder) + 1 :]
            return f"{self.site.docs_root}/{relative}" if self.site.docs_root else relative
        for folder, source in self.site.routing.get("translations", ()):
            if page.startswith(folder + "/"):
                relative = page[len(folder) + 1 :]
                return f"{source}/{relative}" if source else relative
        return None

    def _routes(self) -> dict[str, str]:
        if hasattr(self, "_route_map"):
            return self._route_map
        bases = self._route_bases()
        self._route_map: dict[str, str] = {}
        self._by_page: dict[str, str] = {}
        for page in sorted(p for p in self.tree.files if self.site.is_page(p)):
            root = self.site.root_of(page) or ""
            base = bases.get(root, "/docs")
            if base is None:
                continue  # the current docs of a site that does not serve them (`includeCurrentVersion: false`)
            front = self.tree.front_matter(page, self.site.page_mode(page))
            route = base + "/" + _doc_slug(page[len(root) + 1 :] if root else page, front).strip("/")
            route = "/" + route.strip("/")
            self._route_map.setdefault(route, page)
            self._by_page[page] = route
        return self._route_map

    def _route_bases(self) -> dict[str, str | None]:
        # Folder of pages -> its route prefix: the current docs (at /docs/next once versions exist, None when not
        # served) and each version (the latest at /docs), for every docs instance.
        routing = self.site.routing
        current = routing.get("current_route", routing.get("route_base", "/docs"))
        bases: dict[str, str | None] = {self.site.docs_root: current.rstrip("/") if current is not None else None}
        for version in routing.get("versions", []):
            bases[version.root] = version.route.rstrip("/")
        for instance in routing.get("instances", []):
            bases[instance.root] = instance.current_route.rstrip("/") if instance.current_route is not None else None
            for version in instance.versions:
                bases[version.root] = version.route.rstrip("/")
        return bases

    def names(self, path: str) -> set[str]:
        found = super().names(path)
        route = self.routes_of(path)
        if route:
            found.add(route.rstrip("/").rsplit("/", 1)[-1].lower())
        return found


def doc_id(relative: str, front: dict) -> str:
    """The id Docusaurus gives the doc at `relative` (under its docs folder): its folder, then its front matter
    `id` or else its file name, number prefixes dropped from both unless `parse_number_prefixes: false`."""
    folder, name = posixpath.split(relative)
    stem = posixpath.splitext(name)[0]
    parse = front.get("parse_number_prefixes", True) is not False
    custom = front.get("id")
    base = (
        str(custom)
        if isinstance(custom, (str, int)) and str(custom).strip()
        else strip_number_prefixes(stem)
        if parse
        else stem
    )
    return posixpath.join(strip_number_prefixes(folder) if parse else folder, base)


def _doc_slug(relative: str, front: dict) -> str:
    front = front if isinstance(front, dict) else {}
    doc = doc_id(relative, front)
    folder = posixpath.dirname(doc)
    slug = front.get("slug")
    if isinstance(slug, str) and slug.strip():
        return slug if slug.startswith("/") else posixpath.join(folder, slug)
    stem = posixpath.splitext(posixpath.basename(relative))[0]
    if not front.get("id") and (
        stem.lower() in ("index", "readme") or strip_number_prefixes(stem) == posixpath.basename(folder)
    ):
        return folder
    return doc
