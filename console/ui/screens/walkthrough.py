"""A guided reset walkthrough: evidence from the cluster, one question at a time, then the
standard preview → confirm → apply → verify, and a report in the workspace.

Opened from a group with `w` (or the command palette, which also offers each walkthrough by
name). The walkthrough's state is a `WalkthroughRun`
(console/services/walkthrough/guided_run.py), the value `rmq-console walkthrough` drives too;
this screen shows it and changes it on the UI thread only, from the messages its workers
post. Evidence and answers are read on workers through a `WalkthroughReaders`; nothing here
opens a connection.

An answer that cannot be used (a time in the future, a group that does not exist, a queue with
nothing committed) is explained under the box and stays there to be changed; ctrl+b goes back
a step. Once every step is answered, Enter opens the preview of the spec the answers give; an
apply from it is reported back here, the evidence after the apply is gathered, and the report
is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from console.domain import mqadmin
from console.domain.journal import QueueState
from console.domain.spec import SpecError
from console.domain.walkthrough import Evidence, Walkthrough
from console.rocketmq.errors import RocketMQError
from console.services.infra.journal_store import operator
from console.services.infra.workspace import Workspace
from console.services.plan.load import warning_counts
from console.services.read.cluster_session import ClusterSession
from console.services.walkthrough.guided_run import AnswerError, WalkthroughRun, load_walkthroughs
from console.services.walkthrough.report import write_report
from console.ui.messages import (
    WalkthroughAnswered,
    WalkthroughAnswerRefused,
    WalkthroughEvidenceGathered,
    WalkthroughReported,
)
from console.ui.screens.base import ConsoleScreen
from console.ui.tones import toned
from console.ui.widgets.textbox import TextBox

if TYPE_CHECKING:
    from console.domain.boundary_messages import Boundary
    from console.domain.journal import Journal
    from console.services.plan.preview_flow import ResetFlow
    from console.services.walkthrough.reads import WalkthroughReaders

READ_GROUP = "walkthrough"
AFTER_STEP = "applied"


class WalkthroughScreen(ConsoleScreen):
    BINDINGS = [
        Binding("ctrl+b", "previous_step", "Previous step", id="walkthrough_back"),
    ]

    def __init__(
        self,
        session: ClusterSession,
        group: str,
        name: str | None = None,
        *,
        prefill: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(session)
        #: Answers already known (a snapshot chosen in History), put in the box for its step.
        self.prefill = dict(prefill or {})
        self.cluster_session = session
        self.group = group
        self.crumb = f"walkthrough {group}"
        self.wanted = name
        catalogue = load_walkthroughs()
        self.catalogue = catalogue
        self.run: WalkthroughRun | None = None
        #: A read is under way (evidence or an answer being checked).
        self.reading = False
        self.report: str | None = None

    # ---- layout ------------------------------------------------------------------------------

    def compose_body(self) -> ComposeResult:
        yield OptionList(
            *(
                Option(
                    Text.assemble((w.title, "bold"), "\n  ", first_sentence(w.summary)), id=w.name
                )
                for w in self.catalogue.walkthroughs
            ),
            id="walk-choices",
        )
        yield Static(id="walk-question")
        with VerticalScroll(id="walk-evidence-pane"):
            yield Static(id="walk-evidence")
        yield Label("", id="walk-ask")
        yield Label("", id="walk-why")
        yield TextBox(compact=True, id="walk-answer")
        yield Label("", id="walk-error")

    def on_mount(self) -> None:
        for problem in self.catalogue.problems:
            self.notify(str(problem), title="Walkthrough not loaded", severity="warning")
        chosen = self.catalogue.get(self.wanted) if self.wanted else None
        if self.wanted and chosen is None:
            self.notify(f"no walkthrough {self.wanted!r}", severity="error")
        if chosen is not None:
            self.begin(chosen)
        else:
            self._show_choices(True)
            self.query_one("#walk-choices", OptionList).focus()

    def _show_choices(self, choosing: bool) -> None:
        self.query_one("#walk-choices", OptionList).display = choosing
        for wid in ("#walk-question", "#walk-evidence-pane", "#walk-ask", "#walk-answer"):
            self.query_one(wid).display = not choosing
        for wid in ("#walk-why", "#walk-error"):
            self.query_one(wid).display = False

    @on(OptionList.OptionSelected, "#walk-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        chosen = self.catalogue.get(event.option.id or "")
        if chosen is not None:
            self.begin(chosen)

    # ---- the walkthrough ---------------------------------------------------------------------

    def begin(self, walkthrough: Walkthrough) -> None:
        self.run = WalkthroughRun(
            walkthrough, self.cluster_session.cluster.name, self.group, self.console.clock_ms()
        )
        self.crumb = walkthrough.name
        self.on_screen_resume()
        self._show_choices(False)
        self.query_one("#walk-answer", Input).focus()
        self.read_evidence(walkthrough.evidence, None)

    def read_evidence(self, names: tuple[str, ...], after_step: str | None) -> None:
        self.reading = True
        self._show()
        self.gather(names, after_step)

    def _reads(self) -> WalkthroughReaders:
        return self.console.services.walkthroughs

    @work(thread=True, group=READ_GROUP, exit_on_error=False)
    def gather(self, names: tuple[str, ...], after_step: str | None) -> None:
        run = self.run
        if run is None or not names:
            self.post_message(WalkthroughEvidenceGathered((), after_step))
            return

        async def go() -> None:
            async with self._reads().open(self.cluster_session, self.console.config) as reads:
                found = await reads.evidence(run, names)
            self.post_message(WalkthroughEvidenceGathered(tuple(found), after_step))

        asyncio.run(go())

    @work(thread=True, group=READ_GROUP, exit_on_error=False)
    def check(self, step_id: str, text: str) -> None:
        run = self.run
        assert run is not None

        async def go() -> None:
            async with self._reads().open(self.cluster_session, self.console.config) as reads:
                answer = await reads.answer(run, step_id, text)
            self.post_message(WalkthroughAnswered(step_id, answer))

        try:
            asyncio.run(go())
        except (AnswerError, RocketMQError) as exc:
            self.post_message(WalkthroughAnswerRefused(step_id, str(exc)))

    def on_walkthrough_evidence_gathered(self, message: WalkthroughEvidenceGathered) -> None:
        self.reading = False
        run = self.run
        if run is None:
            return
        if message.after_step == AFTER_STEP:
            run.after = list(message.evidence)
            self.write_report()
        else:
            run.show(message.evidence)
        self._show()

    def on_walkthrough_answered(self, message: WalkthroughAnswered) -> None:
        run = self.run
        if run is None:
            return
        step = run.walkthrough.step(message.step_id)
        run.take(step, message.answer)
        box = self.query_one("#walk-answer", Input)
        box.value = ""
        self._error(None)
        self.read_evidence(step.evidence, step.id)

    def on_walkthrough_answer_refused(self, message: WalkthroughAnswerRefused) -> None:
        self.reading = False
        # The text stays in the box to be changed; nothing is planned from it.
        self._error(f"not usable: {message.reason}")
        self._show()

    @on(Input.Submitted, "#walk-answer")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        run = self.run
        if run is None or self.reading:
            return
        step = run.next_step
        if step is None:
            self.preview()
            return
        self.reading = True
        self._error(None)
        self._show()
        self.check(step.id, event.value)

    def action_previous_step(self) -> None:
        run = self.run
        if run is None or self.reading or not run.answers:
            return
        step_id = list(run.answers)[-1]
        answer = run.answers.pop(step_id)
        step = run.walkthrough.step(step_id)
        run.evidence = [e for e in run.evidence if e.name not in step.evidence]
        run.spec = None
        self.query_one("#walk-answer", Input).value = answer.text
        self._error(None)
        self._show()

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == READ_GROUP:
            self.reading = False
            self._error(f"could not read the cluster: {error}")
            self._show()
        super().worker_failed(group, error)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "previous_step":
            run = self.run
            return True if run is not None and run.answers and run.journal is None else None
        return True

    # ---- the preview and after ---------------------------------------------------------------

    def preview(self) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.preview import PreviewScreen

        run = self.run
        assert run is not None
        try:
            spec = run.build_spec()
        except SpecError as exc:
            self._error(f"cannot plan: {exc}")
            return
        self.app.push_screen(
            PreviewScreen(self.cluster_session, self.group, spec=spec, on_applied=self.applied)
        )

    def applied(
        self, flow: ResetFlow, journal: Journal, where: str, boundaries: tuple[Boundary, ...]
    ) -> None:
        """The preview's apply finished (whatever its result): the plan and the journal join
        the run, the evidence after the apply is gathered, then the report is written."""
        run = self.run
        if run is None:
            return
        result = flow.result
        if result is not None:
            run.plan_header, run.plan_uri = result.header, result.uri
        run.plan_rows = flow.rows
        run.boundaries = boundaries
        run.journal, run.journal_path = journal, where
        self.read_evidence(run.walkthrough.after, AFTER_STEP)

    @work(thread=True, group="walkthrough-report", exit_on_error=False)
    def write_report(self) -> None:
        run = self.run
        assert run is not None
        if run.plan_uri is not None:
            run.warnings = warning_counts(run.plan_uri)
        workspace = Workspace(self.console.config.workspace_path)
        where = write_report(run, workspace, who=operator(), now_ms=self.console.clock_ms())
        self.post_message(WalkthroughReported(where))

    def on_walkthrough_reported(self, message: WalkthroughReported) -> None:
        self.report = message.where
        if self.run is not None:
            self.run.report_path = message.where
        self._show()

    # ---- showing it --------------------------------------------------------------------------

    def _error(self, text: str | None) -> None:
        label = self.query_one("#walk-error", Label)
        label.display = bool(text)
        label.update(toned(self.app, text or "", "text-error"))

    def _show(self) -> None:
        run = self.run
        if run is None:
            return
        w = run.walkthrough
        self.query_one("#walk-question", Static).update(
            Text.assemble((w.title, "bold"), " · ", run.question())
        )
        self.query_one("#walk-evidence", Static).update(self._evidence_text(run))
        # The newest evidence is what the question is about: keep it in view.
        pane = self.query_one("#walk-evidence-pane", VerticalScroll)
        self.call_after_refresh(pane.scroll_end, animate=False)
        ask = self.query_one("#walk-ask", Label)
        why = self.query_one("#walk-why", Label)
        step = run.next_step
        total = len(w.steps)
        if self.reading:
            ask.update(Text("reading the cluster…"))
            why.display = False
        elif step is not None:
            n = total - sum(1 for s in w.steps if s.id not in run.answers) + 1
            default = f" [{step.default}]" if step.default else ""
            options = "  ".join(f"{i} {o.label}" for i, o in enumerate(step.options, 1))
            ask.update(Text(f"{n}/{total} {step.ask}{default}"))
            if step.id in self.prefill:
                self.query_one("#walk-answer", Input).value = self.prefill.pop(step.id)
            self.query_one("#walk-answer", Input).placeholder = step.default or "answer, then Enter"
            why.update(Text(options or step.why, style="italic"))
            why.display = bool(options or step.why)
        elif run.journal is not None:
            self.query_one("#walk-answer", Input).display = False
            ask.update(Text(self._result_line(run)))
            why.update(Text(f"report: {self.report}" if self.report else "writing the report…"))
            why.display = True
        else:
            ask.update(Text("every step answered · Enter: preview the reset (nothing is written)"))
            why.display = False
        self.status.update_state(busy=self.reading)
        self.refresh_bindings()

    @staticmethod
    def _result_line(run: WalkthroughRun) -> str:
        j = run.journal
        assert j is not None
        verified = j.count(QueueState.VERIFIED)
        return f"applied {j.apply_id}: {verified}/{len(j.queues)} verified ({j.status})"

    def _evidence_text(self, run: WalkthroughRun) -> Text:
        parts: list[Text] = []
        shown: list[Evidence] = [*run.evidence, *run.after]
        for step in run.walkthrough.steps:
            a = run.answers.get(step.id)
            if a is not None:
                parts.append(Text(f"{step.id}: {a.shown}", style="bold"))
        for e in shown:
            parts.append(Text(e.title, style="bold underline"))
            parts.extend(Text(f"  {line}") for line in e.lines)
            if e.missing:
                parts.append(toned(self.app, f"  not read: {', '.join(e.missing)}", "text-warning"))
        return Text("\n").join(parts)

    def mqadmin_lines(self) -> list[str]:
        return mqadmin.group(self.cluster_session.cluster.namesrv, self.group)


def first_sentence(text: str) -> str:
    """What a walkthrough is for, in the one line the list has for it."""
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]
