"""pytest-xdist: what a worker hands the controller, and the controller's merge of it, so the
reports of a distributed run match those of a run without xdist (as xdist keeps its ``DSession``
apart from its plugin)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .judging.progress import ProgressLine, file_publisher, worker_flights
from .record import FiledJudgeError
from .reports.hooks import report_claims
from .reports.json_report import outcome_record, stats_record
from .reports.view import outcome_from_record

if TYPE_CHECKING:
    from .runtime import Runtime

# The workerinput entry naming the folder where xdist workers publish what they are judging.
PROGRESS_DIR_INPUT = "prop_progress_dir"


class XdistHooks:
    """Registered only when pytest-xdist is installed: gather workers' results on the controller."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def pytest_configure_node(self, node: Any) -> None:
        # The controller shows the workers' judge errors and progress: its reporting starts now.
        report_claims(node.config, self.runtime, with_status=True)
        start_progress_relay(self.runtime, node.workerinput)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        merge_worker_output(self.runtime, output, crashed=bool(error))


def start_progress_relay(runtime: Runtime, workerinput: dict[str, Any]) -> None:
    """On an xdist controller, as a worker is configured: have the workers publish what they
    judge into one folder, and show it here."""
    if runtime.progress is None:  # -qq: nothing to show
        return
    if runtime.progress_dir is None:
        runtime.progress_dir = Path(tempfile.mkdtemp(prefix="propositions-progress-"))
        folder = runtime.progress_dir
        runtime.progress.watch_others(lambda: worker_flights(folder))
    workerinput[PROGRESS_DIR_INPUT] = str(runtime.progress_dir)


def worker_progress(workerinput: dict[str, Any], model: str) -> Callable[[], ProgressLine] | None:
    """On an xdist worker, which has no terminal: its progress line, which tells the controller
    through a file what it is judging (None when the controller asked for nothing, see
    ``start_progress_relay``)."""
    folder = workerinput.get(PROGRESS_DIR_INPUT)
    if not folder:
        return None
    path = Path(folder) / str(workerinput.get("workerid", os.getpid()))
    return lambda: ProgressLine(None, model, publish=file_publisher(path))


def worker_output(runtime: Runtime) -> dict[str, Any]:
    """What an xdist worker sends the controller: used keys, and what it judged."""
    output: dict[str, Any] = {
        "prop_used_keys": sorted(runtime.used_keys()),
    }
    if runtime.used:
        output["prop_outcomes"] = [outcome_record(outcome) for outcome in runtime.record.outcomes]
        output["prop_judge_errors"] = [list(error) for error in runtime.record.judge_errors]
        output["prop_stats"] = stats_record(runtime.stats())
        output["prop_used"] = True
        if runtime.record.contexts:
            output["prop_contexts"] = runtime.record.contexts
        counts = runtime.store_counts()  # a shared store's, and verdicts a full disk refused
        if counts:
            output["prop_store"] = counts
    return output


def merge_worker_output(runtime: Runtime, output: dict[str, Any], crashed: bool) -> None:
    """On the controller: fold one worker's results in, so reports match a run without xdist."""
    runtime.record.merge_used_keys(output.get("prop_used_keys", ()))
    if output.get("prop_used"):
        runtime.record.merge_worker(
            [outcome_from_record(record) for record in output.get("prop_outcomes", ())],
            [FiledJudgeError(*error) for error in output.get("prop_judge_errors", ())],
            output.get("prop_stats", {}),
            used=True,
        )
        runtime.record.contexts.update(output.get("prop_contexts", {}))
        runtime.record.merge_store_counts(output.get("prop_store", {}))
    if crashed:
        runtime.record.usage_lost = True
