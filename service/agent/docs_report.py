"""What the docs check reports: problems with their place, and the report as text for the model and the PR."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DocsProblem:
    path: str
    line: int  # 1-based
    message: str


@dataclass
class DocsReport:
    """What the docs check found; `pages_checked` counts the changed pages it read; `failure` says why the check
    itself could not finish."""

    problems: list[DocsProblem] = field(default_factory=list)
    pages_checked: int = 0
    failure: str | None = None
    timed_out: bool = False  # the check was stopped at its time budget; `failure` says which
    # What the check could not know and so did not judge (links whose routing is unknown), each said once.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def too_slow(cls, seconds: float) -> "DocsReport":
        """The report of a check stopped after `seconds`: nothing was checked, and the reader is told so."""
        return cls(failure=f"stopped after {seconds:g} s, the time budget of a tool call; the changes were not "
                           "checked, review links and navigation by hand", timed_out=True)

    @property
    def ok(self) -> bool:
        return not self.problems and self.failure is None

    def to_text(self) -> str:
        """The report as a Markdown list for the model and the pull request body, ending with a one-line verdict."""
        if self.timed_out:
            return f"docs check not completed: took too long ({self.failure})"
        if self.failure is not None:
            return f"docs check could not finish: {self.failure}"
        notes = [f"- note: {note}" for note in self.notes]
        if self.ok:
            return "\n".join([*notes, f"docs check passed: {self.pages_checked} changed page(s), no problems found"])
        lines = [f"- `{p.path}:{p.line}` {p.message}" for p in self.problems] + notes
        lines.append(f"docs check failed: {len(self.problems)} problem(s) found, {self.pages_checked} changed "
                     "page(s) checked")
        return "\n".join(lines)
