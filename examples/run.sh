#!/usr/bin/env bash
# A loop runner for agents run from a shell (SPEC §5).
#
#   examples/run.sh [AGENT COMMAND...]     (no command: a demo agent that escalates once)
#
# Every iteration, in the current directory:
#   - BLOCKED.md exists  -> say so and exit 2: the run waits for a human. The service removes
#                           the file when the case is decided (or `escalate wait ID --unblock`
#                           does, or a human does); its removal is the unblock signal.
#   - DONE exists        -> the agent said it finished: exit 0.
#   - otherwise run the agent. It exits 0 to be run again, 2 when it wrote BLOCKED.md
#     (e.g. `escalate raise --blocked-file ...`, which always exits 2): stop with 2.
#     Any other code stops the loop with that code.
# The decision is in DECISION.md (and decisions.log) when the next iteration starts.
#
# Environment: BLOCKED_FILE (default BLOCKED.md; the agent gets it exported, pass it on with
# `escalate raise --blocked-file-path "$BLOCKED_FILE"`), DONE_FILE (default DONE),
# MAX_ITERATIONS (default 20).
set -u

BLOCKED_FILE=${BLOCKED_FILE:-BLOCKED.md}
DONE_FILE=${DONE_FILE:-DONE}
MAX_ITERATIONS=${MAX_ITERATIONS:-20}
export BLOCKED_FILE DONE_FILE

demo_agent() {
    # Resume on a decision, else escalate once and stop.
    if [ -f "$(dirname "$BLOCKED_FILE")/DECISION.md" ]; then
        echo "demo agent: resuming on the decision:"
        grep -E '^- (Option|Outcome): ' "$(dirname "$BLOCKED_FILE")/DECISION.md"
        touch "$DONE_FILE"
        return 0
    fi
    escalate raise --blocked-file-path "$BLOCKED_FILE" --run "demo-$(date +%s)" \
        --summary "Demo: migrate 120 records and verify totals." \
        --context "Source has 120 records, target 117; 3 ids have no target customer." \
        --attempted "Re-ran the migration" --evidence "log:migrate.log" \
        --question "Skip the 3 orphan records, or create placeholder customers?" \
        --choice "skip=drop the 3 records and resume" \
        --choice "placeholder=create placeholder customers and resume"
}

iteration=0
while [ "$iteration" -lt "$MAX_ITERATIONS" ]; do
    iteration=$((iteration + 1))
    if [ -e "$BLOCKED_FILE" ]; then
        echo "run.sh: blocked: $BLOCKED_FILE exists; answer it (or remove it), then run again" >&2
        exit 2
    fi
    if [ -e "$DONE_FILE" ]; then
        echo "run.sh: done ($DONE_FILE exists)"
        exit 0
    fi
    if [ "$#" -gt 0 ]; then
        "$@"
    else
        demo_agent
    fi
    code=$?
    if [ "$code" -eq 2 ]; then
        echo "run.sh: the agent is blocked (exit 2); stopping until $BLOCKED_FILE is removed" >&2
        exit 2
    fi
    if [ "$code" -ne 0 ]; then
        echo "run.sh: the agent failed with exit $code; stopping" >&2
        exit "$code"
    fi
done
echo "run.sh: stopped after $MAX_ITERATIONS iterations" >&2
exit 1
