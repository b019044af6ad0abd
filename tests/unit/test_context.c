/*
 * Unit tests for context: context.json's rules (every refusal and its
 * message, with the path it names), what is accepted (the seed's example,
 * nulls for pending parts, key order kept), a legacy message converted as MyAgent
 * converts it, and context.txt.
 *
 * Expected messages, documents and texts are written out by hand from the
 * contract in core/context.h; expected documents are compared through
 * fjson_dump, so key order counts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/context.h"
#include "lib/fjson.h"

static json_t *parse(const char *text)
{
	json_t *doc = NULL;
	struct ferr err = FERR_INIT;

	if (fjson_parse(&doc, text, strlen(text), &err) < 0)
		fail_msg("test JSON does not parse: %s", err.message);
	return doc;
}

static char *dump(const json_t *v)
{
	char *s = fjson_dumps(v);

	assert_non_null(s);
	return s;
}

/* The time a legacy message is converted at (MyAgent's time.time()). */
#define NOW 1764100000.25

/* Check `text`; returns the accepted document (or fails the test). */
static json_t *accept(const char *text)
{
	json_t *doc = parse(text), *out = NULL;
	struct ferr err = FERR_INIT;

	if (context_check(doc, NOW, &out, &err) < 0)
		fail_msg("refused: %s", err.message);
	json_decref(doc);
	return out;
}

/* Check `text`: must be refused with exactly `msg` and `path`. */
static void refused(const char *text, const char *path, const char *msg)
{
	json_t *doc = parse(text), *out = (json_t *)1;
	struct ferr err = FERR_INIT;

	assert_int_equal(context_check(doc, NOW, &out, &err), -EINVAL);
	assert_null(out);
	assert_string_equal(err.message, msg);
	assert_string_equal(err.path, path);
	json_decref(doc);
}

#define HEAD "{\"id\": \"m\", \"timestamp\": 1, \"architecture\": " \
	"\"request-phase-task\", \"request\": {}, \"phases\": ["
#define TAIL "]}"
#define TASK(id, tool) "{\"id\": " id ", \"title\": \"t\", \"tool\": \"" \
	tool "\"}"
#define TASKD(id, deps) "{\"id\": " id ", \"title\": \"t\", \"tool\": " \
	"\"search_code\", \"dependencies\": [" deps "]}"
#define ROUND(id, tasks) "{\"round_id\": " id ", \"plan\": {\"tasks\": [" \
	tasks "]}}"
#define PHASE(id, rounds) "{\"id\": " id ", \"name\": \"p\", \"rounds\": [" \
	rounds "]}"
#define ONE(task) HEAD PHASE("1", ROUND("1", task)) TAIL

static const char seed_doc[] =
	"{\n"
	"  \"id\": \"msg_1234567890\",\n"
	"  \"timestamp\": 1234567890,\n"
	"  \"architecture\": \"request-phase-task\",\n"
	"  \"request\": {\n"
	"    \"original_input\": \"用户原始输入...\",\n"
	"    \"core_goal\": \"核心目标（一句话总结）\",\n"
	"    \"requirements\": [\n      \"需求1\",\n      \"需求2\"\n    ],\n"
	"    \"constraints\": [\n      \"约束1\"\n    ]\n"
	"  },\n"
	"  \"phases\": [\n"
	"    {\n"
	"      \"id\": 1,\n"
	"      \"name\": \"Phase名称\",\n"
	"      \"goal\": \"Phase目标\",\n"
	"      \"rounds\": [\n"
	"        {\n"
	"          \"round_id\": 1,\n"
	"          \"plan\": {\n"
	"            \"tasks\": [\n"
	"              {\n"
	"                \"id\": 1,\n"
	"                \"title\": \"Task标题\",\n"
	"                \"description\": \"Task描述\",\n"
	"                \"tool\": \"file_operations\",\n"
	"                \"arguments\": {},\n"
	"                \"priority\": 10,\n"
	"                \"dependencies\": []\n"
	"              }\n"
	"            ],\n"
	"            \"reasoning\": \"规划思路\"\n"
	"          },\n"
	"          \"executions\": [\n"
	"            {\n"
	"              \"task_id\": 1,\n"
	"              \"tool\": \"file_operations\",\n"
	"              \"arguments\": {\n"
	"                \"operation\": \"read\",\n"
	"                \"path\": \"main.py\"\n"
	"              },\n"
	"              \"result\": {\n"
	"                \"success\": true,\n"
	"                \"content\": \"...\"\n"
	"              },\n"
	"              \"timestamp\": 1234567890\n"
	"            }\n"
	"          ],\n"
	"          \"judge\": {\n"
	"            \"phase_completed\": false,\n"
	"            \"task_evaluation\": [\n"
	"              {\n"
	"                \"task_id\": 1,\n"
	"                \"status\": \"done\",\n"
	"                \"quality_score\": 9.5,\n"
	"                \"output_valid\": true,\n"
	"                \"notes\": \"执行成功\"\n"
	"              }\n"
	"            ],\n"
	"            \"decision\": {\n"
	"              \"action\": \"continue\",\n"
	"              \"reason\": \"需要继续下一个Round\"\n"
	"            },\n"
	"            \"phase_metrics\": {\n"
	"              \"completion_rate\": 0.75,\n"
	"              \"quality_average\": 9.2\n"
	"            },\n"
	"            \"summary\": \"Round总结\"\n"
	"          }\n"
	"        }\n"
	"      ],\n"
	"      \"status\": \"done\",\n"
	"      \"summary\": \"Phase总结\"\n"
	"    }\n"
	"  ],\n"
	"  \"summary\": \"最终总结\"\n"
	"}";

static void test_seed_example(void **state)
{
	json_t *out = accept(seed_doc);
	char *text = dump(out);

	(void)state;
	/* stored as written: same keys, same order, nothing added */
	assert_string_equal(text, seed_doc);
	free(text);
	json_decref(out);
}

static void test_reversed_key_order_kept(void **state)
{
	static const char doc[] = "{\n  \"phases\": [],\n  \"request\": {},\n"
		"  \"architecture\": \"request-phase-task\",\n"
		"  \"timestamp\": 2.5,\n  \"id\": 7\n}";
	json_t *out = accept(doc);
	char *text = dump(out);

	(void)state;
	assert_string_equal(text, doc);
	free(text);
	json_decref(out);
}

static void test_pending_parts(void **state)
{
	json_t *out;

	(void)state;
	/* nulls for what is not there yet; no phases at all */
	out = accept("{\"id\": \"m\", \"timestamp\": 1, \"architecture\": "
		     "\"request-phase-task\", \"request\": {\"core_goal\": null},"
		     " \"phases\": [{\"id\": \"a\", \"name\": \"p\", \"goal\": null,"
		     " \"rounds\": [{\"round_id\": 1, \"plan\": {\"tasks\": [],"
		     " \"reasoning\": null}, \"executions\": null, \"judge\": null}],"
		     " \"status\": null}], \"summary\": null}");
	json_decref(out);
	json_decref(accept(HEAD TAIL));
}

static void test_phase_limit(void **state)
{
	(void)state;
	json_decref(accept(HEAD PHASE("1", "") "," PHASE("2", "") ","
			   PHASE("3", "") TAIL));
	refused(HEAD PHASE("1", "") "," PHASE("2", "") "," PHASE("3", "") ","
		PHASE("4", "") TAIL, "phases",
		"phases: 4 phases: at most 3 are allowed");
}

#define FIVE TASK("1", "run_terminal") "," TASK("2", "run_terminal") "," \
	TASK("3", "run_terminal") "," TASK("4", "run_terminal") "," \
	TASK("5", "run_terminal")

static void test_task_limit(void **state)
{
	(void)state;
	/* 8 in one phase over two rounds; 8 more in another phase */
	json_decref(accept(HEAD PHASE("1", ROUND("1", FIVE) "," ROUND("2",
		TASK("6", "search_code") "," TASK("7", "search_code") ","
		TASK("8", "search_code"))) "," PHASE("2", ROUND("1", FIVE)
		"," ROUND("2", TASK("6", "search_code") ","
		TASK("7", "search_code") "," TASK("8", "search_code")))
		TAIL));
	refused(HEAD PHASE("1", ROUND("1", FIVE) "," ROUND("2",
		TASK("6", "search_code") "," TASK("7", "search_code") ","
		TASK("8", "search_code") "," TASK("9", "search_code"))) TAIL,
		"phases[0].rounds[1].plan.tasks[3]",
		"phases[0].rounds[1].plan.tasks[3]: the phase's task number 9: "
		"a phase has at most 8 tasks (counted over the plans of all its "
		"rounds)");
}

static void test_forbidden_tools(void **state)
{
	(void)state;
	refused(HEAD PHASE("1", "") "," PHASE("2", ROUND("1",
		TASK("1", "run_terminal") "," TASK("2", "run_terminal") ","
		TASK("3", "run_terminal") "," TASK("4", "judge"))) TAIL,
		"phases[1].rounds[0].plan.tasks[3].tool",
		"phases[1].rounds[0].plan.tasks[3].tool: \"judge\" is not allowed "
		"(a task's tool must be file_operations, search_code or "
		"run_terminal)");
	refused(ONE(TASK("1", "JUDGE_Tasks")),
		"phases[0].rounds[0].plan.tasks[0].tool",
		"phases[0].rounds[0].plan.tasks[0].tool: \"JUDGE_Tasks\" is not "
		"allowed (a task's tool must be file_operations, search_code or "
		"run_terminal)");
	refused(ONE(TASK("1", "Think")),
		"phases[0].rounds[0].plan.tasks[0].tool",
		"phases[0].rounds[0].plan.tasks[0].tool: \"Think\" is not "
		"allowed (a task's tool must be file_operations, search_code or "
		"run_terminal)");
}

static void test_unavailable_tools(void **state)
{
	(void)state;
	refused(ONE(TASK("1", "grep")),
		"phases[0].rounds[0].plan.tasks[0].tool",
		"phases[0].rounds[0].plan.tasks[0].tool: \"grep\" is not an "
		"available tool (a task's tool must be file_operations, "
		"search_code or run_terminal)");
	/* the allowed names are exact */
	refused(ONE(TASK("1", "File_Operations")),
		"phases[0].rounds[0].plan.tasks[0].tool",
		"phases[0].rounds[0].plan.tasks[0].tool: \"File_Operations\" is "
		"not an available tool (a task's tool must be file_operations, "
		"search_code or run_terminal)");
	/* executions record what ran: any tool */
	json_decref(accept(HEAD PHASE("1", "{\"round_id\": 1, \"plan\": "
		"{\"tasks\": []}, \"executions\": [{\"task_id\": 1, \"tool\": "
		"\"think\"}]}") TAIL));
}

static void test_duplicate_ids(void **state)
{
	(void)state;
	refused(HEAD PHASE("1", "") "," PHASE("1", "") TAIL, "phases[1].id",
		"phases[1].id: 1 repeats phases[0].id (phase ids are unique)");
	refused(HEAD PHASE("\"a\"", "") "," PHASE("2", "") "," PHASE("\"a\"",
		"") TAIL, "phases[2].id",
		"phases[2].id: \"a\" repeats phases[0].id (phase ids are unique)");
	/* 1 and "1" differ */
	json_decref(accept(HEAD PHASE("1", "") "," PHASE("\"1\"", "") TAIL));
	refused(HEAD PHASE("1", ROUND("1", "") "," ROUND("1", "")) TAIL,
		"phases[0].rounds[1].round_id",
		"phases[0].rounds[1].round_id: 1 repeats "
		"phases[0].rounds[0].round_id (round ids are unique within a "
		"phase)");
	refused(HEAD PHASE("1", ROUND("1", TASK("1", "run_terminal") ","
		TASK("2", "run_terminal")) "," ROUND("2", TASK("2",
		"search_code"))) TAIL,
		"phases[0].rounds[1].plan.tasks[0].id",
		"phases[0].rounds[1].plan.tasks[0].id: 2 repeats "
		"phases[0].rounds[0].plan.tasks[1].id (task ids are unique "
		"within a phase)");
	/* the same round and task ids in another phase are fine */
	json_decref(accept(HEAD PHASE("1", ROUND("1", TASK("1", "run_terminal")))
		"," PHASE("2", ROUND("1", TASK("1", "run_terminal"))) TAIL));
}

static void test_dependencies(void **state)
{
	(void)state;
	/* on a task planned later in the phase, and earlier */
	json_decref(accept(HEAD PHASE("1", ROUND("1", TASKD("1", "2") ","
		TASKD("2", "")) "," ROUND("2", TASKD("\"x\"", "1, 2"))) TAIL));
	refused(ONE(TASKD("1", "7")),
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]",
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]: task 7 is not "
		"a task of phase 1");
	refused(ONE(TASKD("1", "") "," TASKD("2", "1, \"1\"")),
		"phases[0].rounds[0].plan.tasks[1].dependencies[1]",
		"phases[0].rounds[0].plan.tasks[1].dependencies[1]: task \"1\" is "
		"not a task of phase 1");
	refused(HEAD PHASE("1", ROUND("1", TASKD("1", ""))) "," PHASE("\"b\"",
		ROUND("1", TASKD("2", "1"))) TAIL,
		"phases[1].rounds[0].plan.tasks[0].dependencies[0]",
		"phases[1].rounds[0].plan.tasks[0].dependencies[0]: task 1 is not "
		"a task of phase \"b\"");
	refused(ONE(TASKD("3", "3")),
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]",
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]: task 3 "
		"depends on itself");
	refused(ONE(TASKD("3", "true")),
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]",
		"phases[0].rounds[0].plan.tasks[0].dependencies[0]: must be an "
		"integer or a non-empty string (a task id)");
}

/* A long key is cut at a character, not inside one. */
static void test_long_names_cut_whole(void **state)
{
	struct sbuf text = SBUF_INIT, msg = SBUF_INIT;

	(void)state;
	sbuf_addstr(&text, "{\"id\": \"m\", \"timestamp\": 1, \"architecture\":"
		    " \"request-phase-task\", \"request\": {}, \"phases\": [],"
		    " \"x");
	sbuf_addstr(&msg, "unknown field \"x");
	for (int i = 0; i < 100; i++) {
		sbuf_addstr(&text, "\xc3\xa9");	/* 2 bytes each */
		if (i < 79)
			sbuf_addstr(&msg, "\xc3\xa9");
	}
	sbuf_addstr(&text, "\": 1}");
	sbuf_addstr(&msg, "\" (a context has id, timestamp, architecture,"
		    " request, phases, summary)");
	refused(text.buf, "", msg.buf);
	sbuf_release(&text);
	sbuf_release(&msg);
}

static void test_shape(void **state)
{
	(void)state;
	refused("[]", "", "a context must be a JSON object (a structured "
		"message or a legacy message)");
	refused("{\"id\": \"m\", \"timestamp\": 1, \"architecture\": "
		"\"request-phase-task\", \"request\": {}, \"phases\": [], "
		"\"extra\": 1}", "",
		"unknown field \"extra\" (a context has id, timestamp, "
		"architecture, request, phases, summary)");
	refused("{\"id\": \"m\", \"architecture\": \"request-phase-task\", "
		"\"request\": {}, \"phases\": []}", "",
		"\"timestamp\" is missing (a context has id, timestamp, "
		"architecture, request, phases, summary)");
	refused("{\"id\": \"m\", \"timestamp\": \"1\", \"architecture\": "
		"\"request-phase-task\", \"request\": {}, \"phases\": []}",
		"timestamp", "timestamp: must be a number");
	refused("{\"id\": \"\", \"timestamp\": 1, \"architecture\": "
		"\"request-phase-task\", \"request\": {}, \"phases\": []}",
		"id", "id: must be an integer or a non-empty string");
	refused("{\"id\": \"m\", \"timestamp\": 1, \"architecture\": "
		"\"request-phase\", \"request\": {}, \"phases\": []}",
		"architecture",
		"architecture: \"request-phase\" must be \"request-phase-task\"");
	refused("{\"id\": \"m\", \"timestamp\": 1, \"architecture\": "
		"\"request-phase-task\", \"request\": {\"requirements\": [1]}, "
		"\"phases\": []}", "request.requirements",
		"request.requirements: must be an array of strings");
	refused(HEAD "{\"id\": 1, \"rounds\": []}" TAIL, "phases[0]",
		"phases[0]: \"name\" is missing (a phase has id, name, goal, "
		"rounds, status, summary)");
	refused(HEAD "{\"id\": 1, \"name\": \"p\", \"rounds\": [], "
		"\"tasks\": []}" TAIL, "phases[0]",
		"phases[0]: unknown field \"tasks\" (a phase has id, name, goal, "
		"rounds, status, summary)");
	refused(ONE("{\"id\": 1, \"title\": \"t\", \"tool\": \"run_terminal\", "
		"\"priority\": 1.5}"),
		"phases[0].rounds[0].plan.tasks[0].priority",
		"phases[0].rounds[0].plan.tasks[0].priority: must be an integer");
	refused(ONE("{\"id\": 1, \"tool\": \"run_terminal\"}"),
		"phases[0].rounds[0].plan.tasks[0]",
		"phases[0].rounds[0].plan.tasks[0]: \"title\" is missing (a task "
		"has id, title, description, tool, arguments, priority, "
		"dependencies)");
	refused(HEAD PHASE("1", "{\"round_id\": 1}") TAIL, "phases[0].rounds[0]",
		"phases[0].rounds[0]: \"plan\" is missing (a round has round_id, "
		"plan, executions, judge)");
	refused(HEAD PHASE("1", "7") TAIL, "phases[0].rounds[0]",
		"phases[0].rounds[0]: a round must be a JSON object");
	refused(HEAD PHASE("1", "{\"round_id\": 1, \"plan\": {\"tasks\": []}, "
		"\"judge\": {\"decision\": {\"reason\": \"r\"}}}") TAIL,
		"phases[0].rounds[0].judge.decision",
		"phases[0].rounds[0].judge.decision: \"action\" is missing (a "
		"decision has action, reason)");
	refused(HEAD PHASE("1", "{\"round_id\": 1, \"plan\": {\"tasks\": []}, "
		"\"judge\": {\"task_evaluation\": [{\"task_id\": 1, "
		"\"output_valid\": 1}]}}") TAIL,
		"phases[0].rounds[0].judge.task_evaluation[0].output_valid",
		"phases[0].rounds[0].judge.task_evaluation[0].output_valid: must "
		"be true or false");
	refused(HEAD PHASE("1", "{\"round_id\": 1, \"plan\": {\"tasks\": []}, "
		"\"judge\": {\"phase_metrics\": {\"completion_rate\": \"75%\"}}}")
		TAIL, "phases[0].rounds[0].judge.phase_metrics.completion_rate",
		"phases[0].rounds[0].judge.phase_metrics.completion_rate: must be "
		"a number");
	refused(HEAD PHASE("1", "{\"round_id\": 1, \"plan\": {\"tasks\": []}, "
		"\"executions\": [{\"task_id\": 1}]}") TAIL,
		"phases[0].rounds[0].executions[0]",
		"phases[0].rounds[0].executions[0]: \"tool\" is missing (an "
		"execution has task_id, tool, arguments, result, timestamp)");
	refused(ONE("{\"id\": \"a\\u0000b\", \"title\": \"t\", \"tool\": "
		"\"run_terminal\"}"), "phases[0].rounds[0].plan.tasks[0].id",
		"phases[0].rounds[0].plan.tasks[0].id: must not contain a NUL "
		"character");
}

/*
 * MyAgent's StructuredMessage.from_legacy_message, read from its code
 * (core/structured_message.py): the expected documents below are what it
 * builds, written out by hand, with time.time() = NOW.
 */
static void test_legacy(void **state)
{
	static const char expected[] =
		"{\n"
		"  \"id\": \"msg_1764100000\",\n"
		"  \"timestamp\": 1764100000.25,\n"
		"  \"architecture\": \"request-phase-task\",\n"
		"  \"request\": {\n"
		"    \"original_input\": \"历史消息\",\n"
		"    \"core_goal\": \"已完成：读取 main.py\",\n"
		"    \"requirements\": [],\n"
		"    \"constraints\": []\n"
		"  },\n"
		"  \"phases\": [\n"
		"    {\n"
		"      \"id\": 1,\n"
		"      \"name\": \"Main Task\",\n"
		"      \"goal\": \"历史任务\",\n"
		"      \"rounds\": [\n"
		"        {\n"
		"          \"round_id\": 1,\n"
		"          \"plan\": {\n"
		"            \"tasks\": [],\n"
		"            \"reasoning\": \"\"\n"
		"          },\n"
		"          \"executions\": [\n"
		"            {\n"
		"              \"task_id\": 1,\n"
		"              \"tool\": \"file_operations\",\n"
		"              \"arguments\": {\n"
		"                \"path\": \"main.py\"\n"
		"              },\n"
		"              \"result\": {\n"
		"                \"ok\": true\n"
		"              },\n"
		"              \"timestamp\": 1764100000.25\n"
		"            },\n"
		"            {\n"
		"              \"task_id\": 2,\n"
		"              \"tool\": \"unknown\",\n"
		"              \"arguments\": \"raw\",\n"
		"              \"result\": {},\n"
		"              \"timestamp\": 1764100000.25\n"
		"            },\n"
		"            {\n"
		"              \"task_id\": 3,\n"
		"              \"tool\": \"read_file\",\n"
		"              \"arguments\": {\n"
		"                \"path\": \"a\"\n"
		"              },\n"
		"              \"result\": {},\n"
		"              \"timestamp\": 1764100000.25\n"
		"            }\n"
		"          ],\n"
		"          \"judge\": {}\n"
		"        }\n"
		"      ],\n"
		"      \"status\": \"done\",\n"
		"      \"summary\": \"已完成：读取 main.py\"\n"
		"    }\n"
		"  ],\n"
		"  \"summary\": \"已完成：读取 main.py\"\n"
		"}";
	/* extra members are ignored; the third call is OpenAI's shape */
	json_t *out = accept("{\"role\": \"assistant\", \"content\": "
		"\"已完成：读取 main.py\", \"name\": \"ignored\", \"tool_calls\": ["
		"{\"tool\": \"file_operations\", \"arguments\": {\"path\": "
		"\"main.py\"}, \"result\": {\"ok\": true}, \"id\": \"x\"},"
		"{\"arguments\": \"raw\"},"
		"{\"id\": \"call_3\", \"type\": \"function\", \"function\": "
		"{\"name\": \"read_file\", \"arguments\": "
		"\"{\\\"path\\\": \\\"a\\\"}\"}}]}");
	char *text = dump(out), *again;
	json_t *back;

	(void)state;
	assert_string_equal(text, expected);
	/* the converted document is itself accepted, unchanged */
	back = accept(text);
	again = dump(back);
	assert_string_equal(again, expected);
	free(again);
	json_decref(back);
	free(text);
	json_decref(out);
}

/* core_goal: content[:100], in code points (Python's slicing). */
static void test_legacy_goal_is_100_code_points(void **state)
{
	char msg[2048], content[1024] = "";
	json_t *out, *goal;

	(void)state;
	for (int i = 0; i < 120; i++)
		strcat(content, i % 2 ? "票" : "a");
	snprintf(msg, sizeof(msg), "{\"role\": \"assistant\", \"content\": "
		 "\"%s\", \"tool_calls\": [{}]}", content);
	out = accept(msg);
	goal = json_object_get(json_object_get(out, "request"), "core_goal");
	/* 50 "a" (1 byte) and 50 "票" (3 bytes) */
	assert_int_equal(json_string_length(goal), 50 + 150);
	assert_memory_equal(json_string_value(goal), content, 200);
	assert_string_equal(json_string_value(json_object_get(out, "summary")),
			    content);
	json_decref(out);
}

/* What MyAgent does not convert is kept as written. */
static void test_legacy_kept(void **state)
{
	static const char *const kept[] = {
		"{\"role\": \"user\", \"content\": \"hi\"}",
		"{\"role\": \"assistant\", \"content\": \"no calls\"}",
		"{\"role\": \"assistant\", \"content\": \"x\", \"tool_calls\": []}",
		"{\"role\": \"tool\", \"tool_calls\": 5, \"extra\": [1]}",
	};
	struct sbuf sb = SBUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++) {
		json_t *doc = parse(kept[i]), *out = accept(kept[i]);

		assert_true(json_equal(doc, out));
		json_decref(doc);
		json_decref(out);
	}
	{
		json_t *out = accept(kept[0]);

		assert_int_equal(context_render_text(out, &sb), 0);
		assert_string_equal(sb.buf, "Legacy message, role user: kept as"
				    " written (not an assistant message with"
				    " tool calls)\nContent: hi\n");
		json_decref(out);
	}
	sbuf_release(&sb);
}

/* structured_context: laid over a fresh message, then checked. */
static void test_legacy_structured_context(void **state)
{
	json_t *out = accept("{\"role\": \"assistant\", \"tool_calls\": [{}],"
		" \"structured_context\": {\"id\": \"msg_7\", \"summary\": \"s\","
		" \"phases\": [{\"id\": 1, \"name\": \"P\", \"rounds\": []}]}}");
	char *text = dump(out);

	(void)state;
	assert_string_equal(text,
		"{\n"
		"  \"id\": \"msg_7\",\n"
		"  \"timestamp\": 1764100000.25,\n"
		"  \"architecture\": \"request-phase-task\",\n"
		"  \"request\": {\n"
		"    \"original_input\": \"\",\n"
		"    \"core_goal\": \"\",\n"
		"    \"requirements\": [],\n"
		"    \"constraints\": []\n"
		"  },\n"
		"  \"phases\": [\n"
		"    {\n"
		"      \"id\": 1,\n"
		"      \"name\": \"P\",\n"
		"      \"rounds\": []\n"
		"    }\n"
		"  ],\n"
		"  \"summary\": \"s\"\n"
		"}");
	free(text);
	json_decref(out);
}

static void test_legacy_refused(void **state)
{
	(void)state;
	refused("{\"role\": \"assistant\", \"tool_calls\": {\"a\": 1}}",
		"tool_calls", "tool_calls: must be an array of tool calls");
	refused("{\"role\": \"assistant\", \"tool_calls\": [\"read\"]}",
		"tool_calls[0]", "tool_calls[0]: must be an object (a tool call)");
	refused("{\"role\": \"assistant\", \"content\": null, \"tool_calls\": "
		"[{}]}", "content", "content: must be a string: it becomes the"
		" summary of a converted message");
	refused("{\"role\": \"assistant\", \"structured_context\": []}",
		"structured_context", "structured_context: must be an object (a"
		" structured message)");
	/* converted, then checked as any context: a bad tool name */
	refused("{\"role\": \"assistant\", \"tool_calls\": [{\"tool\": 5}]}",
		"phases[0].rounds[0].executions[0].tool",
		"phases[0].rounds[0].executions[0].tool: must be a non-empty string");
}

static void render_is(const char *doc_text, const char *expected)
{
	json_t *doc = accept(doc_text);
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(sbuf_addstr(&sb, "keep"), 0);
	assert_int_equal(context_render_text(doc, &sb), 0);
	assert_string_equal(sb.buf + 4, expected);
	assert_memory_equal(sb.buf, "keep", 4);
	sbuf_release(&sb);
	json_decref(doc);
}

static void test_render_seed(void **state)
{
	(void)state;
	render_is(seed_doc,
		"Context msg_1234567890 (request-phase-task)\n"
		"Goal: 核心目标（一句话总结）\n"
		"Input: 用户原始输入...\n"
		"Requirements:\n"
		"  - 需求1\n"
		"  - 需求2\n"
		"Constraints:\n"
		"  - 约束1\n"
		"Phases: 1 of at most 3\n"
		"\n"
		"Phase 1: Phase名称 (done)\n"
		"  Goal: Phase目标\n"
		"  Round 1: plan 1 task, execute 1 call, judge 1 evaluation\n"
		"    Reasoning: 规划思路\n"
		"    - Task 1: Task标题 [file_operations]\n"
		"    Decision: continue — 需要继续下一个Round\n"
		"    Completion rate 0.75, quality average 9.2\n"
		"    Judge: Round总结\n"
		"  Summary: Phase总结\n"
		"\n"
		"Summary: 最终总结\n");
}

static void test_render_sparse(void **state)
{
	(void)state;
	render_is(HEAD PHASE("\"setup\"", ROUND("1", TASKD("1", "") ","
		TASKD("2", "1, \"x\"") "," TASKD("\"x\"", "")) ","
		"{\"round_id\": 2, \"plan\": {\"tasks\": []}, \"executions\": "
		"[{\"task_id\": 1, \"tool\": \"ls\"}, {\"task_id\": 2, \"tool\": "
		"\"ls\"}], \"judge\": {\"task_evaluation\": [], "
		"\"phase_metrics\": {\"quality_average\": 8}}}") TAIL,
		"Context m (request-phase-task)\n"
		"Goal: (none)\n"
		"Requirements: (none)\n"
		"Constraints: (none)\n"
		"Phases: 1 of at most 3\n"
		"\n"
		"Phase setup: p (no status)\n"
		"  Round 1: plan 3 tasks, execute 0 calls, judge pending\n"
		"    - Task 1: t [search_code]\n"
		"    - Task 2: t [search_code] (after 1, x)\n"
		"    - Task x: t [search_code]\n"
		"  Round 2: plan 0 tasks, execute 2 calls, judge 0 evaluations\n"
		"    Completion rate -, quality average 8\n"
		"\n"
		"Summary: (none)\n");
}

static void test_render_wrapping(void **state)
{
	/* 30 words of 4 letters: "Summary: " is 9 columns, each word 5 with
	 * its space; 18 words end at column 9 + 18 * 5 - 1 = 98, the 19th
	 * would pass 100.  Continuations start at column 4. */
	char doc[2048], words[200] = "", line1[200] = "", line2[200] = "";

	(void)state;
	for (int i = 0; i < 30; i++) {
		strcat(words, i ? " word" : "word");
		if (i < 18)
			strcat(line1, i ? " word" : "word");
		else
			strcat(line2, i > 18 ? " word" : "word");
	}
	snprintf(doc, sizeof(doc), "{\"id\": \"m\", \"timestamp\": 1, "
		 "\"architecture\": \"request-phase-task\", \"request\": "
		 "{\"core_goal\": \"一二\\n三\\t四\\u001b[31m\"}, \"phases\": [], "
		 "\"summary\": \"%s\"}", words);
	{
		char expected[2048];

		snprintf(expected, sizeof(expected),
			 "Context m (request-phase-task)\n"
			 "Goal: 一二\n"
			 "    三 四 [31m\n"
			 "Requirements: (none)\n"
			 "Constraints: (none)\n"
			 "Phases: 0 of at most 3\n"
			 "\n"
			 "Summary: %s\n"
			 "    %s\n", line1, line2);
		render_is(doc, expected);
	}
}

/* A summary of one word that fills `cols` columns after "Summary: " */
static void summary_of(int cols, char *doc, size_t size, char *word)
{
	memset(word, 'w', (size_t)cols);
	word[cols] = '\0';
	snprintf(doc, size, "{\"id\": \"m\", \"timestamp\": 1, "
		 "\"architecture\": \"request-phase-task\", \"request\": {}, "
		 "\"phases\": [], \"summary\": \"%s\"}", word);
}

#define RENDER_HEAD "Context m (request-phase-task)\nGoal: (none)\n" \
	"Requirements: (none)\nConstraints: (none)\nPhases: 0 of at most 3\n\n"

/* A line of exactly 100 columns stays one line ... */
static void test_render_line_at_100_columns(void **state)
{
	char doc[512], word[128], want[512];

	(void)state;
	summary_of(100 - 9, doc, sizeof(doc), word);
	snprintf(want, sizeof(want), RENDER_HEAD "Summary: %s\n", word);
	render_is(doc, want);
}

/* ... one of 101 wraps (the word to a continuation line). */
static void test_render_line_past_100_columns(void **state)
{
	char doc[512], word[128], want[512];

	(void)state;
	summary_of(100 - 9 + 1, doc, sizeof(doc), word);
	snprintf(want, sizeof(want), RENDER_HEAD "Summary:\n    %s\n", word);
	render_is(doc, want);
}

static void test_render_wide_wrapping(void **state)
{
	/* 50 CJK characters, 2 columns each: "Summary: " (9) + 45 of them
	 * is 99 columns; the 46th would make 101. */
	char doc[1024], chars[200] = "", line1[200] = "", line2[200] = "";

	(void)state;
	for (int i = 0; i < 50; i++) {
		strcat(chars, "字");
		strcat(i < 45 ? line1 : line2, "字");
	}
	snprintf(doc, sizeof(doc), "{\"id\": \"m\", \"timestamp\": 1, "
		 "\"architecture\": \"request-phase-task\", \"request\": {}, "
		 "\"phases\": [], \"summary\": \"%s\"}", chars);
	{
		char expected[1024];

		snprintf(expected, sizeof(expected),
			 "Context m (request-phase-task)\n"
			 "Goal: (none)\n"
			 "Requirements: (none)\n"
			 "Constraints: (none)\n"
			 "Phases: 0 of at most 3\n"
			 "\n"
			 "Summary: %s\n"
			 "    %s\n", line1, line2);
		render_is(doc, expected);
	}
}

/* A word longer than a line (a URL) is cut where the line ends; an
 * emoji is two columns, like a CJK character. */
static void test_render_long_word_and_emoji(void **state)
{
	char doc[1024], url[256] = "", emoji[256] = "", expected[2048];

	(void)state;
	for (int i = 0; i < 150; i++)
		strcat(url, i % 10 ? "x" : "/");
	for (int i = 0; i < 50; i++)
		strcat(emoji, "\xf0\x9f\x9a\x80");	/* U+1F680 */
	snprintf(doc, sizeof(doc), "{\"id\": \"m\", \"timestamp\": 1, "
		 "\"architecture\": \"request-phase-task\", \"request\": "
		 "{\"core_goal\": \"see %s\"}, \"phases\": [], \"summary\":"
		 " \"%s\"}", url, emoji);
	/* "Goal: see " (10) then the URL: it does not fit on that line, so
	 * it starts the next one and is cut every 96 columns; "Summary: "
	 * (9) + 45 rockets is 99 columns, the 46th would make 101. */
	snprintf(expected, sizeof(expected),
		 "Context m (request-phase-task)\n"
		 "Goal: see\n"
		 "    %.96s\n"
		 "    %s\n"
		 "Requirements: (none)\n"
		 "Constraints: (none)\n"
		 "Phases: 0 of at most 3\n"
		 "\n"
		 "Summary: %.180s\n"
		 "    %s\n", url, url + 96, emoji, emoji + 180);
	render_is(doc, expected);
}

static void test_render_refuses_non_context(void **state)
{
	struct sbuf sb = SBUF_INIT;
	json_t *v = json_array();

	(void)state;
	assert_int_equal(context_render_text(v, &sb), -EINVAL);
	assert_int_equal(sb.len, 0);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_example),
		cmocka_unit_test(test_reversed_key_order_kept),
		cmocka_unit_test(test_pending_parts),
		cmocka_unit_test(test_phase_limit),
		cmocka_unit_test(test_task_limit),
		cmocka_unit_test(test_forbidden_tools),
		cmocka_unit_test(test_unavailable_tools),
		cmocka_unit_test(test_duplicate_ids),
		cmocka_unit_test(test_dependencies),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_legacy_goal_is_100_code_points),
		cmocka_unit_test(test_legacy_kept),
		cmocka_unit_test(test_legacy_structured_context),
		cmocka_unit_test(test_legacy_refused),
		cmocka_unit_test(test_render_seed),
		cmocka_unit_test(test_render_sparse),
		cmocka_unit_test(test_render_wrapping),
		cmocka_unit_test(test_render_line_at_100_columns),
		cmocka_unit_test(test_render_line_past_100_columns),
		cmocka_unit_test(test_render_wide_wrapping),
		cmocka_unit_test(test_render_refuses_non_context),
		cmocka_unit_test(test_render_long_word_and_emoji),
		cmocka_unit_test(test_long_names_cut_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
