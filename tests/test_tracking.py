"""A round's tracking comment on the local code host: posted once, edited in place, never faster than the throttle."""

from service.agent.model import ToolCall
from service.describe import RoundState
from service.lease import Lease
from service.tracking import RoundTracker, StepTally, TrackingComments


class Clock:
    """Time that moves only when a test (or a throttled sleep) moves it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def read(path: str) -> ToolCall:
    return ToolCall(id="c", name="read_file", arguments={"path": path})


def test_steps_in_a_few_words():
    tally = StepTally()
    for call in [
        read("a.md"),
        read("a.md"),
        read("b.md"),
        ToolCall("c", "search", {"pattern": "x"}),
        *[ToolCall("c", "edit_file", {"path": f"docs/{n}.md"}) for n in range(7)],
        ToolCall("c", "write_file", {"path": "docs/`odd`\nname.md"}),
    ]:
        tally.add(call)
    assert tally.text() == (
        "read 2 files, searched once, edited `docs/0.md`, `docs/1.md`, `docs/2.md`, `docs/3.md`, `docs/4.md` and 3 more"
    )


def test_edits_wait_for_the_throttle_and_the_last_word_waits_it_out(stack):
    stack.script([{"tool": "write_file", "args": {"path": "docs/x.md", "content": "x\n"}}])
    job_id = stack.create().json()["id"]
    stack.drain()
    services = stack.ctx.services
    job = services.jobs.get(job_id)
    project = services.projects.get(job.project_id)
    host = services.code_hosts[project.host]
    _job, message = services.jobs.add_message(job_id, prompt="More", source="github", author="alice")
    lease = Lease(services.redis, job_id, 30)
    assert lease.acquire()
    clock = Clock()
    tracker = RoundTracker(
        TrackingComments(services.redis),
        host,
        project,
        message,
        fence=lease.fence,
        edit_every=10,
        clock=clock,
        sleep=clock.sleep,
    )
    assert job.pr_number is not None
    tracker.start(job.pr_number)  # an API-less start: the comment is posted now
    pull = host.pull(project.id, job.pr_number)
    [comment] = [c for c in pull.comments if "Round 2" in c["body"]]
    assert "working" in comment["body"]

    tracker.step(read("a.md"))  # at once: within the window the round started
    clock.now += 4
    tracker.step(read("b.md"))
    assert "read" not in host.pull(project.id, job.pr_number).comments[-1]["body"]
    clock.now += 6
    tracker.step(read("c.md"))  # 10 s since the start: shown
    assert "read 3 files" in host.pull(project.id, job.pr_number).comments[-1]["body"]
    clock.now += 2
    tracker.finish(job.pr_number, tracker.report(RoundState.DONE, summary="Did it."))
    assert clock.slept == [8]  # the last edit waited for the window to pass
    comments = host.pull(project.id, job.pr_number).comments
    assert comments[-1]["body"].startswith("**Round 2** · ✅ done") and "Did it." in comments[-1]["body"]
    assert len(comments) == len(pull.comments)  # edited, never posted again


def test_a_description_keeps_a_persons_text_around_copydesks_section():
    from service.describe import DESCRIPTION_END, DESCRIPTION_START, merge_description

    ours = f"{DESCRIPTION_START}\nNew\n{DESCRIPTION_END}\n"
    assert merge_description(None, ours) == ours
    mixed = f"Top\n\n{DESCRIPTION_START}\nOld\n{DESCRIPTION_END}\nBottom\n"
    assert (
        merge_description(mixed.replace("\n", "\r\n"), ours)
        == f"Top\n\n{DESCRIPTION_START}\nNew\n{DESCRIPTION_END}\nBottom\n"
    )
    # The markers removed by a person: their text stays on top, the section goes below.
    assert merge_description("Only mine", ours) == f"Only mine\n\n{ours}"
    # A description from before the markers was all Copydesk's: replaced whole.
    assert merge_description("## Request\n\n<sub>Opened by Copydesk for job `job_1`.</sub>\n", ours) == ours


def test_the_dashboard_hides_html_comments_as_github_does():
    from bot.dashboard.markdown import render_markdown

    assert str(render_markdown("<!-- copydesk:description:start -->\n## Hi\n<!-- end -->")) == "<h2>Hi</h2>\n"
    assert "&lt;!-- open" in str(render_markdown("<!-- open " * 20000))  # unclosed: shown, in linear time
