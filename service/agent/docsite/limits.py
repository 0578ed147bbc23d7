"""Caps on what the docs check reads from a repository, and the error for a file past one."""

from dataclasses import dataclass

from service.agent.nesting import containers

MAX_CONFIG_BYTES = 2_000_000  # a navigation or config file (YAML, JSON, JS)
MAX_PAGE_BYTES = 2_000_000  # a Markdown, MDX or reStructuredText page
MAX_FRONT_MATTER_BYTES = 100_000
MAX_DEPTH = 100  # nesting of YAML, JSON, JS literals and JSX; real docs configs stay under 20
MAX_LANGUAGES = 100  # locales read from a site config; real sites list under 40
MAX_VERSIONS = 200  # docs versions read from a Docusaurus `versions.json`; real sites list under 50
MAX_YAML_NODES = 200_000  # YAML nodes after expanding aliases; a 20,000-entry nav has about 80,000


@dataclass
class Uncheckable(ValueError):
    """A repository file the docs check will not read whole: too large or too complex (deep, alias bombs)."""

    reason: str  # completes "… is too large to check" / "… is too complex to check"
    large: bool = False
    path: str = ""  # the file, when known

    def __str__(self) -> str:
        return f"too {'large' if self.large else 'complex'} to check ({self.reason})"


def check_size(text: str | bytes, limit: int) -> None:
    """Raise Uncheckable when `text` is over `limit` bytes (characters for str, which is a lower bound)."""
    if len(text) > limit:
        raise Uncheckable(f"{len(text):,} bytes, the limit is {limit:,}", large=True)


def check_depth(value, limit: int = MAX_DEPTH) -> None:
    """Raise Uncheckable when lists/dicts in `value` nest deeper than `limit` (walked without recursion)."""
    for depth, children in containers(value):  # stops at the first container past the limit
        if children and depth > limit:
            raise Uncheckable(f"nested deeper than {limit} levels")
