"""What the docs check reports: problems with their place, and the report as text for the model and the PR."""

from collections import defaultdict
from dataclasses import dataclass, field

REPORT_MAX_CHARS = 20_000  # the report as the model and the pull request see it
LINES_SHOWN = 5  # line numbers listed for a group of problems; the rest are counted
SUMMARY_FILES = 3  # a kind of problem in more files than this also gets one line for all of them


@dataclass(frozen=True)
class DocsProblem:
    path: str
    line: int  # 1-based
    message: str
    # What problems of one kind share, as a plural phrase ("links to `a.md` (moved; now `b.md`)"): the report
    # groups them per file. Problems without one are grouped by identical message.
    kind: str = field(default="", compare=False)


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
    whole_site: bool = False  # it checked every page as it stands (service.agent.site_check), not a run's changes

    @classmethod
    def too_slow(cls, seconds: float) -> "DocsReport":
        """The report of a check stopped after `seconds`: nothing was checked, and the reader is told so."""
        return cls(
            failure=f"stopped after {seconds:g} s, the time budget of a tool call; the changes were not "
            "checked, review links and navigation by hand",
            timed_out=True,
        )

    @property
    def ok(self) -> bool:
        return not self.problems and self.failure is None

    def to_text(self, max_chars: int | None = None) -> str:
        """The report as a Markdown list for the model and the pull request body, ending with a one-line verdict;
        past `max_chars`, the last problem lines give way to a note saying how many are not shown."""
        if self.timed_out:
            return f"docs check not completed: took too long ({self.failure})"
        if self.failure is not None:
            return f"docs check could not finish: {self.failure}"
        notes = [f"- note: {note}" for note in self.notes]
        pages = (
            f"{self.pages_checked} page(s) of the site" if self.whole_site else f"{self.pages_checked} changed page(s)"
        )
        if self.ok:
            return "\n".join([*notes, f"docs check passed: {pages}, no problems found"])
        lines = _summaries(self.problems) + _grouped_lines(self.problems) + notes
        verdict = f"docs check failed: {len(self.problems)} problem(s) found, {pages} checked"
        rest = "the next run lists the rest" if self.whole_site else "run check_docs again to see the rest"
        return _bounded(lines, verdict, max_chars, rest)


def _bounded(
    lines: list[str], verdict: str, max_chars: int | None, rest: str = "run check_docs again to see the rest"
) -> str:
    text = "\n".join([*lines, verdict])
    if max_chars is None or len(text) <= max_chars:
        return text
    budget, shown = max_chars - len(verdict) - 200, []
    for line in lines:
        budget -= len(line) + 1
        if budget < 0:
            break
        shown.append(line)
    note = f"[{len(lines) - len(shown):,} more line(s) of this report not shown; fix these problems and {rest}]"
    return "\n".join([*shown, note, verdict])


def _grouped_lines(problems: list[DocsProblem]) -> list[str]:
    """One line per problem, except that problems of one kind in one file share a line with their count and
    first lines (a move that breaks 2,000 links gives a line per file, not 2,000)."""
    groups: dict[tuple[str, str], list[DocsProblem]] = defaultdict(list)
    for problem in problems:
        groups[(problem.path, problem.kind or problem.message)].append(problem)
    lines = []
    for (path, _), members in sorted(groups.items(), key=lambda item: (item[0][0], min(p.line for p in item[1]))):
        first = members[0]
        if len(members) == 1:
            lines.append(f"- `{path}:{first.line}` {first.message}")
            continue
        numbers = _line_list(sorted({p.line for p in members}))
        if first.kind:
            lines.append(f"- `{path}`: {len(members)} {first.kind}, lines {numbers}")
        else:
            lines.append(f"- `{path}`: {first.message} ({len(members)} times, lines {numbers})")
    return lines


def _summaries(problems: list[DocsProblem]) -> list[str]:
    """A line for each kind of problem found in many files, before the per-file lines, so the whole of it is
    seen even when the report is cut."""
    files: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for problem in problems:
        if problem.kind:
            files[problem.kind].add(problem.path)
            counts[problem.kind] += 1
    return [
        f"- in all: {counts[kind]:,} {kind} in {len(paths):,} files; per file below"
        for kind, paths in sorted(files.items())
        if len(paths) > SUMMARY_FILES
    ]


def _line_list(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:LINES_SHOWN])
    rest = len(numbers) - LINES_SHOWN
    return f"{shown}, … (+{rest} more)" if rest > 0 else shown
