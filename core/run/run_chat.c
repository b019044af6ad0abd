/*
 * run_chat: the runs of any skill (prompt, write_artifact, response.md,
 * result.json) and of datcom (set_parameters); see run.h.
 */
#include "run/run_private.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/binding.h"
#include "lib/fjson.h"
#include "lib/schema.h"

/* Whether the manifest declares `name` (a pattern may hold wildcards). */
static bool declared(const json_t *manifest, const char *name)
{
	size_t i;
	json_t *a;

	if (!*name || *name == '.' || strchr(name, '/') || strlen(name) > 200)
		return false;
	json_array_foreach(manifest, i, a) {
		const char *p = json_string_value(json_object_get(a, "pattern"));

		if (p && fnmatch(p, name, FNM_PERIOD) == 0)
			return true;
	}
	return false;
}

static json_t *write_artifact_tool(const json_t *manifest)
{
	json_t *names = json_array();
	size_t i;
	json_t *a;

	json_array_foreach(manifest, i, a)
		json_array_append(names, json_object_get(a, "pattern"));
	return run_function_tool("write_artifact",
		"Write one of the skill's artifacts (a file of output/)",
		json_pack("{s:s, s:{s:{s:s, s:s, s:o}, s:{s:s}}, s:[s,s]}",
			  "type", "object", "properties", "name", "type",
			  "string", "description",
			  "The artifact's file name; one of the declared names",
			  "examples", names, "content", "type", "string",
			  "required", "name", "content"));
}

/* ---- any skill ----------------------------------------------------------- */

/* One write_artifact call: the answer for the engine in `answer`. */
static void write_artifact(struct run *r, const json_t *call, json_t *written,
			   struct sbuf *answer)
{
	const json_t *args = json_object_get(call, "arguments");
	const char *name = json_string_value(json_object_get(args, "name"));
	const json_t *content = json_object_get(args, "content");
	int ret;

	if (!json_is_object(args) || !name || !json_is_string(content)) {
		sbuf_addstr(answer, "refused: write_artifact takes"
			    " {\"name\": string, \"content\": string}");
		return;
	}
	/* the run's own files, and those flowfs shows in their place */
	if (run_reserved_output(r, name)) {
		sbuf_addf(answer, "refused: output/%s is a name flowfs keeps"
			  " for its own file; write the artifact under"
			  " another name", name);
		return;
	}
	if (!declared(r->manifest, name)) {
		sbuf_addf(answer, "refused: %s is not an artifact of this"
			  " skill", name);
		return;
	}
	ret = run_put_output(r, name, json_string_value(content),
			 json_string_length(content));
	if (ret < 0) {
		sbuf_addf(answer, "failed: %s", strerror(-ret));
		return;
	}
	sbuf_addf(answer, "written: output/%s (%zu bytes)", name,
		  json_string_length(content));
	json_array_append_new(written, json_string(name));
}

/* output/result.json for the last reply (see run.h). */
static int write_result(struct run *r, const char *reply, json_t *written)
{
	json_t *data = NULL, *warnings = json_array(), *result;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	struct sbuf text = SBUF_INIT;
	size_t i;
	json_t *a;
	int ret;

	ret = engine_extract_json(reply, &data, &err);
	if (!ret && schema_validate(r->output_schema, NULL, data, "", 0,
				    &err) < 0)
		json_array_append_new(warnings, json_sprintf("%s%s%s",
			err.path, err.path[0] ? ": " : "", err.message));
	json_array_foreach(r->manifest, i, a) {
		const char *p = json_string_value(json_object_get(a, "pattern"));
		bool found = false;
		size_t j;
		json_t *w;

		json_array_foreach(written, j, w)
			found |= fnmatch(p, json_string_value(w), 0) == 0;
		if (!found && json_is_true(json_object_get(a, "required")))
			json_array_append_new(warnings, json_sprintf(
				"required artifact %s was not written", p));
	}
	result = json_pack("{s:s, s:o, s:O, s:o, s:s?}", "status",
			   ret ? "failed" : "success", "data",
			   data ? data : json_null(), "artifacts", written,
			   "validation_warnings", warnings, "error",
			   ret ? ferr_format(&err, msg, sizeof(msg)) : NULL);
	if (!result)
		return -ENOMEM;
	ret = fjson_dump(&text, result);
	if (!ret)
		ret = run_put_output(r, "result.json", text.buf, text.len);
	json_decref(result);
	sbuf_release(&text);
	return ret;
}

int run_flow_any(struct run *r, const struct engine_hooks *hooks,
		 struct ferr *err)
{
	json_t *messages = json_pack("[o, o]", run_message("system", r->system),
				     run_message("user", r->prompt));
	json_t *tools = json_array(), *written = json_array();
	struct engine_reply reply = { 0 };
	int ret = -ENOMEM;

	if (!messages || !tools || !written)
		goto out;
	if (json_array_size(r->manifest))
		json_array_append_new(tools, write_artifact_tool(r->manifest));
	for (int turn = 1;; turn++) {
		size_t i;
		json_t *call;

		run_progress(r, "waiting for the engine (turn %d)", turn);
		ret = engine_chat(&r->opt->engine, hooks, "run", messages, tools,
				  &reply, err);
		if (ret < 0)
			goto out;
		if (!json_array_size(reply.tool_calls))
			break;
		if (turn == MAX_TURNS) {
			ret = ferr_set(err, -EPROTO, "the engine still called"
				       " tools after %d turns", MAX_TURNS);
			goto out;
		}
		json_array_append(messages, reply.message);
		json_array_foreach(reply.tool_calls, i, call) {
			struct sbuf answer = SBUF_INIT;
			const char *name = json_string_value(
				json_object_get(call, "name"));

			if (!strcmp(name, "write_artifact"))
				write_artifact(r, call, written, &answer);
			else
				sbuf_addf(&answer, "refused: there is no tool"
					  " %s", name);
			json_array_append_new(messages,
					      run_tool_message(call, answer.buf));
			sbuf_release(&answer);
		}
		engine_reply_release(&reply);
	}
	ret = run_put_output(r, "response.md", reply.content, strlen(reply.content));
	if (!ret && r->output_schema)
		ret = write_result(r, reply.content, written);
	if (ret < 0 && !err->message[0])
		ferr_set(err, ret, "cannot write output/: %s", strerror(-ret));
out:
	engine_reply_release(&reply);
	json_decref(messages);
	json_decref(tools);
	json_decref(written);
	return ret;
}

/* ---- datcom --------------------------------------------------------------- */

/* Whether `args` with the schema's defaults is a whole valid set. */
static int complete_parameters(const struct run *r, const struct skill *sk,
			       const json_t *args, struct ferr *err)
{
	json_t *params = json_deep_copy(args), *request;
	int ret;

	if (!params)
		return -ENOMEM;
	ret = schema_apply_defaults(r->parameter_schema, NULL, params);
	if (!ret)
		ret = schema_validate(r->parameter_schema, NULL, params,
				      "parameter", 0, err);
	request = ret ? NULL : json_pack("{s:O}", "parameter", params);
	if (!ret)
		ret = request ? binding_check_request(sk, request, err) : -ENOMEM;
	json_decref(request);
	json_decref(params);
	return ret;
}

/*
 * The parameters of a set_parameters call, made the session's when they
 * pass (0); otherwise the reason in `answer` for the engine (1).  A
 * failure that is not the parameters' (the skill gone, the store) is a
 * negative errno with `fail` saying what.
 */
static int set_parameters(struct run *r, const json_t *args,
			  struct sbuf *answer, struct ferr *fail)
{
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	struct session_info s;
	const struct skill *sk;
	json_t *request = NULL, *doc = NULL;
	struct sbuf text = SBUF_INIT;
	int ret;

	if (!json_is_object(args)) {
		ret = sbuf_addstr(answer, "refused: the arguments must be a"
				  " JSON object of parameters");
		return ret < 0 ? ret : 1;
	}
	run_lock(r);
	ret = session_get(r->host->st, r->session, &s);
	sk = ret ? NULL : skill_find(r->host->skills, r->skill_id);
	if (!ret && !sk)
		ret = ferr_set(&err, -ENOENT, "skill %s is gone", r->skill_id);
	if (!ret)
		ret = session_load_request(r->host->st, &s, &request);
	/* complete and valid, not just acceptable as a request: the run
	 * exists to make output/for005.dat */
	if (!ret)
		ret = complete_parameters(r, sk, args, &err);
	if (!ret) {
		const json_t *input = json_object_get(request, "input");

		doc = json_pack("{s:o, s:O}", "input",
				input ? json_incref((json_t *)input)
				      : json_object(), "parameter", args);
		ret = doc ? fjson_dump(&text, doc) : -ENOMEM;
	}
	if (!ret)
		ret = session_commit_request(r->host->st, &s, sk,
					     binding_check_request, text.buf,
					     text.len, &err);
	run_unlock(r);
	json_decref(request);
	json_decref(doc);
	sbuf_release(&text);
	if (ret == -EINVAL) {
		sbuf_addf(answer, "refused: %s; call set_parameters again with"
			  " this corrected", ferr_format(&err, msg, sizeof(msg)));
		return 1;
	}
	if (ret < 0) {
		if (err.message[0])
			*fail = err;
		return ret;
	}
	sbuf_addstr(answer, "accepted");
	return 0;
}

int run_flow_datcom(struct run *r, const struct engine_hooks *hooks,
		    struct ferr *err)
{
	struct sbuf user = SBUF_INIT;
	json_t *messages = NULL, *tools = NULL;
	struct engine_reply reply = { 0 };
	int refusals = 0, ret = -ENOMEM;

	if (sbuf_addf(&user, "Turn the aircraft described below into the"
		      " parameters of a Digital DATCOM deck. Call the tool"
		      " set_parameters once, with every parameter; use the"
		      " units and limits its schema gives.\n\n%s",
		      r->description) < 0)
		goto out;
	messages = json_pack("[o, o]", run_message("system", r->system),
			     run_message("user", user.buf));
	tools = json_pack("[o]", run_function_tool("set_parameters",
		"Set the DATCOM parameters of the session (all of them at once)",
		json_deep_copy(r->parameter_schema)));
	if (!messages || !tools)
		goto out;
	for (int turn = 1;; turn++) {
		json_t *call = NULL, *c;
		struct sbuf answer = SBUF_INIT;
		size_t i;

		run_progress(r, "waiting for the engine (turn %d)", turn);
		ret = engine_chat(&r->opt->engine, hooks, "parameters",
				  messages, tools, &reply, err);
		if (ret < 0)
			goto out;
		json_array_append(messages, reply.message);
		json_array_foreach(reply.tool_calls, i, c)
			if (!call && !strcmp(json_string_value(json_object_get(
						     c, "name")), "set_parameters"))
				call = c;
		if (!call) {
			ret = ++refusals > MAX_RETRIES ? -EPROTO : 1;
			if (ret < 0) {
				ferr_set(err, -EPROTO, "the engine did not call"
					 " set_parameters");
				goto out;
			}
			json_array_append_new(messages, run_message("user",
				"Call the tool set_parameters with the"
				" parameters."));
			engine_reply_release(&reply);
			continue;
		}
		if (json_object_get(call, "error") &&
		    !json_is_null(json_object_get(call, "error"))) {
			sbuf_addf(&answer, "refused: the arguments are not JSON"
				  " (%s)", json_string_value(json_object_get(
						   call, "error")));
			ret = 1;
		} else {
			ret = set_parameters(r, json_object_get(call, "arguments"),
					     &answer, err);
		}
		/* every call of the turn gets an answer */
		json_array_foreach(reply.tool_calls, i, c)
			json_array_append_new(messages, run_tool_message(c,
				c == call ? answer.buf
					  : "ignored: one set_parameters call is enough"));
		if (ret == 1 && ++refusals > MAX_RETRIES)
			ret = ferr_set(err, -EINVAL, "the engine's parameters"
				       " were refused %d times; the last time:"
				       " %s", refusals, answer.buf + 9);
		sbuf_release(&answer);
		engine_reply_release(&reply);
		if (ret != 1)
			break;
	}
out:
	engine_reply_release(&reply);
	json_decref(messages);
	json_decref(tools);
	sbuf_release(&user);
	return ret;
}

