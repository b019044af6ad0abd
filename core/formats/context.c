/* context: context.json parsed and checked, a legacy assistant message
 * converted, and context.txt rendered; see context.h. */
#include "formats/context.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/fjson.h"
#include "lib/utf8.h"

#define ARCHITECTURE "request-phase-task"
#define TOOLS_TEXT "file_operations, search_code or run_terminal"
#define LINE_MAX_COLS 100

/* Longest JSON path a message names: indices and fixed field names only. */
#define PATH_MAX_LEN 192

enum ftype {
	T_ID,		/* integer or non-empty string */
	T_NAME,		/* non-empty string */
	T_TEXT,		/* string */
	T_STRINGS,	/* array of strings */
	T_NUMBER,
	T_INT,
	T_BOOL,
	T_OBJECT,
	T_ARRAY,
	T_ANY,
};

struct field {
	const char *name;
	enum ftype type;
	bool required;
};

struct shape {
	const char *what;	/* "a phase" */
	const char *has;	/* "id, name, goal, rounds, status, summary" */
	const struct field *fields;	/* ends with a NULL name */
};

static const struct field top_fields[] = {
	{ "id", T_ID, true }, { "timestamp", T_NUMBER, true },
	{ "architecture", T_NAME, true }, { "request", T_OBJECT, true },
	{ "phases", T_ARRAY, true }, { "summary", T_TEXT, false },
	{ NULL, T_ANY, false }
};
static const struct field request_fields[] = {
	{ "original_input", T_TEXT, false }, { "core_goal", T_TEXT, false },
	{ "requirements", T_STRINGS, false },
	{ "constraints", T_STRINGS, false }, { NULL, T_ANY, false }
};
static const struct field phase_fields[] = {
	{ "id", T_ID, true }, { "name", T_NAME, true },
	{ "goal", T_TEXT, false }, { "rounds", T_ARRAY, true },
	{ "status", T_TEXT, false }, { "summary", T_TEXT, false },
	{ NULL, T_ANY, false }
};
static const struct field round_fields[] = {
	{ "round_id", T_ID, true }, { "plan", T_OBJECT, true },
	{ "executions", T_ARRAY, false }, { "judge", T_OBJECT, false },
	{ NULL, T_ANY, false }
};
static const struct field plan_fields[] = {
	{ "tasks", T_ARRAY, true }, { "reasoning", T_TEXT, false },
	{ NULL, T_ANY, false }
};
static const struct field task_fields[] = {
	{ "id", T_ID, true }, { "title", T_NAME, true },
	{ "description", T_TEXT, false }, { "tool", T_NAME, true },
	{ "arguments", T_ANY, false }, { "priority", T_INT, false },
	{ "dependencies", T_ARRAY, false }, { NULL, T_ANY, false }
};
static const struct field execution_fields[] = {
	{ "task_id", T_ID, true }, { "tool", T_NAME, true },
	{ "arguments", T_ANY, false }, { "result", T_ANY, false },
	{ "timestamp", T_NUMBER, false }, { NULL, T_ANY, false }
};
static const struct field judge_fields[] = {
	{ "phase_completed", T_BOOL, false },
	{ "task_evaluation", T_ARRAY, false },
	{ "decision", T_OBJECT, false }, { "phase_metrics", T_OBJECT, false },
	{ "summary", T_TEXT, false }, { NULL, T_ANY, false }
};
static const struct field evaluation_fields[] = {
	{ "task_id", T_ID, true }, { "status", T_TEXT, false },
	{ "quality_score", T_NUMBER, false },
	{ "output_valid", T_BOOL, false }, { "notes", T_TEXT, false },
	{ NULL, T_ANY, false }
};
static const struct field decision_fields[] = {
	{ "action", T_NAME, true }, { "reason", T_TEXT, false },
	{ NULL, T_ANY, false }
};
static const struct field metrics_fields[] = {
	{ "completion_rate", T_NUMBER, false },
	{ "quality_average", T_NUMBER, false }, { NULL, T_ANY, false }
};

static const struct shape top_shape = { "a context",
	"id, timestamp, architecture, request, phases, summary", top_fields };
static const struct shape request_shape = { "the request",
	"original_input, core_goal, requirements, constraints",
	request_fields };
static const struct shape phase_shape = { "a phase",
	"id, name, goal, rounds, status, summary", phase_fields };
static const struct shape round_shape = { "a round",
	"round_id, plan, executions, judge", round_fields };
static const struct shape plan_shape = { "a plan", "tasks, reasoning",
	plan_fields };
static const struct shape task_shape = { "a task",
	"id, title, description, tool, arguments, priority, dependencies",
	task_fields };
static const struct shape execution_shape = { "an execution",
	"task_id, tool, arguments, result, timestamp", execution_fields };
static const struct shape judge_shape = { "a judge",
	"phase_completed, task_evaluation, decision, phase_metrics, summary",
	judge_fields };
static const struct shape evaluation_shape = { "a task evaluation",
	"task_id, status, quality_score, output_valid, notes",
	evaluation_fields };
static const struct shape decision_shape = { "a decision",
	"action, reason", decision_fields };
static const struct shape metrics_shape = { "phase_metrics",
	"completion_rate, quality_average", metrics_fields };

static const char *const forbidden_tools[] = {
	"judge", "judge_tasks", "think", NULL
};
static const char *const allowed_tools[] = {
	"file_operations", "search_code", "run_terminal", NULL
};

/* Refuse with "<path>: <message>", recording the path. */
static int refuse(struct ferr *err, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct ferr *err, const char *path, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = ferr_vrefuse(err, -EINVAL, path, fmt, ap);
	va_end(ap);
	return ret;
}

/* A path into a PATH_MAX_LEN buffer (a path that long is cut short). */
static void pathf(char *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, PATH_MAX_LEN, fmt, ap);
	va_end(ap);
}

/* "<base>.<key>", or "<key>" at the top. */
static void join(char *buf, const char *base, const char *key)
{
	pathf(buf, "%s%s%s", base, *base ? "." : "", key);
}

static void join_index(char *buf, const char *base, const char *key,
		       size_t i)
{
	pathf(buf, "%s%s%s[%zu]", base, *base ? "." : "", key, i);
}

static bool has_nul(const json_t *s)
{
	return strlen(json_string_value(s)) != json_string_length(s);
}

/* The bytes of the first `chars` characters of `s` (valid UTF-8, as
 * every JSON string is): for "%.*s", which counts bytes and would cut a
 * character in two. */
static int clip(const char *s, size_t chars)
{
	return (int)utf8_offset(s, strlen(s), chars);
}

/* An id as a message shows it: 3 or "t3" (truncated). */
static const char *id_text(const json_t *id, char buf[256])
{
	const char *s = json_string_value(id);

	if (json_is_integer(id))
		snprintf(buf, 256, "%lld", (long long)json_integer_value(id));
	else
		snprintf(buf, 256, "\"%.*s%s\"", clip(s, 60), s,
			 s[clip(s, 60)] ? "..." : "");
	return buf;
}

static const char *type_words(enum ftype t)
{
	switch (t) {
	case T_ID: return "an integer or a non-empty string";
	case T_NAME: return "a non-empty string";
	case T_TEXT: return "a string";
	case T_STRINGS: return "an array of strings";
	case T_NUMBER: return "a number";
	case T_INT: return "an integer";
	case T_BOOL: return "true or false";
	case T_OBJECT: return "an object";
	case T_ARRAY: return "an array";
	default: return "a JSON value";
	}
}

static bool type_ok(const json_t *v, enum ftype t)
{
	switch (t) {
	case T_ID:
		return json_is_integer(v) ||
		       (json_is_string(v) && json_string_length(v));
	case T_NAME: return json_is_string(v) && json_string_length(v);
	case T_TEXT: return json_is_string(v);
	case T_STRINGS: {
		size_t i;
		const json_t *s;

		if (!json_is_array(v))
			return false;
		json_array_foreach(v, i, s)
			if (!json_is_string(s))
				return false;
		return true;
	}
	case T_NUMBER: return json_is_number(v);
	case T_INT: return json_is_integer(v);
	case T_BOOL: return json_is_boolean(v);
	case T_OBJECT: return json_is_object(v);
	case T_ARRAY: return json_is_array(v);
	default: return true;
	}
}

/*
 * `v` at `path` has the shape: an object, known fields only, required
 * ones present and not null, every present non-null one of its type.
 */
static int check_shape(const json_t *v, const char *path,
		       const struct shape *sh, struct ferr *err)
{
	const struct field *f;
	const char *key;
	json_t *m;
	char sub[PATH_MAX_LEN];

	if (!json_is_object(v))
		return refuse(err, path, "%s must be a JSON object", sh->what);
	json_object_foreach((json_t *)v, key, m) {
		for (f = sh->fields; f->name && strcmp(f->name, key); f++)
			;
		if (!f->name)
			return refuse(err, path,
				      "unknown field \"%.*s\" (%s has %s)",
				      clip(key, 80), key, sh->what, sh->has);
	}
	for (f = sh->fields; f->name; f++) {
		m = json_object_get(v, f->name);
		join(sub, path, f->name);
		if (!m || json_is_null(m)) {
			if (f->required)
				return refuse(err, path,
					      "\"%s\" is missing (%s has %s)",
					      f->name, sh->what, sh->has);
			continue;
		}
		if (!type_ok(m, f->type))
			return refuse(err, sub, "must be %s",
				      type_words(f->type));
		if ((f->type == T_ID || f->type == T_NAME) &&
		    json_is_string(m) && has_nul(m))
			return refuse(err, sub,
				      "must not contain a NUL character");
	}
	return 0;
}

/* A present, non-null member (NULL otherwise). */
static const json_t *member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return v && !json_is_null(v) ? v : NULL;
}

/* ---- ids ---------------------------------------------------------------- */

/*
 * Seen ids as a jansson object (a hash table): key "i:<n>" or "s:<text>"
 * -> the path where the id was first seen.
 */
static int id_key(const json_t *id, struct sbuf *key)
{
	sbuf_reset(key);
	if (json_is_integer(id))
		return sbuf_addf(key, "i:%lld",
				 (long long)json_integer_value(id));
	if (sbuf_addstr(key, "s:") < 0)
		return -ENOMEM;
	return sbuf_add(key, json_string_value(id), json_string_length(id));
}

/* 1 when already seen (*first = where), 0 when added, or -ENOMEM. */
static int id_seen(json_t *seen, const json_t *id, const char *path,
		   struct sbuf *key, const char **first)
{
	json_t *had;

	if (id_key(id, key) < 0)
		return -ENOMEM;
	had = json_object_get(seen, key->buf);
	if (had) {
		*first = json_string_value(had);
		return 1;
	}
	if (json_object_set_new(seen, key->buf, json_string(path)))
		return -ENOMEM;
	return 0;
}

/* ---- checking ----------------------------------------------------------- */

static int check_tool(const json_t *tool, const char *path, struct ferr *err)
{
	const char *s = json_string_value(tool);

	for (int i = 0; forbidden_tools[i]; i++)
		if (!strcasecmp(s, forbidden_tools[i]))
			return refuse(err, path,
				      "\"%s\" is not allowed (a task's tool must be "
				      TOOLS_TEXT ")", s);
	for (int i = 0; allowed_tools[i]; i++)
		if (!strcmp(s, allowed_tools[i]))
			return 0;
	return refuse(err, path,
		      "\"%.*s\" is not an available tool (a task's tool must be "
		      TOOLS_TEXT ")", clip(s, 80), s);
}

static int check_judge(const json_t *judge, const char *path,
		       struct ferr *err)
{
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN];
	const json_t *list, *v;
	size_t i;
	int ret;

	ret = check_shape(judge, path, &judge_shape, err);
	if (ret < 0)
		return ret;
	list = member(judge, "task_evaluation");
	join(sub, path, "task_evaluation");
	json_array_foreach(list, i, v) {
		pathf(item, "%s[%zu]", sub, i);
		ret = check_shape(v, item, &evaluation_shape, err);
		if (ret < 0)
			return ret;
	}
	if ((v = member(judge, "decision"))) {
		join(sub, path, "decision");
		ret = check_shape(v, sub, &decision_shape, err);
		if (ret < 0)
			return ret;
	}
	if ((v = member(judge, "phase_metrics"))) {
		join(sub, path, "phase_metrics");
		ret = check_shape(v, sub, &metrics_shape, err);
	}
	return ret;
}

/*
 * One round's shape, its round id against `rounds` and its tasks against
 * `tasks` (both per phase), counting the phase's tasks in *count.
 */
static int check_round(const json_t *round, const char *path, json_t *rounds,
		       json_t *tasks, size_t *count, struct sbuf *key,
		       struct ferr *err)
{
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN], idp[PATH_MAX_LEN];
	char idbuf[256];
	const json_t *plan, *v, *dep;
	const char *first;
	size_t i, j;
	int ret;

	ret = check_shape(round, path, &round_shape, err);
	if (ret < 0)
		return ret;
	join(idp, path, "round_id");
	ret = id_seen(rounds, member(round, "round_id"), idp, key, &first);
	if (ret < 0)
		return ret;
	if (ret)
		return refuse(err, idp, "%s repeats %s (round ids are unique "
			      "within a phase)",
			      id_text(member(round, "round_id"), idbuf), first);
	plan = member(round, "plan");
	join(sub, path, "plan");
	ret = check_shape(plan, sub, &plan_shape, err);
	if (ret < 0)
		return ret;
	join(sub, path, "plan.tasks");
	json_array_foreach(member(plan, "tasks"), i, v) {
		pathf(item, "%s[%zu]", sub, i);
		if (++*count > CONTEXT_MAX_TASKS)
			return refuse(err, item,
				      "the phase's task number %zu: a phase has at "
				      "most %d tasks (counted over the plans of "
				      "all its rounds)", *count,
				      CONTEXT_MAX_TASKS);
		ret = check_shape(v, item, &task_shape, err);
		if (ret < 0)
			return ret;
		join(idp, item, "tool");
		ret = check_tool(member(v, "tool"), idp, err);
		if (ret < 0)
			return ret;
		join(idp, item, "id");
		ret = id_seen(tasks, member(v, "id"), idp, key, &first);
		if (ret < 0)
			return ret;
		if (ret)
			return refuse(err, idp, "%s repeats %s (task ids are "
				      "unique within a phase)",
				      id_text(member(v, "id"), idbuf), first);
		json_array_foreach(member(v, "dependencies"), j, dep) {
			pathf(idp, "%s.dependencies[%zu]",
				 item, j);
			if (!type_ok(dep, T_ID))
				return refuse(err, idp, "must be %s (a task id)",
					      type_words(T_ID));
			if (json_is_string(dep) && has_nul(dep))
				return refuse(err, idp,
					      "must not contain a NUL character");
		}
	}
	join(sub, path, "executions");
	json_array_foreach(member(round, "executions"), i, v) {
		pathf(item, "%s[%zu]", sub, i);
		ret = check_shape(v, item, &execution_shape, err);
		if (ret < 0)
			return ret;
	}
	if ((v = member(round, "judge"))) {
		join(sub, path, "judge");
		ret = check_judge(v, sub, err);
	}
	return ret;
}

/* Every dependency of the phase's tasks names another task of it. */
static int check_dependencies(const json_t *phase, const char *path,
			      json_t *tasks, struct sbuf *key,
			      struct ferr *err)
{
	char idp[PATH_MAX_LEN], idbuf[256], pidbuf[256];
	const json_t *round, *task, *dep;
	size_t r, t, d;

	json_array_foreach(member(phase, "rounds"), r, round)
	json_array_foreach(member(member(round, "plan"), "tasks"), t, task)
	json_array_foreach(member(task, "dependencies"), d, dep) {
		pathf(idp, "%s.rounds[%zu].plan.tasks[%zu].dependencies[%zu]",
			 path, r, t, d);
		if (json_equal((json_t *)dep, member(task, "id")))
			return refuse(err, idp, "task %s depends on itself",
				      id_text(dep, idbuf));
		if (id_key(dep, key) < 0)
			return -ENOMEM;
		if (!json_object_get(tasks, key->buf))
			return refuse(err, idp,
				      "task %s is not a task of phase %s",
				      id_text(dep, idbuf),
				      id_text(member(phase, "id"), pidbuf));
	}
	return 0;
}

static int check_phase(const json_t *phase, const char *path,
		       struct sbuf *key, struct ferr *err)
{
	json_t *rounds = json_object(), *tasks = json_object();
	char item[PATH_MAX_LEN];
	const json_t *round;
	size_t i, count = 0;
	int ret;

	if (!rounds || !tasks) {
		ret = -ENOMEM;
		goto out;
	}
	ret = check_shape(phase, path, &phase_shape, err);
	if (ret < 0)
		goto out;
	json_array_foreach(member(phase, "rounds"), i, round) {
		join_index(item, path, "rounds", i);
		ret = check_round(round, item, rounds, tasks, &count, key, err);
		if (ret < 0)
			goto out;
	}
	ret = check_dependencies(phase, path, tasks, key, err);
out:
	json_decref(rounds);
	json_decref(tasks);
	return ret;
}

static int check_structured(const json_t *doc, struct ferr *err)
{
	struct sbuf key = SBUF_INIT;
	json_t *phase_ids = json_object();
	const json_t *v, *phases, *phase;
	char item[PATH_MAX_LEN], idp[PATH_MAX_LEN], idbuf[256];
	const char *first;
	size_t i;
	int ret;

	if (!phase_ids) {
		ret = -ENOMEM;
		goto out;
	}
	ret = check_shape(doc, "", &top_shape, err);
	if (ret < 0)
		goto out;
	v = member(doc, "architecture");
	if (strcmp(json_string_value(v), ARCHITECTURE) || has_nul(v)) {
		ret = refuse(err, "architecture", "\"%.*s\" must be \""
			     ARCHITECTURE "\"", clip(json_string_value(v), 80),
			     json_string_value(v));
		goto out;
	}
	ret = check_shape(member(doc, "request"), "request", &request_shape,
			  err);
	if (ret < 0)
		goto out;
	phases = member(doc, "phases");
	if (json_array_size(phases) > CONTEXT_MAX_PHASES) {
		ret = refuse(err, "phases", "%zu phases: at most %d are allowed",
			     json_array_size(phases), CONTEXT_MAX_PHASES);
		goto out;
	}
	json_array_foreach(phases, i, phase) {
		join_index(item, "", "phases", i);
		ret = check_phase(phase, item, &key, err);
		if (ret < 0)
			goto out;
		join(idp, item, "id");
		ret = id_seen(phase_ids, member(phase, "id"), idp, &key,
			      &first);
		if (ret < 0)
			goto out;
		if (ret) {
			ret = refuse(err, idp, "%s repeats %s (phase ids are "
				     "unique)", id_text(member(phase, "id"),
							idbuf), first);
			goto out;
		}
	}
out:
	json_decref(phase_ids);
	sbuf_release(&key);
	return ret;
}

/* ---- legacy messages ---------------------------------------------------- */

/*
 * MyAgent's StructuredMessage.from_legacy_message (context.h): what it
 * converts, the rest kept as written.
 */

/* Python's bool() of a JSON value: what `if not tool_calls` tests. */
static bool truthy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return json_object_size(v) > 0;
	case JSON_ARRAY:
		return json_array_size(v) > 0;
	case JSON_STRING:
		return json_string_length(v) > 0;
	case JSON_INTEGER:
		return json_integer_value(v) != 0;
	case JSON_REAL:
		return json_real_value(v) != 0;
	case JSON_TRUE:
		return true;
	default:
		return false;
	}
}

/* The first `n` code points of UTF-8 `s` (Python's s[:n]). */
static json_t *first_code_points(const char *s, size_t len, size_t n)
{
	size_t i = 0;

	while (i < len && n > 0) {
		uint32_t cp;
		size_t k = utf8_decode((const unsigned char *)s + i, len - i,
				       &cp);

		i += k ? k : 1;
		n--;
	}
	return json_stringn(s, i);
}

/* function.arguments of an OpenAI-style call (an extension): the JSON
 * text parsed; "" or absent: {}; a text that does not parse as is. */
static json_t *openai_arguments(const json_t *args)
{
	json_t *parsed = NULL;

	if (!args || json_is_null(args))
		return json_object();
	if (!json_is_string(args))
		return json_deep_copy(args);
	if (!json_string_length(args))
		return json_object();
	if (fjson_parse(&parsed, json_string_value(args),
			json_string_length(args), NULL) == 0)
		return parsed;
	return json_deep_copy(args);
}

/* tc.get(key, fallback), as a new reference. */
static json_t *get_or(const json_t *obj, const char *key, json_t *fallback)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return fallback;
	json_decref(fallback);
	return json_deep_copy(v);
}

/* One execution of tool call `tc`, the `i`th (1-based). */
static json_t *execution_of(const json_t *tc, size_t i, double now)
{
	const json_t *fn = json_object_get(tc, "function");
	json_t *tool, *args;

	if (!json_object_get(tc, "tool") && json_is_object(fn) &&
	    json_is_string(json_object_get(fn, "name"))) {
		/* OpenAI's {id, type, function: {name, arguments}} */
		tool = json_deep_copy(json_object_get(fn, "name"));
		args = openai_arguments(json_object_get(fn, "arguments"));
	} else {
		tool = get_or(tc, "tool", json_string("unknown"));
		args = get_or(tc, "arguments", json_object());
	}
	return json_pack("{s:I, s:o, s:o, s:o, s:f}", "task_id",
			 (json_int_t)i, "tool", tool, "arguments", args,
			 "result", get_or(tc, "result", json_object()),
			 "timestamp", now);
}

/* StructuredMessage(): what every converted message starts from. */
static json_t *fresh_message(double now)
{
	char id[32];

	snprintf(id, sizeof(id), "msg_%lld", (long long)now);
	return json_pack("{s:s, s:f, s:s, s:{s:s, s:s, s:[], s:[]}, s:[],"
			 " s:s}", "id", id, "timestamp", now,
			 "architecture", ARCHITECTURE, "request",
			 "original_input", "", "core_goal", "",
			 "requirements", "constraints", "phases",
			 "summary", "");
}

/*
 * The message converted, *out NULL when MyAgent keeps it as it is (not
 * an assistant message, or one without tool calls).
 */
static int legacy_convert(const json_t *msg, double now, json_t **out,
			  struct ferr *err)
{
	const json_t *role = json_object_get(msg, "role");
	const json_t *sc = json_object_get(msg, "structured_context");
	const json_t *calls = json_object_get(msg, "tool_calls");
	const json_t *content = json_object_get(msg, "content");
	json_t *doc = NULL, *execs = NULL, *phase, *tc;
	char item[PATH_MAX_LEN];
	size_t i;
	int ret = -ENOMEM;

	*out = NULL;
	if (!json_is_string(role) || strcmp(json_string_value(role), "assistant"))
		return 0;
	if (sc) {
		if (!json_is_object(sc))
			return refuse(err, "structured_context", "must be an"
				      " object (a structured message)");
		doc = fresh_message(now);
		if (!doc || json_object_update(doc, (json_t *)sc) < 0)
			goto out;
		*out = doc;
		return 0;
	}
	if (!calls || !truthy(calls))
		return 0;
	if (!json_is_array(calls))
		return refuse(err, "tool_calls", "must be an array of tool"
			      " calls");
	if (content && !json_is_string(content))
		return refuse(err, "content", "must be a string: it becomes"
			      " the summary of a converted message");
	execs = json_array();
	if (!execs)
		goto out;
	json_array_foreach(calls, i, tc) {
		if (!json_is_object(tc)) {
			join_index(item, "", "tool_calls", i);
			ret = refuse(err, item, "must be an object (a tool"
				     " call)");
			goto out;
		}
		if (json_array_append_new(execs, execution_of(tc, i + 1, now)))
			goto out;
	}
	if (!content)
		content = json_string_nocheck("");
	else
		json_incref((json_t *)content);
	phase = json_pack("{s:i, s:s, s:s, s:[{s:i, s:{s:[], s:s}, s:O, s:{}}],"
			  " s:s, s:O}", "id", 1, "name", "Main Task",
			  "goal", "历史任务", "rounds", "round_id", 1, "plan",
			  "tasks", "reasoning", "", "executions", execs,
			  "judge", "status", "done", "summary", content);
	doc = fresh_message(now);
	if (!phase || !doc ||
	    json_object_set_new(json_object_get(doc, "request"),
				"original_input", json_string("历史消息")) ||
	    json_object_set_new(json_object_get(doc, "request"), "core_goal",
				first_code_points(json_string_value(content),
						  json_string_length(content),
						  100)) ||
	    json_array_append_new(json_object_get(doc, "phases"), phase) ||
	    json_object_set(doc, "summary", (json_t *)content)) {
		json_decref((json_t *)content);
		goto out;
	}
	json_decref((json_t *)content);
	*out = doc;
	doc = NULL;
	ret = 0;
out:
	json_decref(execs);
	json_decref(doc);
	return ret;
}

int context_check(json_t *doc, double now, json_t **out, struct ferr *err)
{
	json_t *conv = NULL;
	int ret;

	*out = NULL;
	if (!json_is_object(doc))
		return refuse(err, "", "a context must be a JSON object (a "
			      "structured message or a legacy message)");
	if (json_object_get(doc, "role")) {
		ret = legacy_convert(doc, now, &conv, err);
		if (ret < 0)
			goto out;
		if (!conv) {
			/* kept as written, as MyAgent keeps it */
			*out = json_incref(doc);
			return 0;
		}
	} else {
		conv = json_incref(doc);
	}
	ret = check_structured(conv, err);
	if (ret < 0)
		goto out;
	*out = conv;
	conv = NULL;
out:
	json_decref(conv);
	return ret;
}

/* ---- context.txt -------------------------------------------------------- */

/* One code point at s; a byte that starts none counts as U+FFFD (never
 * seen: jansson holds valid UTF-8). */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = utf8_decode(s, n, cp);

	if (len)
		return len;
	*cp = 0xfffd;
	return 1;
}

/* East Asian wide and fullwidth code points take two columns. */
static bool is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

static int trim_line(struct sbuf *out, size_t line_start)
{
	size_t n = out->len;

	while (n > line_start && out->buf[n - 1] == ' ')
		n--;
	sbuf_setlen(out, n);
	return sbuf_addch(out, '\n');
}

/*
 * Append `prefix` (ASCII, `indent` spaces then a label) and the text,
 * wrapped within LINE_MAX_COLS: continuation lines start at indent + 4.
 * Each line of the text (split at '\n') starts a new line at the
 * continuation indent.
 */
static int put_text(struct sbuf *out, int indent, const char *prefix,
		    const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t line_start = out->len, i = 0;
	int cont = indent + 4, col;
	/* the most a continuation line holds (always progress) */
	int room = LINE_MAX_COLS - cont > 1 ? LINE_MAX_COLS - cont : 1;

	if (sbuf_addf(out, "%*s%s", indent, "", prefix) < 0)
		return -ENOMEM;
	col = indent + (int)strlen(prefix);
	while (i < n) {
		size_t word_end = i, w_cols = 0, k;
		uint32_t c;

		if (s[i] == '\n') {
			if (trim_line(out, line_start) < 0)
				return -ENOMEM;
			line_start = out->len;
			if (sbuf_addf(out, "%*s", cont, "") < 0)
				return -ENOMEM;
			col = cont;
			i++;
			continue;
		}
		k = utf8_next(s + i, n - i, &c);
		if (c == ' ' || (is_control(c))) {
			if (sbuf_addch(out, ' ') < 0)
				return -ENOMEM;
			col++;
			i += k;
			continue;
		}
		/*
		 * A word: up to a space or control, or one wide character;
		 * a word longer than a whole line (a URL) is cut where the
		 * line ends.
		 */
		if (utf8_width(c) == 2) {
			word_end = i + k;
			w_cols = 2;
		} else {
			while (word_end < n && (int)w_cols < room) {
				size_t m = utf8_next(s + word_end, n - word_end,
						     &c);

				if (c == ' ' || is_control(c) ||
				    utf8_width(c) == 2)
					break;
				word_end += m;
				w_cols++;
			}
		}
		if (col + (int)w_cols > LINE_MAX_COLS && col > cont &&
		    out->len > line_start) {
			if (trim_line(out, line_start) < 0)
				return -ENOMEM;
			line_start = out->len;
			if (sbuf_addf(out, "%*s", cont, "") < 0)
				return -ENOMEM;
			col = cont;
		}
		if (sbuf_add(out, s + i, word_end - i) < 0)
			return -ENOMEM;
		col += (int)w_cols;
		i = word_end;
	}
	return trim_line(out, line_start);
}

static int put_str_text(struct sbuf *out, int indent, const char *prefix,
			const json_t *s)
{
	return put_text(out, indent, prefix, json_string_value(s),
			json_string_length(s));
}

static bool nonempty(const json_t *s)
{
	return s && json_is_string(s) && json_string_length(s);
}

/* An id or number as the text shows it: strings bare, numbers by fjson. */
static int add_value(struct sbuf *out, const json_t *v)
{
	if (!v)
		return sbuf_addch(out, '-');
	if (json_is_string(v))
		return sbuf_add(out, json_string_value(v), json_string_length(v));
	return fjson_dump(out, v);
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static int render_list(struct sbuf *out, const char *label, const json_t *l)
{
	const json_t *s;
	size_t i;

	if (!json_array_size(l))
		return sbuf_addf(out, "%s: (none)\n", label);
	if (sbuf_addf(out, "%s:\n", label) < 0)
		return -ENOMEM;
	json_array_foreach(l, i, s)
		if (put_str_text(out, 2, "- ", s) < 0)
			return -ENOMEM;
	return 0;
}

static int render_task(struct sbuf *out, const json_t *task,
		       struct sbuf *line)
{
	const json_t *deps = member(task, "dependencies"), *d;
	size_t i;

	sbuf_reset(line);
	if (sbuf_addstr(line, "Task ") < 0 ||
	    add_value(line, member(task, "id")) < 0 ||
	    sbuf_addstr(line, ": ") < 0 ||
	    add_value(line, member(task, "title")) < 0 ||
	    sbuf_addstr(line, " [") < 0 ||
	    add_value(line, member(task, "tool")) < 0 ||
	    sbuf_addch(line, ']') < 0)
		return -ENOMEM;
	json_array_foreach(deps, i, d)
		if (sbuf_addstr(line, i ? ", " : " (after ") < 0 ||
		    add_value(line, d) < 0)
			return -ENOMEM;
	if (json_array_size(deps) && sbuf_addch(line, ')') < 0)
		return -ENOMEM;
	return put_text(out, 4, "- ", line->buf, line->len);
}

static int render_round(struct sbuf *out, const json_t *round,
			struct sbuf *line)
{
	const json_t *plan = member(round, "plan");
	const json_t *tasks = member(plan, "tasks");
	const json_t *judge = member(round, "judge");
	const json_t *dec = member(judge, "decision");
	const json_t *met = member(judge, "phase_metrics");
	size_t nt = json_array_size(tasks);
	size_t ne = json_array_size(member(round, "executions"));
	size_t nj = json_array_size(member(judge, "task_evaluation"));
	const json_t *t;
	size_t i;

	sbuf_reset(line);
	if (sbuf_addstr(line, "Round ") < 0 ||
	    add_value(line, member(round, "round_id")) < 0 ||
	    sbuf_addf(line, ": plan %zu %s, execute %zu %s, ", nt,
		      plural(nt, "task", "tasks"), ne,
		      plural(ne, "call", "calls")) < 0 ||
	    (judge ? sbuf_addf(line, "judge %zu %s", nj,
			       plural(nj, "evaluation", "evaluations"))
		   : sbuf_addstr(line, "judge pending")) < 0 ||
	    put_text(out, 2, "", line->buf, line->len) < 0)
		return -ENOMEM;
	if (nonempty(member(plan, "reasoning")) &&
	    put_str_text(out, 4, "Reasoning: ", member(plan, "reasoning")) < 0)
		return -ENOMEM;
	json_array_foreach(tasks, i, t)
		if (render_task(out, t, line) < 0)
			return -ENOMEM;
	if (dec) {
		sbuf_reset(line);
		if (add_value(line, member(dec, "action")) < 0 ||
		    (nonempty(member(dec, "reason")) &&
		     (sbuf_addstr(line, " — ") < 0 ||
		      add_value(line, member(dec, "reason")) < 0)) ||
		    put_text(out, 4, "Decision: ", line->buf, line->len) < 0)
			return -ENOMEM;
	}
	if (met) {
		if (sbuf_addstr(out, "    Completion rate ") < 0 ||
		    add_value(out, member(met, "completion_rate")) < 0 ||
		    sbuf_addstr(out, ", quality average ") < 0 ||
		    add_value(out, member(met, "quality_average")) < 0 ||
		    sbuf_addch(out, '\n') < 0)
			return -ENOMEM;
	}
	if (nonempty(member(judge, "summary")) &&
	    put_str_text(out, 4, "Judge: ", member(judge, "summary")) < 0)
		return -ENOMEM;
	return 0;
}

static int render_phase(struct sbuf *out, const json_t *phase,
			struct sbuf *line)
{
	const json_t *status = member(phase, "status"), *round;
	size_t i;

	sbuf_reset(line);
	if (sbuf_addstr(line, "Phase ") < 0 ||
	    add_value(line, member(phase, "id")) < 0 ||
	    sbuf_addstr(line, ": ") < 0 ||
	    add_value(line, member(phase, "name")) < 0 ||
	    sbuf_addstr(line, " (") < 0 ||
	    (nonempty(status) ? add_value(line, status)
			      : sbuf_addstr(line, "no status")) < 0 ||
	    sbuf_addch(line, ')') < 0 ||
	    sbuf_addch(out, '\n') < 0 ||
	    put_text(out, 0, "", line->buf, line->len) < 0)
		return -ENOMEM;
	if (nonempty(member(phase, "goal")) &&
	    put_str_text(out, 2, "Goal: ", member(phase, "goal")) < 0)
		return -ENOMEM;
	json_array_foreach(member(phase, "rounds"), i, round)
		if (render_round(out, round, line) < 0)
			return -ENOMEM;
	if (nonempty(member(phase, "summary")) &&
	    put_str_text(out, 2, "Summary: ", member(phase, "summary")) < 0)
		return -ENOMEM;
	return 0;
}

/* A legacy message kept as written (context_check()). */
static int render_kept(const json_t *doc, struct sbuf *out)
{
	const json_t *role = member(doc, "role"), *content;
	struct sbuf line = SBUF_INIT;
	int ret = -ENOMEM;

	content = member(doc, "content");
	if (sbuf_addstr(&line, "Legacy message, role ") < 0 ||
	    add_value(&line, role) < 0 ||
	    sbuf_addstr(&line, ": kept as written (not an assistant message"
			" with tool calls)") < 0 ||
	    put_text(out, 0, "", line.buf, line.len) < 0)
		goto out;
	if (json_is_string(content) && json_string_length(content)
		    ? put_str_text(out, 0, "Content: ", content) < 0
		    : sbuf_addstr(out, "Content: (none)\n") < 0)
		goto out;
	ret = 0;
out:
	sbuf_release(&line);
	return ret;
}

int context_render_text(const json_t *doc, struct sbuf *out)
{
	struct sbuf line = SBUF_INIT;
	const json_t *req = member(doc, "request"), *phases, *phase, *v;
	size_t start = out->len, i;
	int ret = -ENOMEM;

	if (json_is_object(doc) && json_object_get(doc, "role")) {
		ret = render_kept(doc, out);
		if (ret < 0)
			sbuf_setlen(out, start);
		return ret;
	}
	phases = member(doc, "phases");
	if (!json_is_object(doc) || !json_is_object(req) ||
	    !json_is_array(phases)) {
		ret = -EINVAL;
		goto out;
	}
	if (sbuf_addstr(&line, "Context ") < 0 ||
	    add_value(&line, member(doc, "id")) < 0 ||
	    sbuf_addstr(&line, " (") < 0 ||
	    add_value(&line, member(doc, "architecture")) < 0 ||
	    sbuf_addch(&line, ')') < 0 ||
	    put_text(out, 0, "", line.buf, line.len) < 0)
		goto out;
	v = member(req, "core_goal");
	if (nonempty(v) ? put_str_text(out, 0, "Goal: ", v) < 0
			: sbuf_addstr(out, "Goal: (none)\n") < 0)
		goto out;
	v = member(req, "original_input");
	if (nonempty(v) && put_str_text(out, 0, "Input: ", v) < 0)
		goto out;
	if (render_list(out, "Requirements", member(req, "requirements")) < 0 ||
	    render_list(out, "Constraints", member(req, "constraints")) < 0 ||
	    sbuf_addf(out, "Phases: %zu of at most %d\n",
		      json_array_size(phases), CONTEXT_MAX_PHASES) < 0)
		goto out;
	json_array_foreach(phases, i, phase)
		if (render_phase(out, phase, &line) < 0)
			goto out;
	v = member(doc, "summary");
	if (sbuf_addch(out, '\n') < 0 ||
	    (nonempty(v) ? put_str_text(out, 0, "Summary: ", v) < 0
			 : sbuf_addstr(out, "Summary: (none)\n") < 0))
		goto out;
	ret = 0;
out:
	if (ret < 0)
		sbuf_setlen(out, start);
	sbuf_release(&line);
	return ret;
}
