/*
 * What the files of core/run share (not a public interface: run.h is).
 * run.c: a run's life (checks, start, thread, state, cancel, the audit
 * log); run_chat.c: the flows of any skill and of datcom; run_rounds.c:
 * scientific-workflow's rounds and experiments; run_fetch.c: URL inputs.
 */
#ifndef FLOWFS_RUN_PRIVATE_H
#define FLOWFS_RUN_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "run/run.h"

/* Tool-call turns of one conversation before a run gives up. */
#define MAX_TURNS 12
/* Answers a refused set_parameters (or a round without its tags) gets. */
#define MAX_RETRIES 3

enum flow { FLOW_ANY, FLOW_DATCOM, FLOW_ROUNDS, FLOW_FETCH };

struct run {
	pthread_t thread;
	const struct run_host *host;
	const struct run_options *opt;
	int64_t session;
	enum flow flow;
	atomic_bool cancel;
	atomic_bool finished;
	bool started;		/* its thread was created (run_free joins it) */
	/* a copy of what the run reads, taken at start */
	char *skill_id;
	char *system;		/* SKILL.md */
	char *prompt;		/* prompt.txt */
	char *description;	/* datcom, scientific-workflow */
	char *io;		/* scientific-workflow */
	long max_rounds;
	json_t *manifest;	/* inputs_manifest() */
	json_t *output_schema;
	json_t *parameter_schema;
	uint64_t output_ino, uploads_ino;
	/* a fetch: request.json's input `key` from `url` to uploads/<name> */
	char *key, *url, *name;
	int64_t reported_ms;
	/* a fetch waiting in host->fetches (the host's lock guards these) */
	bool queued;
	struct run *queue_prev, *queue_next;
};

/* The host's lock, for the store and the tree. */
void run_lock(const struct run *r);
void run_unlock(const struct run *r);
/* The host's settle hook (run.h): before a final state, without the lock. */
void run_settle(const struct run *r);

/* A line for the session's log (run_host.log; the lock held), about
 * `path` or, for run_log_fetch(), the fetch's uploads/<name>; the log
 * cuts it. */
void run_log(const struct run *r, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void run_log_fetch(const struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What the run does now, for status (takes the lock). */
void run_progress(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The engine hook and exec's: whether the run is to stop. */
bool run_cancelled(void *ctx);

/* output/<name> = data, whole (takes the lock). */
int run_put_output(struct run *r, const char *name, const char *data,
		   size_t len);

/*
 * A file a run or fetch stores in a tree folder, as it comes: written
 * into a file in no folder (tree_create_unlinked()), the lock taken per
 * 1 MiB slice (gigabytes must not stall the mount), then linked over
 * its name.  run_file_open() makes it; run_file_write() (fetch.h's
 * put hook: ctx is the run_file) adds bytes, -ECANCELED once the run
 * is cancelled; run_file_close() takes the result so far (`ret`) and,
 * when it is 0, links the file as `name` in `parent` unless current(r)
 * (when given), asked under the lock just before, says the file is no
 * longer wanted (-ESTALE).  The kernel is told the name changed.  Any
 * other outcome leaves nothing; a failure to store gets a line in err
 * (unless err has one already).  A run_file whose open failed may be
 * closed too.
 */
struct run_file {
	struct run *r;
	uint64_t parent;
	struct tree_attr file;
	char *buf;
	size_t len;
	int64_t off;
};

int run_file_open(struct run *r, uint64_t parent, struct run_file *f);
int run_file_write(void *ctx, const char *data, size_t n);
int run_file_close(struct run_file *f, const char *name, int ret,
		   bool (*current)(struct run *r), struct ferr *err);

/* Whether output/`name` is a name flowfs keeps: a run's own file
 * (response.md, result.json) or one flowfs shows there in its place
 * (run_host.generated): what is stored under it would be hidden. */
bool run_reserved_output(const struct run *r, const char *name);

/* The file open at `fd`, from its start and at most `max` bytes of it
 * (the size it was checked at: it may still grow), as `name` in `parent`
 * (above). */
int run_store_fd(struct run *r, int fd, uint64_t parent, const char *name,
		 size_t max, struct ferr *err);

/* Chat messages and tools. */
json_t *run_message(const char *role, const char *content);
json_t *run_tool_message(const json_t *call, const char *content);
json_t *run_function_tool(const char *name, const char *description,
			  json_t *parameters);

/* The flows: 0, or a negative errno with err for status. */
int run_flow_any(struct run *r, const struct engine_hooks *hooks,
		 struct ferr *err);
int run_flow_datcom(struct run *r, const struct engine_hooks *hooks,
		    struct ferr *err);
int run_flow_rounds(struct run *r, const struct engine_hooks *hooks,
		    struct ferr *err);
/* A fetch, its end state stored in its row too. */
void run_flow_fetch(struct run *r);

/* Whether a fetch of the session is queued or going on (the lock
 * held). */
bool run_fetching(struct store *st, int64_t session);

/* A queued fetch cancelled: out of the queue, its row "cancelled", and
 * finished (the lock held). */
void run_fetch_drop(struct run *r);

/* The thread of a run or fetch, and freeing what a run holds. */
void *run_thread(void *arg);
void run_release(struct run *r);

#endif
