/*
 * engine: chat completions over libcurl; see engine.h.
 */
#include "run/engine.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/fclock.h"
#include "lib/fjson.h"
#include "lib/sbuf.h"

/* A reply larger than this is no chat completion. */
#define REPLY_MAX (64 * 1024 * 1024)

int engine_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

/* What one transfer gathers. */
struct transfer {
	struct sbuf body;
	long retry_after_s;	/* -1: none given */
	const struct engine_hooks *hooks;
	bool too_big;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;

	if (t->body.len + size * n > REPLY_MAX) {
		t->too_big = true;
		return 0;
	}
	return sbuf_add(&t->body, data, size * n) < 0 ? 0 : size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;
	static const char name[] = "retry-after:";

	if (size * n > sizeof(name) - 1 &&
	    !strncasecmp(data, name, sizeof(name) - 1))
		t->retry_after_s = strtol(data + sizeof(name) - 1, NULL, 10);
	return size * n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct transfer *t = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return t->hooks && t->hooks->cancelled &&
	       t->hooks->cancelled(t->hooks->ctx);
}

static bool cancelled(const struct engine_hooks *hooks)
{
	return hooks && hooks->cancelled && hooks->cancelled(hooks->ctx);
}

/* Sleep `ms`, waking early (true) when the run is cancelled. */
static bool sleep_unless_cancelled(const struct engine_hooks *hooks, long ms)
{
	int64_t until = fclock_mono_ms() + ms;

	while (fclock_mono_ms() < until) {
		struct timespec step = { 0, 20 * 1000000 };

		if (cancelled(hooks))
			return true;
		nanosleep(&step, NULL);
	}
	return cancelled(hooks);
}

char *engine_url_shown(const char *url)
{
	CURLU *u = curl_url();
	char *user = NULL, *password = NULL, *query = NULL, *shown = NULL;

	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		/* nothing libcurl would send to either: say so, show nothing */
		shown = strdup("(not a URL)");
		goto out;
	}
	curl_url_get(u, CURLUPART_USER, &user, 0);
	curl_url_get(u, CURLUPART_PASSWORD, &password, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	/* unchanged when there is nothing to hide: libcurl's rebuilt URL
	 * is spelled differently (a '/' added, case) */
	if (!user && !password && !query) {
		shown = strdup(url);
		goto out;
	}
	/* a key may be in the query too (?api-key=..., Azure's way) */
	if ((user && curl_url_set(u, CURLUPART_USER, "***", 0) != CURLUE_OK) ||
	    curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_OPTIONS, NULL, 0) != CURLUE_OK ||
	    (query && curl_url_set(u, CURLUPART_QUERY, "***", 0) != CURLUE_OK) ||
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK) {
		shown = strdup("(not a URL)");
		goto out;
	}
	{
		char *rebuilt = NULL;

		if (curl_url_get(u, CURLUPART_URL, &rebuilt, 0) == CURLUE_OK) {
			shown = strdup(rebuilt);
			curl_free(rebuilt);
		}
	}
out:
	if (password)
		explicit_bzero(password, strlen(password));
	curl_free(user);
	curl_free(password);
	curl_free(query);
	curl_url_cleanup(u);
	return shown;
}

static void audit(const struct engine_hooks *hooks,
		  const struct engine_config *cfg, const char *purpose,
		  int64_t started_ms, const json_t *usage, long status,
		  const char *error)
{
	char when[32];
	time_t t = time(NULL);
	struct tm tm;
	json_t *rec;
	const json_t *pt = json_object_get(usage, "prompt_tokens");
	const json_t *ct = json_object_get(usage, "completion_tokens");

	if (!hooks || !hooks->audit)
		return;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	rec = json_pack("{s:s, s:s, s:s, s:I, s:O?, s:O?, s:o, s:s?}",
			"time", when, "purpose", purpose, "model",
			cfg->model ? cfg->model : "",
			"duration_ms", (json_int_t)(fclock_mono_ms() - started_ms),
			"prompt_tokens", json_is_integer(pt) ? pt : NULL,
			"completion_tokens", json_is_integer(ct) ? ct : NULL,
			"http_status", status ? json_integer(status) : json_null(),
			"error", error);
	if (rec)
		hooks->audit(hooks->ctx, rec);
	json_decref(rec);
}

/* The request body: {"model", "messages", "tools"?}. */
static char *request_body(const struct engine_config *cfg,
			  const json_t *messages, const json_t *tools)
{
	json_t *req = json_pack("{s:s, s:O}", "model",
				cfg->model ? cfg->model : "", "messages",
				messages);
	char *text;

	if (!req)
		return NULL;
	if (tools && json_array_size(tools) &&
	    json_object_set(req, "tools", (json_t *)tools) < 0) {
		json_decref(req);
		return NULL;
	}
	text = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(req);
	return text;
}

/* A tool call as the caller sees it: its arguments parsed. */
static json_t *tool_call(const json_t *call)
{
	const json_t *fn = json_object_get(call, "function");
	const char *args = json_string_value(json_object_get(fn, "arguments"));
	const char *id = json_string_value(json_object_get(call, "id"));
	const char *name = json_string_value(json_object_get(fn, "name"));
	json_t *parsed = NULL;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];

	if (!name)
		return NULL;
	if (args && fjson_parse(&parsed, args, strlen(args), &err) < 0)
		parsed = NULL;
	return json_pack("{s:s, s:s, s:o, s:s?}", "id", id ? id : "",
			 "name", name, "arguments",
			 parsed ? parsed : json_null(), "error",
			 parsed || !args ? NULL
					 : ferr_format(&err, msg, sizeof(msg)));
}

/* Read a chat completion's first choice into *out. */
static int parse_reply(const struct sbuf *body, struct engine_reply *out,
		       json_t **usage, struct ferr *err)
{
	json_t *doc = NULL, *msg, *calls;
	const json_t *content;
	const char *finish;
	size_t i;
	int ret;

	ret = fjson_parse(&doc, body->buf, body->len, err);
	if (ret < 0) {
		char what[FERR_MESSAGE_MAX + 64];

		ferr_format(err, what, sizeof(what));
		return ferr_set(err, -EPROTO, "the engine's reply is not JSON"
				" (%s)", what);
	}
	msg = json_object_get(json_array_get(json_object_get(doc, "choices"),
					     0), "message");
	if (!json_is_object(msg)) {
		json_decref(doc);
		return ferr_set(err, -EPROTO, "the engine's reply has no"
				" choices[0].message");
	}
	content = json_object_get(msg, "content");
	out->content = strdup(json_is_string(content)
				      ? json_string_value(content) : "");
	finish = json_string_value(json_object_get(json_array_get(
		json_object_get(doc, "choices"), 0), "finish_reason"));
	out->finish_reason = strdup(finish ? finish : "");
	out->tool_calls = json_array();
	out->message = json_incref(msg);
	calls = json_object_get(msg, "tool_calls");
	for (i = 0; out->tool_calls && i < json_array_size(calls); i++) {
		json_t *c = tool_call(json_array_get(calls, i));

		if (c && json_array_append_new(out->tool_calls, c) < 0)
			ret = -ENOMEM;
	}
	*usage = json_incref(json_object_get(doc, "usage"));
	json_decref(doc);
	if (!out->content || !out->finish_reason || !out->tool_calls || ret)
		return -ENOMEM;
	return 0;
}

static bool retryable_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

/* No shift past a long's width: the doubling stops at the cap. */
long engine_backoff_ms(long first, int attempt)
{
	long wait = first < ENGINE_BACKOFF_MAX_MS ? first : ENGINE_BACKOFF_MAX_MS;

	for (int i = 0; i < attempt && wait < ENGINE_BACKOFF_MAX_MS; i++)
		wait *= 2;
	return wait < ENGINE_BACKOFF_MAX_MS ? wait : ENGINE_BACKOFF_MAX_MS;
}

int engine_chat(const struct engine_config *cfg,
		const struct engine_hooks *hooks, const char *purpose,
		const json_t *messages, const json_t *tools,
		struct engine_reply *out, struct ferr *err)
{
	struct transfer t = { SBUF_INIT, -1, hooks, false };
	struct curl_slist *headers = NULL;
	long timeout = cfg->timeout_ms > 0 ? cfg->timeout_ms : 300000;
	long backoff = cfg->backoff_ms > 0 ? cfg->backoff_ms : 1000;
	int retries = cfg->retries >= 0 ? cfg->retries : 3;
	char *body = NULL, *url = NULL, *auth = NULL, *shown = NULL;
	CURL *curl = NULL;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	body = request_body(cfg, messages, tools);
	curl = curl_easy_init();
	/* errors reach status, the log and engine.log: no credentials */
	shown = engine_url_shown(cfg->url);
	if (!body || !curl || !shown ||
	    asprintf(&url, "%s%schat/completions", cfg->url,
		     cfg->url[0] && cfg->url[strlen(cfg->url) - 1] == '/' ? ""
									   : "/") < 0) {
		url = NULL;
		goto out;
	}
	headers = curl_slist_append(headers, "Content-Type: application/json");
	if (cfg->key && cfg->key[0]) {
		if (asprintf(&auth, "Authorization: Bearer %s", cfg->key) < 0) {
			auth = NULL;
			goto out;
		}
		headers = curl_slist_append(headers, auth);
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms
						     : 10000L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);

	for (int attempt = 0;; attempt++) {
		int64_t started = fclock_mono_ms();
		long status = 0;
		json_t *usage = NULL;
		CURLcode rc;
		bool again;

		sbuf_reset(&t.body);
		t.retry_after_s = -1;
		rc = curl_easy_perform(curl);
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		if (rc != CURLE_OK) {
			if (rc == CURLE_OPERATION_TIMEDOUT)
				ret = ferr_set(err, -ETIMEDOUT, "the engine did not"
					       " answer within %ld s (%s)",
					       timeout / 1000, shown);
			else if (rc == CURLE_ABORTED_BY_CALLBACK)
				ret = ferr_set(err, -ECANCELED, "cancelled");
			else if (t.too_big)
				ret = ferr_set(err, -EPROTO, "the engine's reply"
					       " is larger than %d MiB",
					       REPLY_MAX >> 20);
			else
				ret = ferr_set(err, curl_errno(rc), "%s: %s",
					       shown, curl_easy_strerror(rc));
			again = retryable_curl(rc);
		} else if (status < 200 || status > 299) {
			ret = ferr_set(err, -EPROTO, "the engine answered HTTP"
				       " %ld: %.200s", status,
				       t.body.len ? t.body.buf : "(no body)");
			again = status == 429 || status >= 500;
		} else {
			ret = parse_reply(&t.body, out, &usage, err);
			again = false;
		}
		audit(hooks, cfg, purpose, started, usage, status,
		      ret < 0 ? err->message : NULL);
		json_decref(usage);
		if (!ret || !again || attempt >= retries || ret == -ECANCELED)
			break;
		{
			long wait = engine_backoff_ms(backoff, attempt);

			if (t.retry_after_s >= 0 && t.retry_after_s < 30)
				wait = t.retry_after_s * 1000;
			if (sleep_unless_cancelled(hooks, wait)) {
				ret = ferr_set(err, -ECANCELED, "cancelled");
				break;
			}
		}
	}
out:
	if (ret < 0)
		engine_reply_release(out);
	if (ret == -ENOMEM)
		ferr_set(err, -ENOMEM, "out of memory");
	curl_slist_free_all(headers);
	curl_easy_cleanup(curl);
	free(auth);
	free(url);
	free(shown);
	free(body);
	sbuf_release(&t.body);
	return ret;
}

void engine_reply_release(struct engine_reply *reply)
{
	free(reply->content);
	free(reply->finish_reason);
	json_decref(reply->tool_calls);
	json_decref(reply->message);
	memset(reply, 0, sizeof(*reply));
}

int engine_extract_json(const char *text, json_t **out, struct ferr *err)
{
	const char *start = strstr(text, "```json"), *end = NULL;
	int ret;

	*out = NULL;
	if (start) {
		start = strchr(start, '\n');
		end = start ? strstr(start, "```") : NULL;
	}
	if (!start || !end) {
		start = strchr(text, '{');
		end = strrchr(text, '}');
		if (!start || !end || end < start)
			return ferr_set(err, -EINVAL, "the reply holds no JSON"
					" object");
		end++;
	}
	ret = fjson_parse(out, start, (size_t)(end - start), err);
	if (!ret && !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		ret = ferr_set(err, -EINVAL, "the reply's JSON is not an object");
	}
	return ret;
}
