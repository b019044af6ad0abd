/*
 * engine: one chat completion against an OpenAI-compatible endpoint
 * (POST <url>/chat/completions) over libcurl, with the retries, the
 * cancellation and the audit record a run needs.  No files, no store:
 * the caller (core/run) decides what a reply means.
 *
 *	struct engine_config cfg = { .url = "http://127.0.0.1:8080/v1",
 *				     .model = "m", .key = key };
 *	struct engine_reply reply;
 *	ret = engine_chat(&cfg, &hooks, "run", messages, tools, &reply, &err);
 *	... reply.content, reply.tool_calls ...
 *	engine_reply_release(&reply);
 *
 * ---- Audit and retries ----
 * Every HTTP attempt produces one audit record (hooks->audit), a JSON
 * object {"time", "purpose", "model", "duration_ms", "prompt_tokens",
 * "completion_tokens", "http_status", "error"} (tokens and status null
 * when unknown, error null on success).  An attempt that fails with 429,
 * a 5xx status, a timeout or a refused/dropped connection is tried
 * again after a backoff (backoff_ms, doubled each time up to
 * ENGINE_BACKOFF_MAX_MS, or the server's Retry-After when it says less
 * than 30 s), at most `retries` times.
 *
 * ---- The key ----
 * The key goes in an Authorization header only: it is never put in a
 * record, a message or an error; neither are credentials in the URL
 * (engine_url_shown()).
 *
 * ---- Threads ----
 * Thread-safe as long as each thread uses its own configuration copy;
 * engine_global_init() must have run once (libcurl's global state).
 */
#ifndef FLOWFS_ENGINE_H
#define FLOWFS_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/ferr.h"

/* No wait between two attempts is longer (a doubled backoff stops here). */
#define ENGINE_BACKOFF_MAX_MS 60000L

/* The wait before attempt `attempt` + 2 (attempt 0: the first retry):
 * `first` ms doubled `attempt` times, at most ENGINE_BACKOFF_MAX_MS. */
long engine_backoff_ms(long first, int attempt);

struct engine_config {
	const char *url;	/* the base, e.g. http://127.0.0.1:8080/v1 */
	const char *model;
	const char *key;	/* NULL: no Authorization header */
	long connect_timeout_ms;	/* 0: 10 s */
	long timeout_ms;		/* a whole attempt; 0: 300 s */
	int retries;			/* < 0: 3 */
	long backoff_ms;		/* first backoff; 0: 1000 */
};

struct engine_hooks {
	void *ctx;
	/* true to stop: the transfer and any backoff end with -ECANCELED */
	bool (*cancelled)(void *ctx);
	/* one record per HTTP attempt (see above); the hook copies it */
	void (*audit)(void *ctx, const json_t *record);
};

struct engine_reply {
	char *content;		/* the assistant message's text; "" when none */
	/* [{"id", "name", "arguments": <parsed object>}], never NULL */
	json_t *tool_calls;
	json_t *message;	/* the assistant message as received, for
				 * the conversation's next turn */
	char *finish_reason;
};

int engine_global_init(void);

/*
 * `url` as flowfs shows or keeps it anywhere (status, the logs,
 * engine.log, .flowfs/config): a user name and password in it (the
 * userinfo before '@') become the three characters "***"; a URL without
 * them is returned as it is, one libcurl cannot parse as "(not a URL)".
 * malloc'd; NULL: no memory.
 */
char *engine_url_shown(const char *url);

/*
 * Send `messages` (an array of {"role", "content", ...}) with `tools`
 * (an array of OpenAI function tools, or NULL) for `purpose` (a word for
 * the audit record: "run", "parameters", "round 2", ...).  0 and *out,
 * or a negative errno with err saying what happened in words a person
 * reads in status: -ECANCELED, -ETIMEDOUT, -ECONNREFUSED, -EPROTO (a
 * status other than 2xx after the retries, or a reply that is not the
 * JSON of a chat completion), -ENOMEM.
 */
int engine_chat(const struct engine_config *cfg,
		const struct engine_hooks *hooks, const char *purpose,
		const json_t *messages, const json_t *tools,
		struct engine_reply *out, struct ferr *err);

void engine_reply_release(struct engine_reply *reply);

/*
 * The JSON result in a reply text: the first fenced ```json block, else
 * everything from the first '{' to the last '}'.  0 and *out (an
 * object), or -EINVAL with err (no such text, or it does not parse).
 */
int engine_extract_json(const char *text, json_t **out, struct ferr *err);

#endif
