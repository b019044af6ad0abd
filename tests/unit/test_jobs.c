/*
 * Unit tests for jobs (issue 16) with the local executor: real jobs
 * (sh, sleep, true) run by the monitor thread in a temporary work
 * folder, a graph of the seed-000 form (nodes with input_parameters,
 * edges naming parameters) and a tool map.  What is checked is what
 * core/jobs.h promises: the rows' and the jobs/<node>/ files' states in
 * dependency order, the state file's form, stdout/stderr/outputs brought
 * (and what is not: symlinks, files over JOBS_OUTPUT_MAX, the head of a
 * log over JOBS_LOG_MAX), failures and skipped descendants, cancel and
 * its process groups, busy nodes, refusals, re-attaching after a stop,
 * the environment without FLOWFS_*, how a job is started (its own
 * session, stdin, descriptors), slots shared by sessions, a reused pid,
 * a job gone before its start time was read, and a job's time limit
 * (staged: the row's time_limit_s set to 1 s in the database, the
 * smallest time_minutes being a minute).  Issue 25: the folder checks
 * (jobdir.h: a shared work folder, a link, another's folder, one others
 * may write), the supervisor (supervise.h: a process that left the job's
 * group ends at cancel, at the time limit and at the job's end, and the
 * supervisor goes only after it; its cgroup, as root), a cancel that
 * says "cancelled" only when nothing is left, and an output that is a
 * hard link.
 *
 * Waits are bounded polls (WAIT_S); no duration is asserted.  Documents
 * are written with ' for " (see unit_json()).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include "graph/graph.h"
#include "graph/tools.h"
#include "run/jobdir.h"
#include "run/jobs.h"
#include "run/supervise.h"
#include "run/run.h"
#include "lib/sbuf.h"
#include "session/session.h"
#include "store/store.h"
#include "store/tree.h"
#include "unit.h"

/* how long a test waits for something that takes well under a second */
#define WAIT_S 30

struct fixture {
	char dir[64];
	char path[128];
	char work[128];
	struct store *st;
	struct tree *t;
	struct session_info s;
	pthread_mutex_t mu;
	struct run_host host;
	struct jobs *jobs;
	struct jobs_options opt;
	/* what the host was told, under mu */
	size_t nchanged;
	struct sbuf log;
	int64_t other;		/* a second session's id, when made */
};

static void host_lock(void *ctx)
{
	pthread_mutex_lock(&((struct fixture *)ctx)->mu);
}

static void host_unlock(void *ctx)
{
	pthread_mutex_unlock(&((struct fixture *)ctx)->mu);
}

static void host_changed(void *ctx, int64_t session, uint64_t parent,
			 const char *name)
{
	struct fixture *fx = ctx;

	(void)parent;
	(void)name;
	assert_true(session == fx->s.id || session == fx->other);
	fx->nchanged++;
}

static void host_log(void *ctx, int64_t session, const char *path,
		     const char *message)
{
	struct fixture *fx = ctx;

	assert_true(session == fx->s.id || session == fx->other);
	sbuf_addf(&fx->log, "%s: %s\n", path, message);
}

static void start(struct fixture *fx)
{
	struct ferr err = FERR_INIT;

	if (jobs_start(&fx->jobs, &fx->host, &fx->opt, &err) < 0)
		fail_msg("jobs_start: %s", err.message);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || unit_db_open("jobs", fx->dir, fx->path, &fx->st,
				&fx->t) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	sbuf_init(&fx->log);
	pthread_mutex_init(&fx->mu, NULL);
	snprintf(fx->work, sizeof(fx->work), "%s/work", fx->dir);
	if (mkdir(fx->work, 0755) < 0)
		return -1;
	if (session_create(fx->st, fx->t, "s1", 0755, getuid(), getgid(),
			   &fx->s, NULL) < 0)
		return -1;
	fx->host = (struct run_host){
		.ctx = fx, .lock = host_lock, .unlock = host_unlock,
		.changed = host_changed, .settle = NULL, .log = host_log,
		.st = fx->st, .tree = fx->t,
	};
	fx->opt = (struct jobs_options){
		.executor = JOBS_LOCAL, .work_dir = fx->work, .slots = 2,
		.tools_path = "tools.json", .poll_ms = 50,
	};
	/* a job must not see these; the others it sees */
	setenv("FLOWFS_ENGINE_KEY", "secret", 1);
	setenv("JOBS_UNIT_MARK", "kept", 1);
	start(fx);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	jobs_stop(fx->jobs);
	unit_db_close(fx->dir, fx->st, fx->t);
	pthread_mutex_destroy(&fx->mu);
	sbuf_release(&fx->log);
	free(fx);
	return 0;
}


/*
 * jobs_submit() of session `s` (the caller holds the lock) after storing
 * `graph` as its parameters.json and `tools` as the tool map (documents
 * written with ' for ").
 */
static int submit_locked(struct fixture *fx, const struct session_info *s,
			 const char *graph, const char *tools,
			 struct ferr *err)
{
	json_t *g = unit_json(graph), *t = unit_json(tools);
	struct graph_tools *map = NULL;
	char path[128], *gtext, *ttext;
	int ret;

	if (!json_object_get(g, "meta"))
		json_object_set_new(g, "meta", json_object());
	gtext = json_dumps(g, 0);
	ttext = json_dumps(t, 0);
	snprintf(path, sizeof(path), "%s/tools.json", fx->dir);
	unit_put(fx->dir, "tools.json", ttext);
	ret = graph_tools_load(path, &map, err);
	/* a stored graph is a whole seed-000 document (the lock is held:
	 * a failed assertion here would leave it held) */
	if (!ret)
		ret = graph_commit_parameters(fx->st, map, s->id, gtext,
					      strlen(gtext), err);
	if (!ret)
		ret = jobs_submit(fx->jobs, s, map, NULL, err);
	graph_tools_free(map);
	free(gtext);
	free(ttext);
	json_decref(g);
	json_decref(t);
	return ret;
}

/* jobs_submit of two documents (lock taken), err's message kept. */
static int submit(struct fixture *fx, const char *graph, const char *tools,
		  char *msg, size_t size)
{
	struct ferr err = FERR_INIT;
	int ret;

	host_lock(fx);
	ret = submit_locked(fx, &fx->s, graph, tools, &err);
	host_unlock(fx);
	if (msg)
		snprintf(msg, size, "%s", err.message);
	return ret;
}

static void submit_ok(struct fixture *fx, const char *graph, const char *tools)
{
	char msg[FERR_MESSAGE_MAX];

	if (submit(fx, graph, tools, msg, sizeof(msg)) != 0)
		fail_msg("submit refused: %s", msg);
}

/* jobs/<node>/<name> into out (lock taken by the caller or not):
 * 0, or the negative errno of the lookup. */
static int node_file_locked(struct fixture *fx, const char *node,
			    const char *name, struct sbuf *out)
{
	struct tree_attr folder, a;
	int ret;

	sbuf_setlen(out, 0);
	ret = tree_lookup(fx->t, fx->s.jobs_ino, node, &folder);
	if (!ret)
		ret = tree_lookup(fx->t, folder.ino, name, &a);
	if (!ret)
		ret = tree_read_all(fx->t, &a, out);
	return ret;
}

static int node_file(struct fixture *fx, const char *node, const char *name,
		     struct sbuf *out)
{
	int ret;

	host_lock(fx);
	ret = node_file_locked(fx, node, name, out);
	host_unlock(fx);
	return ret;
}

/* The state word of jobs/<node>/state ("" when there is none). */
static void state_word(struct fixture *fx, const char *node, char *word,
		       size_t size)
{
	struct sbuf s = SBUF_INIT;

	word[0] = '\0';
	if (node_file(fx, node, "state", &s) == 0)
		snprintf(word, size, "%.*s", (int)strcspn(s.buf, "\n"), s.buf);
	sbuf_release(&s);
}

/* The row's state in graph_jobs ("" when there is none). */
static void row_state(struct fixture *fx, const char *node, char *word,
		      size_t size)
{
	sqlite3_stmt *q = NULL;

	word[0] = '\0';
	host_lock(fx);
	assert_int_equal(sqlite3_prepare_v2(store_db(fx->st),
		"SELECT state FROM graph_jobs WHERE session = ?1 AND"
		" node_id = ?2", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, fx->s.id);
	sqlite3_bind_text(q, 2, node, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		snprintf(word, size, "%s", sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	host_unlock(fx);
}

static int64_t row_int(struct fixture *fx, const char *node, const char *col)
{
	int64_t v;

	host_lock(fx);
	v = unit_sql_int(store_db(fx->st), "SELECT %s FROM graph_jobs WHERE"
			 " session = %lld AND node_id = '%s'", col,
			 (long long)fx->s.id, node);
	host_unlock(fx);
	return v;
}

static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait until the node's row and its state file both say `want`. */
static void wait_state(struct fixture *fx, const char *node, const char *want)
{
	char row[64], file[64];

	for (int i = 0; i < WAIT_S * 50; i++) {
		row_state(fx, node, row, sizeof(row));
		state_word(fx, node, file, sizeof(file));
		if (!strcmp(row, want) && !strcmp(file, want))
			return;
		nap();
	}
	fail_msg("%s: row \"%s\", state file \"%s\", not \"%s\"", node, row,
		 file, want);
}

static json_t *report_of(struct fixture *fx, int64_t session)
{
	json_t *r = NULL;
	int64_t when = 0;

	host_lock(fx);
	assert_int_equal(jobs_report(fx->st, session, &r, &when), 0);
	host_unlock(fx);
	if (r)
		assert_true(when > 0);
	return r;
}

static json_t *report(struct fixture *fx)
{
	return report_of(fx, fx->s.id);
}

/* Wait for the session's run to end; its report. */
static json_t *wait_end_of(struct fixture *fx, int64_t session)
{
	for (int i = 0; i < WAIT_S * 50; i++) {
		json_t *r = report_of(fx, session);

		assert_non_null(r);
		if (strcmp(json_string_value(json_object_get(r, "state")),
			   "running"))
			return r;
		json_decref(r);
		nap();
	}
	fail_msg("the run did not end in %d s", WAIT_S);
	return NULL;
}

static json_t *wait_end(struct fixture *fx)
{
	return wait_end_of(fx, fx->s.id);
}

static int64_t report_int(const json_t *r, const char *key)
{
	const json_t *v = json_object_get(r, key);

	if (!json_is_integer(v))
		fail_msg("report: %s is not a number", key);
	return json_integer_value(v);
}

/* The report's state is `state` and its counts what `counts` says:
 * "key=n" words, e.g. "jobs=4 done=4 running=0". */
static void expect_report(const json_t *r, const char *state,
			  const char *counts)
{
	char key[32];
	long long n;
	int used;

	assert_string_equal(json_string_value(json_object_get(r, "state")),
			    state);
	while (sscanf(counts, " %31[a-z]=%lld%n", key, &n, &used) == 2) {
		if (report_int(r, key) != n)
			fail_msg("%s: %lld, not %lld", key,
				 (long long)report_int(r, key), n);
		counts += used;
	}
}

static bool is_iso(const char *v)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";

	if (strlen(v) != sizeof(form) - 1)
		return false;
	for (size_t i = 0; form[i]; i++)
		if (form[i] == 'd' ? v[i] < '0' || v[i] > '9' : v[i] != form[i])
			return false;
	return true;
}

/*
 * jobs/<node>/state checked for its form (jobs.h): `word` on the first
 * line, then "key value" lines of the known keys in their order (times
 * ISO 8601 UTC), then not_brought lines.  The value of `key` is copied
 * into val (NULL: not there); returns the whole text (free it).
 */
static char *state_text(struct fixture *fx, const char *node,
			const char *word)
{
	static const char *const keys[] = { "scheduler_id", "exit_code",
		"queued", "started", "ended", "message", "not_brought" };
	struct sbuf s = SBUF_INIT;
	size_t next_key = 0;
	char *text, *line, *save = NULL;

	if (node_file(fx, node, "state", &s) < 0)
		fail_msg("%s: no state file", node);
	text = strdup(s.buf);
	assert_non_null(text);
	if (!s.len || s.buf[s.len - 1] != '\n')
		fail_msg("%s: state does not end in a newline: %s", node,
			 s.buf);
	line = strtok_r(s.buf, "\n", &save);
	if (!line || strcmp(line, word))
		fail_msg("%s: state word \"%s\", not \"%s\"", node,
			 line ? line : "", word);
	while ((line = strtok_r(NULL, "\n", &save))) {
		size_t klen = strcspn(line, " ");
		size_t k;

		for (k = next_key; k < sizeof(keys) / sizeof(*keys); k++)
			if (strlen(keys[k]) == klen &&
			    !memcmp(keys[k], line, klen))
				break;
		if (k == sizeof(keys) / sizeof(*keys) || !line[klen] ||
		    !line[klen + 1])
			fail_msg("%s: bad or misplaced state line \"%s\"",
				 node, line);
		if (k >= 2 && k <= 4 && !is_iso(line + klen + 1))
			fail_msg("%s: not a UTC time: \"%s\"", node, line);
		/* keys once each, not_brought any number of times */
		next_key = k == 6 ? k : k + 1;
	}
	sbuf_release(&s);
	return text;
}

/* The value of "key value" in a state text, or NULL (free it). */
static char *state_value(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = strchr(text, '\n'); p && p[1]; p = strchr(p + 1,
								   '\n')) {
		if (!strncmp(p + 1, key, kl) && p[1 + kl] == ' ')
			return strndup(p + 2 + kl, strcspn(p + 2 + kl, "\n"));
	}
	return NULL;
}

static void expect_key(const char *node, const char *text, const char *key,
			 const char *want)
{
	char *v = state_value(text, key);

	if (!want && v)
		fail_msg("%s: state has %s \"%s\"", node, key, v);
	if (want && (!v || strcmp(v, want)))
		fail_msg("%s: state %s \"%s\", not \"%s\"", node, key,
			 v ? v : "(none)", want);
	free(v);
}

static void expect_log(struct fixture *fx, const char *line)
{
	bool found;

	host_lock(fx);
	found = strstr(fx->log.buf, line) != NULL;
	host_unlock(fx);
	if (!found)
		fail_msg("the log has no \"%s\":\n%s", line, fx->log.buf);
}

/* The pid of the node's running job (its row's scheduler_id). */
static pid_t job_pid(struct fixture *fx, const char *node)
{
	char id[64] = "";
	sqlite3_stmt *q = NULL;

	host_lock(fx);
	assert_int_equal(sqlite3_prepare_v2(store_db(fx->st),
		"SELECT scheduler_id FROM graph_jobs WHERE session = ?1 AND"
		" node_id = ?2", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, fx->s.id);
	sqlite3_bind_text(q, 2, node, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		snprintf(id, sizeof(id), "%s", sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	host_unlock(fx);
	if (atol(id) <= 1)
		fail_msg("%s: no pid in its row (\"%s\")", node, id);
	return (pid_t)atol(id);
}

/* Wait until the node's job has a pid (it started), whatever its state
 * is by then; the pid. */
static pid_t wait_pid(struct fixture *fx, const char *node)
{
	for (int i = 0; i < WAIT_S * 50; i++) {
		if (row_int(fx, node, "scheduler_id IS NOT NULL") == 1)
			return job_pid(fx, node);
		nap();
	}
	fail_msg("%s did not start in %d s", node, WAIT_S);
	return 0;
}

/* Wait until no process is left in group `pgid`. */
static void wait_group_gone(pid_t pgid, int seconds)
{
	for (int i = 0; i < seconds * 50; i++) {
		if (kill(-pgid, 0) < 0 && errno == ESRCH)
			return;
		nap();
	}
	kill(-pgid, SIGKILL);
	fail_msg("process group %d still there after %d s", (int)pgid,
		 seconds);
}

static bool group_alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0;
}

/* Whether process `pid` is there and no zombie. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z';
}

/* The pid a program wrote into `path` (waited for). */
static pid_t pid_in(const char *path)
{
	for (int i = 0; i < WAIT_S * 50; i++) {
		FILE *f = fopen(path, "r");
		long pid = 0;
		int got = f ? fscanf(f, "%ld\n", &pid) : 0;

		if (f)
			fclose(f);
		if (got == 1 && pid > 0)
			return (pid_t)pid;
		nap();
	}
	fail_msg("no pid in %s after %d s", path, WAIT_S);
	return 0;
}

/* The pid the job of `node` (run 1) wrote into its folder's `name`. */
static pid_t job_file_pid(struct fixture *fx, const char *node,
			  const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/s1-%lld/run-1/%s/%s", fx->work,
		 (long long)fx->s.id, node, name);
	return pid_in(path);
}

static void wait_pid_gone(pid_t pid, int seconds)
{
	for (int i = 0; i < seconds * 50 && pid_alive(pid); i++)
		nap();
	if (pid_alive(pid)) {
		kill(pid, SIGKILL);
		fail_msg("process %d still there after %d s", (int)pid, seconds);
	}
}

/* ---- a graph that runs ------------------------------------------------- */

/*
 * a -> b, a -> c, b/c -> d (the seed-000 form).  a waits for GATE, so
 * the test sees it running and the others queued; each job appends its
 * id to ORDER; the edges hand a's data.json to b and c, their
 * energy.json to d.
 */
static const char diamond_graph[] =
	"{'nodes': ["
	" {'id': 'a', 'node_uuid': '7fc4da3d-1a34-504c-98cd-40e33bff838d',"
	"  'label': 'gen', 'system_values': {'machine_type': 'c2_m8_cpu'},"
	"  'input_parameters': [{'name': 'formula', 'type': 'str',"
	"   'value': 'Si'}], 'output_parameters': []},"
	" {'id': 'b', 'label': 'relax', 'input_parameters': ["
	"   {'name': 'structure', 'type': 'str', 'value': null},"
	"   {'name': 'temp', 'type': 'int', 'value': 300}]},"
	" {'id': 'c', 'label': 'relax', 'input_parameters': ["
	"   {'name': 'structure', 'type': 'str', 'value': null},"
	"   {'name': 'temp', 'type': 'int', 'value': 400}]},"
	" {'id': 'd', 'label': 'join', 'input_parameters': ["
	"   {'name': 'x', 'value': null}, {'name': 'y', 'value': null}]}],"
	" 'edges': ["
	" {'id': 'e1', 'source_node_id': 'a', 'source_parameter_name': 'data',"
	"  'target_node_id': 'b', 'target_parameter_name': 'structure'},"
	" {'id': 'e2', 'source_node_id': 'a', 'source_parameter_name': 'data',"
	"  'target_node_id': 'c', 'target_parameter_name': 'structure'},"
	" {'id': 'e3', 'source_node_id': 'b', 'source_parameter_name': 'energy',"
	"  'target_node_id': 'd', 'target_parameter_name': 'x'},"
	" {'id': 'e4', 'source_node_id': 'c', 'source_parameter_name': 'energy',"
	"  'target_node_id': 'd', 'target_parameter_name': 'y'}],"
	" 'meta': {'template_uuid': '68a4ed99-9fff-4b1a-9b47-98a8624b5143'}}";

static void diamond_tools(struct fixture *fx, char *out, size_t size)
{
	snprintf(out, size,
		"{'gen': {'command': ['sh', '-c', 'while [ ! -e $0 ]; do sleep"
		" 0.02; done; echo a >> $1; printf %%s $2 > data.json;"
		" echo out-line; echo err-line >&2', '%s/GATE', '%s/ORDER',"
		" '{{ formula }}'],"
		"  'outputs': {'data': 'data.json'}},"
		" 'relax': {'command': ['sh', '-c', 'echo $0 >> $1; cat $2 >"
		" energy.json; echo $3 >> energy.json', '{{ node.id }}',"
		" '%s/ORDER', '{{ structure }}', '{{ temp }}'],"
		"  'outputs': {'energy': 'energy.json'}},"
		" 'join': {'command': ['sh', '-c', 'echo $0 >> $1; cat $2 $3 >"
		" joined.txt', '{{ node.id }}', '%s/ORDER', '{{ x }}',"
		" '{{ y }}'],"
		"  'outputs': {'joined': 'joined.txt'}}}",
		fx->dir, fx->dir, fx->dir, fx->dir);
}

static void test_graph_runs(void **state)
{
	static const char *const nodes[] = { "a", "b", "c", "d" };
	struct fixture *fx = *state;
	char tools[4096], word[64], path[256], msg[FERR_MESSAGE_MAX];
	struct ferr err = FERR_INIT;
	struct sbuf s = SBUF_INIT;
	size_t changed;
	json_t *r;
	FILE *f;

	diamond_tools(fx, tools, sizeof(tools));
	host_lock(fx);
	{
		assert_int_equal(submit_locked(fx, &fx->s, diamond_graph, tools,
					       &err), 0);
		/* before the monitor can take a job: all queued, shown */
		for (size_t i = 0; i < 4; i++) {
			assert_int_equal(node_file_locked(fx, nodes[i],
							  "state", &s), 0);
			assert_memory_equal(s.buf, "queued\nqueued ", 14);
		}
		assert_true(fx->nchanged > 0);
	}
	host_unlock(fx);
	for (size_t i = 0; i < 4; i++) {
		char *text = state_text(fx, nodes[i], "queued");

		assert_non_null(strstr(text, "\nqueued "));
		free(text);
		/* the script shown is the batch script that runs */
		assert_int_equal(node_file(fx, nodes[i], "script", &s), 0);
		assert_memory_equal(s.buf, "#!/bin/bash\n", 12);
		snprintf(path, sizeof(path), "cd %s/s1-%lld/run-1/%s || exit 1\n",
			 fx->work, (long long)fx->s.id, nodes[i]);
		if (!strstr(s.buf, path))
			fail_msg("%s: script without \"%s\": %s", nodes[i],
				 path, s.buf);
	}
	expect_log(fx, "ctl: graph submitted: 4 jobs (local)");


	/* a runs (waiting for the gate); what needs it waits */
	wait_state(fx, "a", "running");
	{
		char *text = state_text(fx, "a", "running");
		char *id = state_value(text, "scheduler_id");

		assert_non_null(id);
		assert_true(atol(id) > 1);
		assert_int_equal(atol(id), job_pid(fx, "a"));
		free(id);
		expect_key("a", text, "exit_code", NULL);
		expect_key("a", text, "ended", NULL);
		free(text);
	}
	for (size_t i = 1; i < 4; i++) {
		row_state(fx, nodes[i], word, sizeof(word));
		assert_string_equal(word, "queued");
	}
	r = report(fx);
	expect_report(r, "running", "jobs=4 done=0 running=1");
	assert_string_equal(json_string_value(json_object_get(r, "executor")),
			    "local");
	assert_true(json_is_null(json_object_get(r, "ended")));
	assert_true(is_iso(json_string_value(json_object_get(r, "started"))));
	json_decref(r);

	/* while it goes on: busy nodes, and no second run */
	host_lock(fx);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, "b", &err), -EBUSY);
	assert_string_equal(err.message, "node \"b\" is in the running job "
			    "graph (see jobs/b/state; echo cancel > ctl stops "
			    "the graph)");
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, "a", &err), -EBUSY);
	ferr_clear(&err);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, "zz", &err), 0);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, NULL, &err), -EBUSY);
	assert_string_equal(err.message, "the job graph is running (echo "
			    "cancel > ctl stops it)");
	host_unlock(fx);
	assert_int_equal(submit(fx, diamond_graph, tools, msg, sizeof(msg)),
			 -EBUSY);
	assert_string_equal(msg, "the job graph is running (echo cancel > ctl "
			    "stops it)");
	/* the refused submit left the run as it was */
	row_state(fx, "a", word, sizeof(word));
	assert_string_equal(word, "running");

	host_lock(fx);
	changed = fx->nchanged;
	host_unlock(fx);
	snprintf(path, sizeof(path), "%s/GATE", fx->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	r = wait_end(fx);
	expect_report(r, "done",
		      "jobs=4 done=4 failed=0 skipped=0 cancelled=0 running=0");
	assert_true(is_iso(json_string_value(json_object_get(r, "ended"))));
	json_decref(r);

	for (size_t i = 0; i < 4; i++) {
		char *text = state_text(fx, nodes[i], "done");

		row_state(fx, nodes[i], word, sizeof(word));
		assert_string_equal(word, "done");
		expect_key(nodes[i], text, "exit_code", "0");
		expect_key(nodes[i], text, "message", NULL);
		assert_non_null(strstr(text, "\nqueued "));
		assert_non_null(strstr(text, "\nstarted "));
		assert_non_null(strstr(text, "\nended "));
		assert_null(strstr(text, "not_brought"));
		free(text);
	}
	/* dependency order: a first, d last, b and c between */
	{
		char order[64] = "";

		snprintf(path, sizeof(path), "%s/ORDER", fx->dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_int_equal(fread(order, 1, sizeof(order) - 1, f), 8);
		fclose(f);
		if (strcmp(order, "a\nb\nc\nd\n") && strcmp(order, "a\nc\nb\nd\n"))
			fail_msg("jobs ran in the order %s", order);
	}
	/* what they left, brought under the outputs' base names */
	assert_int_equal(node_file(fx, "a", "stdout", &s), 0);
	assert_string_equal(s.buf, "out-line\n");
	assert_int_equal(node_file(fx, "a", "stderr", &s), 0);
	assert_string_equal(s.buf, "err-line\n");
	assert_int_equal(node_file(fx, "b", "stdout", &s), 0);
	assert_string_equal(s.buf, "");
	assert_int_equal(node_file(fx, "a", "data.json", &s), 0);
	assert_string_equal(s.buf, "Si");
	assert_int_equal(node_file(fx, "b", "energy.json", &s), 0);
	assert_string_equal(s.buf, "Si300\n");
	assert_int_equal(node_file(fx, "c", "energy.json", &s), 0);
	assert_string_equal(s.buf, "Si400\n");
	assert_int_equal(node_file(fx, "d", "joined.txt", &s), 0);
	assert_string_equal(s.buf, "Si300\nSi400\n");

	host_lock(fx);
	assert_true(fx->nchanged > changed);
	host_unlock(fx);
	expect_log(fx, "jobs/a: running\n");
	expect_log(fx, "jobs/a: done\n");
	expect_log(fx, "jobs/d: done\n");
	expect_log(fx, "ctl: graph done\n");

	/* after the end nothing is busy */
	host_lock(fx);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, "b", &err), 0);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, NULL, &err), 0);
	host_unlock(fx);
	sbuf_release(&s);
}

/* ---- a job that fails ---------------------------------------------------- */

static void test_failure_skips(void **state)
{
	struct fixture *fx = *state;
	json_t *r;
	char *text;

	/* a -> b -> c fail with a; x, alone, runs */
	submit_ok(fx,
		"{'nodes': [{'id': 'a', 'label': 'bad'}, {'id': 'b', 'label': 'ok',"
		"  'input_parameters': [{'name': 'src', 'value': null}]},"
		" {'id': 'c', 'label': 'ok',"
		"  'input_parameters': [{'name': 'src', 'value': null}]},"
		" {'id': 'x', 'label': 'ok',"
		"  'input_parameters': [{'name': 'src', 'value': 'v'}]}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'a',"
		"  'source_parameter_name': 'out_bad', 'target_node_id': 'b',"
		"  'target_parameter_name': 'src'},"
		" {'id': 'e2', 'source_node_id': 'b',"
		"  'source_parameter_name': 'out_ok', 'target_node_id': 'c',"
		"  'target_parameter_name': 'src'}]}",
		"{'bad': {'command': ['sh', '-c', 'echo oops >&2; exit 3']},"
		" 'ok': {'command': ['true', '{{ src }}']}}");
	r = wait_end(fx);
	expect_report(r, "failed",
		      "jobs=4 done=1 failed=1 skipped=2 running=0");
	json_decref(r);

	wait_state(fx, "a", "failed");
	text = state_text(fx, "a", "failed");
	expect_key("a", text, "exit_code", "3");
	expect_key("a", text, "message", "exited with 3");
	free(text);
	for (int i = 0; i < 2; i++) {
		const char *node = i ? "c" : "b";

		wait_state(fx, node, "skipped");
		text = state_text(fx, node, "skipped");
		expect_key(node, text, "message", "upstream node a failed");
		expect_key(node, text, "exit_code", NULL);
		expect_key(node, text, "started", NULL);
		free(text);
	}
	wait_state(fx, "x", "done");
	{
		struct sbuf s = SBUF_INIT;

		assert_int_equal(node_file(fx, "a", "stderr", &s), 0);
		assert_string_equal(s.buf, "oops\n");
		/* a skipped job never ran: nothing of it to bring */
		assert_int_equal(node_file(fx, "b", "stdout", &s), -ENOENT);
		sbuf_release(&s);
	}
	expect_log(fx, "jobs/a: failed: exited with 3\n");
	expect_log(fx, "jobs/b: skipped: upstream node a failed\n");
	expect_log(fx, "ctl: graph failed\n");

	/* a new run: jobs/ shows only its nodes, in a new run folder */
	submit_ok(fx, "{'nodes': [{'id': 'x', 'label': 'ok',"
		  "  'input_parameters': [{'name': 'src', 'value': 'w'}]}],"
		  " 'edges': []}", "{'ok': {'command': ['true', '{{ src }}']}}");
	wait_state(fx, "x", "done");
	{
		struct sbuf s = SBUF_INIT;
		struct tree_dir dir;
		char want[256];

		host_lock(fx);
		assert_int_equal(tree_readdir(fx->t, fx->s.jobs_ino, &dir), 0);
		host_unlock(fx);
		assert_int_equal(dir.n, 1);
		assert_string_equal(dir.ents[0].name, "x");
		tree_dir_free(&dir);
		assert_int_equal(node_file(fx, "x", "script", &s), 0);
		snprintf(want, sizeof(want), "cd %s/s1-%lld/run-2/x || exit",
			 fx->work, (long long)fx->s.id);
		assert_non_null(strstr(s.buf, want));
		sbuf_release(&s);
	}
	r = wait_end(fx);
	expect_report(r, "done", "jobs=1");
	json_decref(r);
}

/* ---- cancel ---------------------------------------------------------------- */

static void test_cancel(void **state)
{
	struct fixture *fx = *state;
	static const char *const nodes[] = { "p", "q", "w" };
	char ready[256];
	pid_t p, q;
	json_t *r;

	/* nothing goes on yet: nothing to stop */
	host_lock(fx);
	assert_int_equal(jobs_cancel(fx->jobs, fx->s.id), 0);
	host_unlock(fx);
	/* p sleeps; q ignores SIGTERM (the SIGKILL after the grace ends
	 * it); w waits for p */
	submit_ok(fx,
		"{'nodes': [{'id': 'p', 'label': 'nap'}, {'id': 'q', 'label': 'stub'},"
		" {'id': 'w', 'label': 'nap',"
		"  'input_parameters': [{'name': 'src', 'value': null}]}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'p',"
		"  'source_parameter_name': 'out_nap', 'target_node_id': 'w',"
		"  'target_parameter_name': 'src'}]}",
		"{'nap': {'command': ['sleep', '60']},"
		" 'stub': {'command': ['sh', '-c', 'trap \\\"\\\" TERM; touch ready;"
		" sleep 60;"
		" sleep 60']}}");
	wait_state(fx, "p", "running");
	wait_state(fx, "q", "running");
	p = job_pid(fx, "p");
	q = job_pid(fx, "q");
	/* q ignores SIGTERM only once its trap ran */
	snprintf(ready, sizeof(ready), "%s/s1-%lld/run-1/q/ready", fx->work,
		 (long long)fx->s.id);
	for (int i = 0; i < WAIT_S * 50 && access(ready, F_OK); i++)
		nap();
	assert_int_equal(access(ready, F_OK), 0);
	assert_true(group_alive(p));
	assert_true(group_alive(q));

	host_lock(fx);
	assert_int_equal(jobs_cancel(fx->jobs, fx->s.id), 1);
	host_unlock(fx);
	for (size_t i = 0; i < 3; i++) {
		char *text;

		wait_state(fx, nodes[i], "cancelled");
		text = state_text(fx, nodes[i], "cancelled");
		assert_non_null(strstr(text, "\nended "));
		free(text);
	}
	r = report(fx);
	expect_report(r, "cancelled", "cancelled=3 running=0");
	json_decref(r);
	expect_log(fx, "jobs/p: cancelled\n");
	expect_log(fx, "ctl: graph cancelled\n");
	/* SIGTERM, then SIGKILL 5 s later: both groups go */
	wait_group_gone(p, 15);
	wait_group_gone(q, 15);
	/* a cancelled run stays cancelled (w never starts) */
	host_lock(fx);
	assert_int_equal(jobs_cancel(fx->jobs, fx->s.id), 0);
	assert_int_equal(jobs_node_busy(fx->st, fx->s.id, NULL, NULL), 0);
	host_unlock(fx);
	assert_int_equal(row_int(fx, "w", "started_ns IS NULL"), 1);
}

/* ---- refusals -------------------------------------------------------------- */

static void test_refused(void **state)
{
	struct fixture *fx = *state;
	char msg[FERR_MESSAGE_MAX];
	struct tree_dir dir;
	json_t *r = NULL;
	int64_t when = 0;

	assert_int_equal(submit(fx, "{'nodes': [{'id': 'n1', 'label': 'relax'}],"
				" 'edges': []}", "{'relax': {'outputs': {}}}",
				msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "node \"n1\": its label \"relax\" has no "
			    "command in the tool map (tools.json)");
	assert_int_equal(submit(fx, "{'nodes': [], 'edges': []}", "{}", msg,
				sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "the graph has no nodes");
	host_lock(fx);
	assert_int_equal(jobs_report(fx->st, fx->s.id, &r, &when), 0);
	assert_null(r);
	assert_int_equal(unit_sql_int(store_db(fx->st), "SELECT count(*) FROM"
				      " graph_jobs"), 0);
	assert_int_equal(tree_readdir(fx->t, fx->s.jobs_ino, &dir), 0);
	assert_int_equal(dir.n, 0);
	tree_dir_free(&dir);
	host_unlock(fx);
}

/* ---- a remount takes up what goes on -------------------------------------- */

static void test_reattach(void **state)
{
	struct fixture *fx = *state;
	struct sbuf s = SBUF_INIT;
	char word[64], tools[1024], *text;
	pid_t early, late;
	json_t *r;

	/* `early` ends while no monitor runs, `late` after the next one
	 * started: each waits for its gate file */
	snprintf(tools, sizeof(tools), "{'slow': {'command': ['sh', '-c',"
		 " 'while [ ! -e $0 ]; do sleep 0.02; done; echo $1 > out.txt;"
		 " echo bye', '%s/{{ gate }}', '{{ s }}'],"
		 " 'outputs': {'out': 'out.txt'}}}", fx->dir);
	submit_ok(fx, "{'nodes': [{'id': 'early', 'label': 'slow',"
		  "  'input_parameters': [{'name': 's', 'value': '1'},"
		  "   {'name': 'gate', 'value': 'GATE1'}]},"
		  " {'id': 'late', 'label': 'slow',"
		  "  'input_parameters': [{'name': 's', 'value': '4'},"
		  "   {'name': 'gate', 'value': 'GATE2'}]}],"
		  " 'edges': []}", tools);
	wait_state(fx, "early", "running");
	wait_state(fx, "late", "running");
	early = job_pid(fx, "early");
	late = job_pid(fx, "late");
	jobs_stop(fx->jobs);
	fx->jobs = NULL;
	/* the jobs go on without a monitor; their rows wait */
	unit_put(fx->dir, "GATE1", "");
	wait_group_gone(early, 10);
	assert_true(group_alive(late));
	row_state(fx, "early", word, sizeof(word));
	assert_string_equal(word, "running");
	start(fx);
	unit_put(fx->dir, "GATE2", "");
	for (int i = 0; i < 2; i++) {
		const char *node = i ? "late" : "early";

		wait_state(fx, node, "done");
		text = state_text(fx, node, "done");
		expect_key(node, text, "exit_code", "0");
		free(text);
		assert_int_equal(node_file(fx, node, "out.txt", &s), 0);
		assert_string_equal(s.buf, i ? "4\n" : "1\n");
		assert_int_equal(node_file(fx, node, "stdout", &s), 0);
		assert_string_equal(s.buf, "bye\n");
	}
	r = wait_end(fx);
	expect_report(r, "done", "done=2");
	json_decref(r);
	sbuf_release(&s);
}

/* ---- what is brought and what is not --------------------------------------- */

static void test_outputs(void **state)
{
	struct fixture *fx = *state;
	char tools[2048], header[512], *text;
	struct sbuf s = SBUF_INIT;
	size_t total = (5u << 20) + 123, cut = total - JOBS_LOG_MAX;
	size_t hl;

	/* stdout: "first\n", then x's, then "END\n": `total` bytes */
	snprintf(tools, sizeof(tools),
		"{'t': {'command': ['sh', '-c', 'echo secret > $0/outside.txt;"
		" ln -s $0/outside.txt link.txt; ln -s ok.txt inner.txt;"
		" ln $0/outside.txt hard.txt;"
		" truncate -s 65M big.bin;"
		" echo fine > ok.txt; mkdir sub; echo deep > sub/deep.txt;"
		" echo twin > sub/ok.txt;"
		" mkdir adir; mkfifo pipe; echo mine > state; echo first;"
		" head -c $(($1 - 10)) /dev/zero |"
		" tr \\\"\\\\\\\\000\\\" x; echo END', '%s', '%zu'],"
		"  'outputs': {'link': 'link.txt', 'inner': 'inner.txt',"
		"   'hard': 'hard.txt',"
		"   'big': 'big.bin',"
		"   'ok': 'ok.txt', 'deep': 'sub/deep.txt', 'adir': 'adir',"
		"   'gone': 'missing.txt', 'st': 'state',"
		"   'fifo': 'pipe', 'twin': 'sub/ok.txt'}}}", fx->dir, total);
	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 't'}], 'edges': []}",
		  tools);
	wait_state(fx, "n", "done");
	text = state_text(fx, "n", "done");
	if (!strstr(text, "\nnot_brought link (a symbolic link)\n") ||
	    !strstr(text, "\nnot_brought inner (a symbolic link)\n") ||
	    !strstr(text, "\nnot_brought hard (a hard link)\n") ||
	    !strstr(text, "\nnot_brought big (over 64 MiB)\n") ||
	    !strstr(text, "\nnot_brought adir (not a regular file)\n") ||
	    !strstr(text, "\nnot_brought gone (no such file)\n") ||
	    !strstr(text, "\nnot_brought fifo (not a regular file)\n"))
		fail_msg("state: %s", text);
	assert_null(strstr(text, "not_brought ok"));
	assert_null(strstr(text, "not_brought deep"));
	assert_null(strstr(text, "not_brought st"));
	free(text);
	assert_int_equal(node_file(fx, "n", "link.txt", &s), -ENOENT);
	assert_int_equal(node_file(fx, "n", "inner.txt", &s), -ENOENT);
	assert_int_equal(node_file(fx, "n", "hard.txt", &s), -ENOENT);
	assert_int_equal(node_file(fx, "n", "big.bin", &s), -ENOENT);
	assert_int_equal(node_file(fx, "n", "adir", &s), -ENOENT);
	assert_int_equal(node_file(fx, "n", "ok.txt", &s), 0);
	assert_string_equal(s.buf, "fine\n");
	assert_int_equal(node_file(fx, "n", "deep.txt", &s), 0);
	assert_string_equal(s.buf, "deep\n");
	/* an output named like a file of flowfs's does not replace it */
	assert_int_equal(node_file(fx, "n", "output-state", &s), 0);
	assert_string_equal(s.buf, "mine\n");
	/* nor one with an earlier output's base name: both are there */
	assert_int_equal(node_file(fx, "n", "ok.txt", &s), 0);
	assert_string_equal(s.buf, "fine\n");
	assert_int_equal(node_file(fx, "n", "output-ok.txt", &s), 0);
	assert_string_equal(s.buf, "twin\n");

	/* stdout: its last 4 MiB after a line saying how much was cut */
	assert_int_equal(node_file(fx, "n", "stdout", &s), 0);
	snprintf(header, sizeof(header), "[flowfs: the first %zu bytes are "
		 "cut; the whole file is %s/s1-%lld/run-1/n/.flowfs-stdout]\n",
		 cut, fx->work, (long long)fx->s.id);
	hl = strlen(header);
	if (s.len < hl || memcmp(s.buf, header, hl))
		fail_msg("stdout starts with \"%.*s\", not \"%s\"",
			 (int)(s.len < hl ? s.len : hl), s.buf, header);
	assert_int_equal(s.len, hl + JOBS_LOG_MAX);
	assert_memory_equal(s.buf + s.len - 5, "xEND\n", 5);
	assert_int_equal(strspn(s.buf + hl, "x"), JOBS_LOG_MAX - 4);
	/* stderr is small: whole, no header */
	assert_int_equal(node_file(fx, "n", "stderr", &s), 0);
	assert_string_equal(s.buf, "");
	sbuf_release(&s);
}

/* ---- what a job leaves running ------------------------------------------ */

/* A process a local job started and left running ends with the job, as
 * Slurm ends a job's processes. */
static void test_leftovers(void **state)
{
	struct fixture *fx = *state;
	struct sbuf s = SBUF_INIT;
	pid_t bg;

	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 'bg'}], 'edges': []}",
		  "{'bg': {'command': ['sh', '-c', 'sleep 300 >/dev/null 2>&1 &"
		  " echo $! > bg.pid'], 'outputs': {'pid': 'bg.pid'}}}");
	wait_state(fx, "n", "done");
	assert_int_equal(node_file(fx, "n", "bg.pid", &s), 0);
	bg = (pid_t)atol(s.buf);
	assert_true(bg > 1);
	for (int i = 0; i < 500 && kill(bg, 0) == 0; i++)
		nap();
	if (kill(bg, 0) == 0)
		fail_msg("the job's sleep %d outlived it", (int)bg);
	sbuf_release(&s);
}

/* ---- the environment --------------------------------------------------- */

static void test_environment(void **state)
{
	struct fixture *fx = *state;
	struct sbuf s = SBUF_INIT;

	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 'env'}], 'edges': []}",
		  "{'env': {'command': ['sh', '-c', 'env > env.txt'],"
		  " 'outputs': {'env': 'env.txt'}}}");
	wait_state(fx, "n", "done");
	assert_int_equal(node_file(fx, "n", "env.txt", &s), 0);
	if (strstr(s.buf, "FLOWFS_") || strstr(s.buf, "secret"))
		fail_msg("the job saw a FLOWFS_ variable:\n%s", s.buf);
	assert_non_null(strstr(s.buf, "JOBS_UNIT_MARK=kept\n"));
	sbuf_release(&s);
}

/* ---- a reused pid ------------------------------------------------------- */

/*
 * Staged: the row of a running job is given another start time while no
 * monitor runs, as if its pid now were another process's.  The next
 * monitor must not take that process for the job: the job ended without
 * an exit status, and the process is left alone.
 */
/* Submit one `sleep 60` node, wait for it to run, stop the monitor and
 * give its row another start time: its pid. */
static pid_t stage_reused(struct fixture *fx, const char *node)
{
	char graph[256];
	pid_t pid;

	snprintf(graph, sizeof(graph), "{'nodes': [{'id': '%s',"
		 " 'label': 'nap'}], 'edges': []}", node);
	submit_ok(fx, graph, "{'nap': {'command': ['sleep', '60']}}");
	wait_state(fx, node, "running");
	pid = job_pid(fx, node);
	assert_true(row_int(fx, node, "pid_start") > 0);
	jobs_stop(fx->jobs);
	fx->jobs = NULL;
	host_lock(fx);
	assert_int_equal(store_run(fx->st, "UPDATE graph_jobs SET pid_start ="
				   " pid_start + 1 WHERE session = ?1",
				   STORE_INT(fx->s.id)), 0);
	host_unlock(fx);
	return pid;
}

static void test_pid_reuse(void **state)
{
	struct fixture *fx = *state;
	char *text;
	pid_t pid;

	/* the next monitor finds the job gone, without an exit status */
	pid = stage_reused(fx, "n");
	start(fx);
	wait_state(fx, "n", "failed");
	text = state_text(fx, "n", "failed");
	expect_key("n", text, "message", "ended without an exit status "
		   "(killed, or the machine restarted)");
	expect_key("n", text, "exit_code", NULL);
	free(text);
	/* "another process's": not signalled */
	assert_true(group_alive(pid));
	kill(-pid, SIGKILL);
	wait_group_gone(pid, 10);

	/* a cancel before the monitor's first look (it waits for the
	 * lock): the job is cancelled, the process not signalled */
	pid = stage_reused(fx, "m");
	host_lock(fx);
	start(fx);
	assert_int_equal(jobs_cancel(fx->jobs, fx->s.id), 1);
	host_unlock(fx);
	wait_state(fx, "m", "cancelled");
	/* past the SIGKILL's grace, were one wrongly due */
	for (int i = 0; i < 7 * 50; i++)
		nap();
	assert_true(group_alive(pid));
	kill(-pid, SIGKILL);
	wait_group_gone(pid, 10);
}

/* ---- time_minutes ---------------------------------------------------------- */

/*
 * The smallest time_minutes is a minute: the row's limit is set to 1 s
 * in the same lock hold as the submit, before the monitor reads it.
 */
static void test_time_limit(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	char *text;
	pid_t pid;

	host_lock(fx);
	assert_int_equal(submit_locked(fx, &fx->s, "{'nodes': [{'id': 'n',"
				       " 'label': 'nap'}], 'edges': []}",
				       "{'nap': {'command': ['sh', '-c',"
				       " 'setsid sleep 60 </dev/null >/dev/null"
				       " 2>&1 & echo $! > esc.pid; sleep 60'],"
				       " 'resources': {'time_minutes': 1}}}",
				       &err), 0);
	assert_int_equal(unit_sql_int(store_db(fx->st), "SELECT time_limit_s"
				      " FROM graph_jobs"), 60);
	assert_int_equal(store_run(fx->st, "UPDATE graph_jobs SET"
				   " time_limit_s = 1 WHERE session = ?1",
				   STORE_INT(fx->s.id)), 0);
	host_unlock(fx);
	/* it may be over before a look sees it running */
	pid = wait_pid(fx, "n");
	wait_state(fx, "n", "failed");
	text = state_text(fx, "n", "failed");
	expect_key("n", text, "exit_code", NULL);
	{
		char *m = state_value(text, "message");

		assert_non_null(m);
		if (strncmp(m, "stopped after ", 14) ||
		    !strstr(m, "(its time_minutes)"))
			fail_msg("message \"%s\"", m);
		free(m);
	}
	free(text);
	expect_log(fx, "jobs/n: running: stopping: its time_minutes is up\n");
	wait_group_gone(pid, 10);
	/* what left the job's group was stopped with it (issue 25) */
	assert_false(pid_alive(job_file_pid(fx, "n", "esc.pid")));
}

/* ---- slots ------------------------------------------------------------------ */

/* With one slot, the jobs of two sessions run one at a time: in LOG,
 * each start is followed by its own end. */
static void test_slots(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct session_info s2;
	char tools[1024], path[256], line[64], want[64];
	int starts = 0;
	json_t *r;
	FILE *f;

	jobs_stop(fx->jobs);
	fx->opt.slots = 1;
	start(fx);
	host_lock(fx);
	assert_int_equal(session_create(fx->st, fx->t, "s2", 0755, getuid(),
					getgid(), &s2, NULL), 0);
	fx->other = s2.id;
	host_unlock(fx);
	snprintf(tools, sizeof(tools), "{'t': {'command': ['sh', '-c', 'echo"
		 " start $0 >> $1; sleep 0.3; echo end $0 >> $1',"
		 " '{{ node.id }}', '%s/LOG']}}", fx->dir);
	submit_ok(fx, "{'nodes': [{'id': 'a', 'label': 't'},"
		  " {'id': 'b', 'label': 't'}], 'edges': []}", tools);
	host_lock(fx);
	assert_int_equal(submit_locked(fx, &s2, "{'nodes': [{'id': 'c',"
				       " 'label': 't'}], 'edges': []}", tools,
				       &err), 0);
	host_unlock(fx);
	r = wait_end(fx);
	assert_int_equal(report_int(r, "done"), 2);
	json_decref(r);
	r = wait_end_of(fx, s2.id);
	assert_int_equal(report_int(r, "done"), 1);
	json_decref(r);

	snprintf(path, sizeof(path), "%s/LOG", fx->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "start ", 6)) {
			snprintf(want, sizeof(want), "end %s", line + 6);
			starts++;
			if (!fgets(line, sizeof(line), f) || strcmp(line, want))
				fail_msg("a job started while another ran");
		} else {
			fail_msg("LOG: %s", line);
		}
	}
	fclose(f);
	assert_int_equal(starts, 3);
}

/* ---- a job that is gone at once ----------------------------------------- */

/*
 * A job whose process is gone (reaped) before its start time is read has
 * none (pid_start -1); with no exit file it ended without one.  Staged:
 * a running job's row given -1 while no monitor runs, its process group
 * killed.  And for real: its stdout cannot be opened (a folder is in the
 * way), so it ends before its script runs.
 */
static void test_gone_at_once(void **state)
{
	struct fixture *fx = *state;
	char path[256], *text;
	pid_t pid;

	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 'nap'}], 'edges': []}",
		  "{'nap': {'command': ['sleep', '60']}}");
	wait_state(fx, "n", "running");
	pid = job_pid(fx, "n");
	jobs_stop(fx->jobs);
	fx->jobs = NULL;
	host_lock(fx);
	assert_int_equal(store_run(fx->st, "UPDATE graph_jobs SET pid_start ="
				   " -1 WHERE session = ?1",
				   STORE_INT(fx->s.id)), 0);
	host_unlock(fx);
	kill(-pid, SIGKILL);
	wait_group_gone(pid, 10);
	start(fx);
	wait_state(fx, "n", "failed");
	text = state_text(fx, "n", "failed");
	expect_key("n", text, "message", "ended without an exit status "
		   "(killed, or the machine restarted)");
	free(text);

	snprintf(path, sizeof(path), "%s/s1-%lld/run-2/m/.flowfs-stdout",
		 fx->work, (long long)fx->s.id);
	unit_put(path, "x", "");
	submit_ok(fx, "{'nodes': [{'id': 'm', 'label': 'nap'}], 'edges': []}",
		  "{'nap': {'command': ['sleep', '60']}}");
	wait_state(fx, "m", "failed");
}

/* ---- how a local job is started ------------------------------------------ */

/*
 * The job is its own session and process group (its pid the row's), not
 * a child of the daemon, with stdin /dev/null and no descriptor of the
 * daemon's beyond 0, 1 and 2.
 */
static void test_process(void **state)
{
	struct fixture *fx = *state;
	struct sbuf s = SBUF_INIT;
	long sid = 0, pgid = 0, parent = 0;
	pid_t pid;
	/* a descriptor without O_CLOEXEC, as a library might leave one */
	int leak = open(fx->path, O_RDONLY);

	assert_true(leak >= 0);
	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 'p'}], 'edges': []}",
		  "{'p': {'command': ['sh', '-c', 'cut -d \\\" \\\" -f4-6"
		  " /proc/$$/stat > ids.txt; cut -d \\\" \\\" -f4"
		  " /proc/$PPID/stat >> ids.txt; readlink /proc/$$/fd/0 >"
		  " stdin.txt; for f in /proc/$$/fd/*; do readlink $f || :; done >"
		  " fds.txt'],"
		  " 'outputs': {'ids': 'ids.txt', 'stdin': 'stdin.txt',"
		  "  'fds': 'fds.txt'}}}");
	wait_state(fx, "n", "done");
	close(leak);
	pid = job_pid(fx, "n");
	assert_int_equal(node_file(fx, "n", "ids.txt", &s), 0);
	/* sh's parent, group, session; then bash's parent */
	if (sscanf(s.buf, "%*d %ld %ld %ld", &pgid, &sid, &parent) != 3)
		fail_msg("ids.txt: %s", s.buf);
	assert_int_equal(pgid, pid);
	assert_int_equal(sid, pid);
	assert_true(parent != (long)getpid());
	assert_int_equal(node_file(fx, "n", "stdin.txt", &s), 0);
	assert_string_equal(s.buf, "/dev/null\n");
	/* sh's own: 0, 1, 2, a copy of 0 dash keeps, fds.txt itself */
	assert_int_equal(node_file(fx, "n", "fds.txt", &s), 0);
	for (char *line = s.buf, *nl; *line; line = nl + 1) {
		size_t len;

		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		len = strlen(line);
		if (strcmp(line, "/dev/null") &&
		    (len < 8 || strcmp(line + len - 8, "/fds.txt")) &&
		    (len < 15 || (strcmp(line + len - 15, "/.flowfs-stdout") &&
				  strcmp(line + len - 15, "/.flowfs-stderr"))))
			fail_msg("the job has the daemon's %s open", line);
	}
	sbuf_release(&s);
}

/* ---- issue 25: a cancel that leaves nothing -------------------------------- */

/*
 * A job whose process left its group (setsid) and ignores SIGTERM: once
 * the cancelled job reads "cancelled", that process is gone too.  (How
 * long it lived between is the supervisor's: up to the 5 s grace, or
 * less when the job's own end comes first, as the job script's shell
 * ends at the SIGTERM; so it is not asserted.)
 */
static void test_cancel_takes_everything(void **state)
{
	struct fixture *fx = *state;
	char *text, tools[512], main_sh[512];
	pid_t esc;

	unit_put(fx->dir, "esc.sh", "trap '' TERM\necho $$ > esc.pid\n"
		 "exec sleep 60\n");
	snprintf(main_sh, sizeof(main_sh), "trap '' TERM\n"
		 "setsid sh %s/esc.sh </dev/null >/dev/null 2>&1 &\n"
		 "exec sleep 60\n", fx->dir);
	unit_put(fx->dir, "main.sh", main_sh);
	snprintf(tools, sizeof(tools), "{'x': {'command': ['sh',"
		 " '%s/main.sh']}}", fx->dir);
	submit_ok(fx, "{'nodes': [{'id': 'n', 'label': 'x'}], 'edges': []}",
		  tools);
	wait_state(fx, "n", "running");
	esc = job_file_pid(fx, "n", "esc.pid");
	/* left the job's group */
	assert_true(getpgid(esc) != job_pid(fx, "n"));
	host_lock(fx);
	assert_int_equal(jobs_cancel(fx->jobs, fx->s.id), 1);
	host_unlock(fx);
	wait_state(fx, "n", "cancelled");
	assert_false(pid_alive(esc));
	text = state_text(fx, "n", "cancelled");
	expect_key("n", text, "message", NULL);
	free(text);
	expect_log(fx, "jobs/n: running: stopping: cancelled\n");
	expect_log(fx, "ctl: graph cancelled\n");
}

/* ---- issue 25: the supervisor alone ----------------------------------------- */

struct sup_files {
	char dir[256];
	int dfd, null, out, err;
};

static void sup_files_open(struct fixture *fx, const char *name,
			   struct sup_files *f)
{
	snprintf(f->dir, sizeof(f->dir), "%s/%s", fx->dir, name);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	f->out = openat(f->dfd, "out", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	f->err = openat(f->dfd, "err", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(f->dfd >= 0 && f->null >= 0 && f->out >= 0 &&
		    f->err >= 0);
}

static void sup_files_close(struct sup_files *f)
{
	close(f->dfd);
	close(f->null);
	close(f->out);
	close(f->err);
}

/* supervise_start() of `line` (sh -c) in f's folder. */
static pid_t supervised(struct sup_files *f, const char *line,
			const struct spawn_cred *cred, const struct cgroup *cg)
{
	char *argv[] = { "/bin/sh", "-c", (char *)line, NULL };
	struct supervise sv = {
		.argv = argv, .envp = environ, .dir = f->dfd,
		.fds = { f->null, f->out, f->err, f->null },
		.cred = cred, .cg = cg, .grace_ns = 300000000,
	};
	pid_t sup = 0;
	int status;

	assert_int_equal(supervise_start(&sv, &sup), 0);
	assert_true(sup > 0);
	/* no child of the caller's: nobody has to wait for it */
	assert_int_equal(waitpid(sup, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	return sup;
}

static pid_t file_pid(const struct sup_files *f, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return pid_in(path);
}

/* A setsid process of the job that ignores SIGTERM, the job waiting */
#define ESCAPE "setsid sh -c 'trap \"\" TERM; echo $$ > esc.pid;" \
	" exec sleep 60' </dev/null >/dev/null 2>&1 &" \
	" while [ ! -s esc.pid ]; do sleep 0.02; done; "

static void test_supervisor(void **state)
{
	struct fixture *fx = *state;
	struct sup_files f;
	pid_t sup, esc;

	/* SIGTERM to its group (a cancel): the escaped process too, the
	 * SIGKILL after the grace for what ignores SIGTERM; the supervisor
	 * goes only once it is gone */
	sup_files_open(fx, "sup1", &f);
	sup = supervised(&f, ESCAPE "exec sleep 60", NULL, NULL);
	esc = file_pid(&f, "esc.pid");
	assert_true(getpgid(esc) != sup);
	assert_true(pid_alive(sup));
	assert_int_equal(kill(-sup, SIGTERM), 0);
	wait_pid_gone(sup, WAIT_S);
	assert_false(pid_alive(esc));
	sup_files_close(&f);

	/* the job's end (it fails): what it left ends with it */
	sup_files_open(fx, "sup2", &f);
	sup = supervised(&f, ESCAPE "( setsid sleep 61 & echo $! > esc2.pid );"
			 " exit 3", NULL, NULL);
	esc = file_pid(&f, "esc.pid");
	wait_pid_gone(sup, WAIT_S);
	assert_false(pid_alive(esc));
	assert_false(pid_alive(file_pid(&f, "esc2.pid")));
	sup_files_close(&f);
}

/* As root: the job in a cgroup of its own, removed by the supervisor;
 * and as another user, with no capability. */
static void test_supervisor_as_root(void **state)
{
	struct fixture *fx = *state;
	struct cgroup_base b;
	struct cgroup cg;
	struct ferr err = FERR_INIT;
	struct spawn_cred cred = { .uid = 4242, .gid = 4242 };
	struct sup_files f;
	struct sbuf s = SBUF_INIT;
	char name[64], path[512];
	pid_t sup, esc;

	if (geteuid() != 0)
		skip();
	sup_files_open(fx, "sup3", &f);
	assert_int_equal(chown(f.dir, 4242, 4242), 0);
	sup = supervised(&f, "id -u > id.txt; id -G >> id.txt; grep CapEff"
			 " /proc/self/status >> id.txt", &cred, NULL);
	wait_pid_gone(sup, WAIT_S);
	snprintf(path, sizeof(path), "%s/id.txt", f.dir);
	{
		FILE *in = fopen(path, "r");
		char buf[256] = "";

		assert_non_null(in);
		assert_true(fread(buf, 1, sizeof(buf) - 1, in) > 0);
		fclose(in);
		assert_string_equal(buf, "4242\n4242\nCapEff:\t"
				    "0000000000000000\n");
	}
	sup_files_close(&f);

	if (cgroup_base_find(&b, &err) < 0) {
		print_message("no cgroup: %s\n", err.message);
		return;
	}
	snprintf(name, sizeof(name), "flowfs-unit-job-%d", (int)getpid());
	assert_int_equal(cgroup_make(&b, name, 0, 0, &cg, &err), 0);
	sup_files_open(fx, "sup4", &f);
	sup = supervised(&f, ESCAPE "exec sleep 60", NULL, &cg);
	esc = file_pid(&f, "esc.pid");
	/* in the job's cgroup, though out of its group */
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)esc);
	{
		FILE *in = fopen(path, "r");
		char line[1024];
		bool found = false;

		assert_non_null(in);
		while (fgets(line, sizeof(line), in))
			found = found || strstr(line, name);
		fclose(in);
		assert_true(found);
	}
	assert_int_equal(kill(-sup, SIGTERM), 0);
	wait_pid_gone(sup, WAIT_S);
	assert_false(pid_alive(esc));
	/* the supervisor removed it */
	assert_int_equal(access(cg.dir, F_OK), -1);
	for (int i = 0; i < 2; i++)
		if (cg.procs[i] >= 0)
			close(cg.procs[i]);
	sup_files_close(&f);
	sbuf_release(&s);
}

/* ---- issue 25: the folders of jobs ------------------------------------------- */

static void expect_refused(int ret, const struct ferr *err, const char *part)
{
	assert_int_equal(ret, -EACCES);
	if (!strstr(err->message, part))
		fail_msg("\"%s\" does not say \"%s\"", err->message, part);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_jobdir(void **state)
{
	struct fixture *fx = *state;
	struct jobdir_user u = { geteuid(), getegid(), "me", NULL };
	struct ferr err = FERR_INIT;
	char shared[128], own[160], other[320], path[256], *base = NULL;
	int fd, ret;

	/* the user's own, no one else writes it: the jobs go right in */
	assert_int_equal(chmod(fx->work, 0755), 0);
	assert_int_equal(jobdir_base(fx->work, false, &u, &base, &err), 0);
	assert_string_equal(base, fx->work);
	free(base);

	/* a shared scratch (1777): a folder of the user's in it, 0700 */
	snprintf(shared, sizeof(shared), "%s/shared", fx->dir);
	snprintf(own, sizeof(own), "%s/me", shared);
	assert_int_equal(mkdir(shared, 0700), 0);
	assert_int_equal(chmod(shared, 01777), 0);
	assert_int_equal(jobdir_base(shared, false, &u, &base, &err), 0);
	assert_string_equal(base, own);
	free(base);
	assert_int_equal(mode_of(own), 0700);
	/* there already, and theirs */
	assert_int_equal(jobdir_base(shared, false, &u, &base, &err), 0);
	free(base);

	/* writable by others without the sticky bit */
	assert_int_equal(chmod(shared, 0777), 0);
	ret = jobdir_base(shared, false, &u, &base, &err);
	expect_refused(ret, &err, "has no sticky bit (mode 0777)");
	assert_int_equal(chmod(shared, 01777), 0);

	/* the user's folder a link */
	snprintf(other, sizeof(other), "%s/elsewhere", fx->dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(rmdir(own), 0);
	assert_int_equal(symlink(other, own), 0);
	ret = jobdir_base(shared, false, &u, &base, &err);
	expect_refused(ret, &err, "is a symbolic link");
	assert_int_equal(unlink(own), 0);

	/* the user's folder written by others */
	assert_int_equal(mkdir(own, 0700), 0);
	assert_int_equal(chmod(own, 0777), 0);
	ret = jobdir_base(shared, false, &u, &base, &err);
	expect_refused(ret, &err, "can be written by others (mode 0777)");
	/* by its group alone too: a group is others */
	assert_int_equal(chmod(own, 0770), 0);
	ret = jobdir_base(shared, false, &u, &base, &err);
	expect_refused(ret, &err, "can be written by others (mode 0770)");
	assert_int_equal(chmod(own, 0700), 0);

	/* a level below: a file, a link, a new folder */
	fd = jobdir_open(own, &u, &err);
	assert_true(fd >= 0);
	unit_put(own, "afile", "");
	assert_int_equal(symlink(other, strcat(strcpy(path, own), "/alink")),
			 0);
	ret = jobdir_make(fd, "afile", 0755, "afile", &u, &err);
	expect_refused(ret, &err, "afile is not a folder");
	ret = jobdir_make(fd, "alink", 0755, "alink", &u, &err);
	expect_refused(ret, &err, "alink is a symbolic link");
	ret = jobdir_make(fd, "s-1", 0755, "s-1", &u, &err);
	assert_true(ret >= 0);
	close(ret);
	close(fd);
	/* jobdir_open() of a path with a link in it */
	snprintf(path, sizeof(path), "%s/alink", own);
	ret = jobdir_open(path, &u, &err);
	expect_refused(ret, &err, "is a symbolic link");

	/* a root daemon without --work-dir: the user's home */
	snprintf(path, sizeof(path), "%s/home", fx->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	u.home = path;
	assert_int_equal(jobdir_base(NULL, true, &u, &base, &err), 0);
	snprintf(other, sizeof(other), "%s/.local/state/flowfs/jobs", path);
	assert_string_equal(base, other);
	assert_int_equal(mode_of(base), 0700);
	free(base);
	u.home = NULL;
	ret = jobdir_base(NULL, true, &u, &base, &err);
	expect_refused(ret, &err, "has no home folder to run jobs in");

	if (geteuid() != 0)
		return;
	/* as root: another user's folder is refused, naming its owner;
	 * the folder made for a user is theirs */
	assert_int_equal(chown(own, 4243, 4243), 0);
	ret = jobdir_base(shared, false, &u, &base, &err);
	expect_refused(ret, &err, "belongs to uid 4243, not to me (uid 0)");
	{
		struct jobdir_user v = { 4242, 4242, "v", NULL };
		struct stat st;

		assert_int_equal(jobdir_base(shared, false, &v, &base, &err),
				 0);
		assert_int_equal(lstat(base, &st), 0);
		assert_int_equal(st.st_uid, 4242);
		assert_int_equal(st.st_mode & 07777, 0700);
		free(base);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_graph_runs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failure_skips, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outputs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_environment, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_leftovers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_time_limit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_at_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_takes_everything,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_supervisor, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_supervisor_as_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_jobdir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
