/*
 * context: a session's context.json — the structured message of seed 003
 * (DESIGN §7) — and its readable rendering, context.txt.  Pure logic on
 * jansson: no files, no store, no session.
 *
 *	struct ferr err = FERR_INIT;
 *	json_t *doc, *ctx;
 *	if (fjson_parse(&doc, text, len, &err) < 0 ||
 *	    context_check(doc, &ctx, &err) < 0)
 *		... "phases[1].rounds[0].plan.tasks[3].tool: \"judge\" is not
 *		     allowed (a task's tool must be file_operations, search_code
 *		     or run_terminal)"
 *	store fjson_dump(ctx); context_render_text(ctx, &txt);
 *
 * ---- The document ----
 * The document, key order kept as written (nothing is added or reordered;
 * `*out` is the written document itself unless it was converted):
 *
 *	{id*, timestamp*, architecture*, request*, phases*, summary}
 *	request  {original_input, core_goal, requirements, constraints}
 *	phase    {id*, name*, goal, rounds*, status, summary}
 *	round    {round_id*, plan*, executions, judge}
 *	plan     {tasks*, reasoning}
 *	task     {id*, title*, description, tool*, arguments, priority,
 *	          dependencies}
 *	execution {task_id*, tool*, arguments, result, timestamp}
 *	judge    {phase_completed, task_evaluation, decision, phase_metrics,
 *	          summary}
 *	evaluation {task_id*, status, quality_score, output_valid, notes}
 *	decision {action*, reason}
 *	phase_metrics {completion_rate, quality_average}
 *
 * `*` marks a required field: the skeleton and the identities.  Every
 * other field may be absent or null (a context is written while the work
 * goes on: a round without a judge yet, a phase without a summary).
 * Types: ids (id, round_id, task_id, dependencies' items) are integers
 * or non-empty strings (1 and "1" are different ids); name, title, tool
 * (task and execution) and decision.action are non-empty strings;
 * architecture is exactly "request-phase-task"; timestamp, priority
 * (an integer), quality_score, completion_rate, quality_average are
 * numbers; phase_completed and output_valid are booleans; requirements
 * and constraints are arrays of strings; the other texts (summary,
 * goal, status, reasoning, description, notes, reason, original_input,
 * core_goal) are strings; arguments and result are any JSON value.
 * No string the checks look at may contain "\u0000".
 *
 * ---- Refused ----
 * Refused, -EINVAL with the JSON path first in err->message and in
 * err->path (line and column stay 0):
 * - not an object; an unknown field (as everywhere in flowfs: the
 *   message lists the fields the object has); a missing required field;
 *   a wrong type; another architecture;
 * - more than 3 phases;
 * - more than 8 tasks in one phase, counted over the plans of all the
 *   phase's rounds (a task planned again in a later round is a new task
 *   with a new id);
 * - a task whose tool is judge, judge_tasks or think in any letter case
 *   ("is not allowed"), or any other tool than exactly file_operations,
 *   search_code or run_terminal ("is not an available tool").
 *   Executions record what actually ran and may name any tool;
 * - duplicate ids: phase ids within the document, round ids within a
 *   phase, task ids within a phase (over all its rounds' plans);
 * - a dependency that is no task id of the same phase (any of its
 *   rounds), or the task itself.  Executions' and evaluations' task_id
 *   are not checked against the plan (a converted legacy message has
 *   executions and no plan).
 *
 * ---- Legacy messages ----
 * A legacy message (an object with a "role" member) is taken the way
 * MyAgent's StructuredMessage.from_legacy_message (core/
 * structured_message.py, seed 003's code) takes it; its other members
 * are ignored:
 * - not role "assistant", or without tool calls (tool_calls absent or
 *   empty): kept as written, not checked further (context.txt says so);
 * - with "structured_context" (an object): that object laid over a fresh
 *   message (below, without phases), key by key, then checked;
 * - else converted, then checked like any other document (`now` is the
 *   conversion's time, Unix seconds, as MyAgent's time.time()):
 *
 *	{"id": "msg_<int(now)>", "timestamp": now,
 *	 "architecture": "request-phase-task",
 *	 "request": {"original_input": "历史消息",
 *	             "core_goal": <content's first 100 code points>,
 *	             "requirements": [], "constraints": []},
 *	 "phases": [{"id": 1, "name": "Main Task", "goal": "历史任务",
 *	             "rounds": [{"round_id": 1,
 *	                         "plan": {"tasks": [], "reasoning": ""},
 *	                         "executions": [one per tool call],
 *	                         "judge": {}}],
 *	             "status": "done", "summary": <content>}],
 *	 "summary": <content>}
 *
 *   content: a string ("" when absent).  The i-th call (1-based) becomes
 *   {"task_id": i, "tool": <its "tool", "unknown" when absent>,
 *   "arguments": <its "arguments", {} when absent>, "result": <its
 *   "result", {} when absent>, "timestamp": now}.  An extension: a call
 *   in OpenAI's shape, {"id", "type", "function": {"name", "arguments"}}
 *   without "tool", gives function.name as the tool and function.arguments
 *   parsed as JSON as the arguments ("" or absent: {}; a text that does
 *   not parse is kept as the string).
 * Refused: tool_calls that is not an array, a call that is not an
 * object, a content that is not a string (MyAgent's code fails on
 * these), a structured_context that is not an object.
 */
#ifndef FLOWFS_CONTEXT_H
#define FLOWFS_CONTEXT_H

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

#define CONTEXT_MAX_PHASES 3
#define CONTEXT_MAX_TASKS 8
/* The largest context.json, as written and as stored (indented): every
 * read of context.txt renders it again. */
#define CONTEXT_MAX_SIZE (1024 * 1024)

/*
 * Check a parsed context.json (converting a legacy message first, at
 * time `now`).  0 and *out = the document to store (a new reference), or
 * -EINVAL (err says what and where) or -ENOMEM, with *out NULL.  `doc` is
 * not changed.
 */
int context_check(json_t *doc, double now, json_t **out, struct ferr *err);

/*
 * Append context.txt for a document context_check() accepted: a tree for
 * a person in a terminal, plain UTF-8, no colours, deterministic.  Texts
 * are wrapped at spaces (or between wide characters) to keep lines within
 * 100 columns, East Asian wide characters counting 2; a word longer than
 * a line is left whole.  Control characters in texts become spaces and
 * lines carry no trailing spaces.  Every line ends with "\n".
 *
 *	Context msg_1 (request-phase-task)
 *	Goal: <core_goal>
 *	Input: <original_input>                  (when not empty)
 *	Requirements: (none)   or   Requirements:\n  - <each>
 *	Constraints: (none)    or   Constraints:\n  - <each>
 *	Phases: <n> of at most 3
 *
 *	Phase <id>: <name> (<status>, or "no status")
 *	  Goal: <goal>                           (when not empty)
 *	  Round <round_id>: plan <n> task(s), execute <n> call(s), judge <n>
 *	      evaluation(s)                      ("judge pending" without judge)
 *	    Reasoning: <plan.reasoning>          (when not empty)
 *	    - Task <id>: <title> [<tool>] (after <dep>, <dep>)
 *	    Decision: <action> — <reason>        (when there is a decision)
 *	    Completion rate <x>, quality average <y>   ("-" when absent)
 *	    Judge: <judge.summary>               (when not empty)
 *	  Summary: <phase summary>               (when not empty)
 *
 *	Summary: <summary, or "(none)">
 *
 * Numbers as fjson writes them (0.75, 9.2, 3); string ids as they are.
 * Returns 0, -ENOMEM, or -EINVAL when `doc` is not a checked document
 * (out is then back at its length before the call).
 */
int context_render_text(const json_t *doc, struct sbuf *out);

#endif
