"""Front matter: the YAML mapping between a page's leading `---` lines, parsed and checked."""

from service.agent.docsite.limits import MAX_FRONT_MATTER_BYTES, Uncheckable
from service.agent.docsite.markdown import front_matter_block
from service.agent.docsite.yamltext import YAMLError, error_line, error_text, load_yaml

QUOTE_HINT = "put values that contain ': ', ' #' or start with a special character in quotes"


class FrontMatterError(ValueError):
    """Front matter that a docs build would reject; `line` is 1-based in the page."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def parse_front_matter(text: str) -> dict:
    """The page's front matter as a dict ({} when it has none); raises FrontMatterError when it does not parse."""
    block = front_matter_block(text)
    if block is None:
        return {}
    if block.end_line is None:
        raise FrontMatterError(
            block.start_line,
            "the front matter that starts here is never closed: add a line with only --- after the last key",
        )
    try:
        value = load_yaml(block.text, max_bytes=MAX_FRONT_MATTER_BYTES)
    except Uncheckable as exc:
        raise FrontMatterError(
            block.start_line, f"front matter is {exc}; keep it to plain `key: value` lines"
        ) from None
    except YAMLError as exc:
        # Errors found at the end of the text point past it; the closing `---` is not where to fix them.
        line = min(error_line(exc, block.start_line + 1), block.end_line - 1)
        raise FrontMatterError(line, f"front matter is not valid YAML ({error_text(exc)}); {QUOTE_HINT}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterError(
            block.start_line, f"front matter must be a list of `key: value` lines, not a {type(value).__name__}"
        )
    return value


def front_matter_keys(text: str) -> list[str]:
    """The top-level keys of the page's front matter, in order; [] when it has none or it does not parse."""
    try:
        return [str(key) for key in parse_front_matter(text)]
    except FrontMatterError:
        return []
