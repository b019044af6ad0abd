/* jobs: the job graph runs; see jobs.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "lib/fclock.h"
#include "lib/fjson.h"
#include "lib/fname.h"
#include "lib/spawn.h"
#include "run/jobdir.h"
#include "run/jobs.h"
#include "run/supervise.h"
#include "graph/jobspec.h"
#include "graph/plan.h"
#include "store/tree.h"

extern char **environ;

#define KILL_GRACE_NS (5LL * 1000000000)
#define COMMAND_TIMEOUT_MS 30000
#define COMMAND_OUTPUT_MAX (256 * 1024)
/* polls a Slurm job may be out of the queue without its exit file
 * before it counts as ended without one (a shared file system lags) */
#define MISSING_POLLS 5

/* A local job being stopped: its state stays "running" with this
 * message until its supervisor, and so every process of it, is gone. */
#define CANCEL_NOTE "stopping: cancelled"
/* What bash runs: the script, read through descriptor 3 and run, with
 * no descriptor of it left open in the job's processes (the file is
 * never opened again by its name) */
#define READ_AND_RUN "IFS= read -r -d '' s <&3; exec 3<&-; eval \"$s\""

struct jobs {
	struct run_host *host;
	struct jobs_options opt;
	char *work_dir;
	unsigned slots;
	bool slurm_going;	/* the last poll saw Slurm jobs: poll slower */
	pthread_t thread;
	pthread_mutex_t mu;	/* guards stop and the lists below */
	bool stop;
	/* the monitor sleeps in poll() on this (a submit, a cancel, a stop
	 * writes it) and on a pidfd of each local job running, so a job's
	 * end starts the next at once, not at the next poll */
	int wake_fd;
	pid_t watch[64];
	size_t nwatch;
	/* Slurm ids cancelled under the lock, for the monitor's scancel */
	char **scancel;
	size_t nscancel;
	/* job row id -> polls missing from squeue */
	json_t *missing;
};

/* ---- small helpers -------------------------------------------------------- */

static void lock(struct jobs *j)
{
	j->host->lock(j->host->ctx);
}

static void unlock(struct jobs *j)
{
	j->host->unlock(j->host->ctx);
}

static void iso_time(int64_t s, char *buf, size_t size)
{
	time_t t = (time_t)s;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ",
					    &tm))
		snprintf(buf, size, "%" PRId64, s);
}

static void wake(struct jobs *j)
{
	uint64_t one = 1;

	/* a full counter already wakes it */
	if (write(j->wake_fd, &one, sizeof(one)) < 0)
		return;
}

static void log_line(struct jobs *j, int64_t session, const char *node,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void log_line(struct jobs *j, int64_t session, const char *node,
		     const char *fmt, ...)
{
	char path[300], msg[700];
	va_list ap;

	if (!j->host->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (node)
		snprintf(path, sizeof(path), "jobs/%s", node);
	else
		snprintf(path, sizeof(path), "ctl");
	j->host->log(j->host->ctx, session, path, msg);
}

/* ---- the files in jobs/<node>/ ------------------------------------------- */

/* jobs/<node>/ of the session, made when missing; lock held. */
static int node_folder(struct jobs *j, int64_t session, const char *node,
		       uint64_t *ino)
{
	struct session_info s;
	struct tree_attr a;
	int ret = session_get(j->host->st, session, &s);

	if (ret < 0)
		return ret;
	ret = tree_lookup(j->host->tree, s.jobs_ino, node, &a);
	if (ret == -ENOENT) {
		ret = tree_create(j->host->tree, s.jobs_ino, node,
				  S_IFDIR | 0755, s.uid, s.gid, NULL, &a);
		if (!ret)
			j->host->changed(j->host->ctx, session, s.jobs_ino,
					 node);
	}
	if (!ret && !S_ISDIR(a.mode))
		ret = -ENOTDIR;
	if (!ret)
		*ino = a.ino;
	return ret;
}

static int put_node_file(struct jobs *j, int64_t session, const char *node,
			 const char *name, const char *data, size_t len)
{
	uint64_t folder;
	int ret = node_folder(j, session, node, &folder);

	if (!ret)
		ret = tree_put_file(j->host->tree, folder, name, data, len,
				    NULL);
	if (!ret)
		j->host->changed(j->host->ctx, session, folder, name);
	return ret;
}

/* The row of one job, as the monitor and the state file need it. */
struct job_row {
	int64_t id, session, position;
	char *node_id, *job_dir, *state, *scheduler_id, *message, *executor;
	json_t *deps, *outputs;
	int64_t pid_start, exit_code, queued_ns, started_ns, ended_ns;
	int64_t time_limit_s;
	bool has_exit;
};

static void row_release(struct job_row *r)
{
	free(r->node_id);
	free(r->job_dir);
	free(r->state);
	free(r->scheduler_id);
	free(r->message);
	free(r->executor);
	json_decref(r->deps);
	json_decref(r->outputs);
	memset(r, 0, sizeof(*r));
}

static char *col_text(sqlite3_stmt *q, int col)
{
	const unsigned char *t = sqlite3_column_text(q, col);

	return t ? strdup((const char *)t) : NULL;
}

#define ROW_COLUMNS "j.id, j.session, j.position, j.node_id, j.job_dir," \
	" j.state, j.scheduler_id, j.message, r.executor, j.deps, j.outputs," \
	" coalesce(j.pid_start, 0), j.exit_code, coalesce(j.queued_ns, 0)," \
	" coalesce(j.started_ns, 0), coalesce(j.ended_ns, 0), j.time_limit_s"
#define ROW_FROM " FROM graph_jobs j JOIN graph_runs r ON r.session = j.session"

static int read_row(sqlite3_stmt *q, struct job_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(q, 0);
	r->session = sqlite3_column_int64(q, 1);
	r->position = sqlite3_column_int64(q, 2);
	r->node_id = col_text(q, 3);
	r->job_dir = col_text(q, 4);
	r->state = col_text(q, 5);
	r->scheduler_id = col_text(q, 6);
	r->message = col_text(q, 7);
	r->executor = col_text(q, 8);
	r->pid_start = sqlite3_column_int64(q, 11);
	r->has_exit = sqlite3_column_type(q, 12) != SQLITE_NULL;
	r->exit_code = sqlite3_column_int64(q, 12);
	r->queued_ns = sqlite3_column_int64(q, 13);
	r->started_ns = sqlite3_column_int64(q, 14);
	r->ended_ns = sqlite3_column_int64(q, 15);
	r->time_limit_s = sqlite3_column_int64(q, 16);
	if (!r->node_id || !r->job_dir || !r->state || !r->executor)
		return -ENOMEM;
	if (store_column_json(q, 9, &r->deps) < 0 ||
	    store_column_json(q, 10, &r->outputs) < 0)
		return -EIO;
	return 0;
}

/* Rows of `where` (an SQL condition on j and r, ?1 bound to `arg`). */
static int read_rows(struct store *st, const char *sql, int64_t arg,
		     struct job_row **rows, size_t *n)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	struct job_row *list = NULL, *grown;
	size_t count = 0;
	int rc, ret = 0;

	*rows = NULL;
	*n = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, arg);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		grown = realloc(list, (count + 1) * sizeof(*list));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		list = grown;
		ret = read_row(q, &list[count++]);
		if (ret < 0)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	if (ret < 0) {
		for (size_t i = 0; i < count; i++)
			row_release(&list[i]);
		free(list);
		return ret;
	}
	*rows = list;
	*n = count;
	return 0;
}

static void rows_free(struct job_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		row_release(&rows[i]);
	free(rows);
}

static int write_state_file(struct jobs *j, const struct job_row *r,
			    const char *extra)
{
	struct sbuf s = SBUF_INIT;
	char t[40];
	int ret = sbuf_addf(&s, "%s\n", r->state);

	if (!ret && r->scheduler_id)
		ret = sbuf_addf(&s, "scheduler_id %s\n", r->scheduler_id);
	if (!ret && r->has_exit)
		ret = sbuf_addf(&s, "exit_code %" PRId64 "\n", r->exit_code);
	if (!ret && r->queued_ns) {
		iso_time(r->queued_ns / 1000000000, t, sizeof(t));
		ret = sbuf_addf(&s, "queued %s\n", t);
	}
	if (!ret && r->started_ns) {
		iso_time(r->started_ns / 1000000000, t, sizeof(t));
		ret = sbuf_addf(&s, "started %s\n", t);
	}
	if (!ret && r->ended_ns) {
		iso_time(r->ended_ns / 1000000000, t, sizeof(t));
		ret = sbuf_addf(&s, "ended %s\n", t);
	}
	if (!ret && r->message && *r->message)
		ret = sbuf_addf(&s, "message %s\n", r->message);
	if (!ret && extra && *extra)
		ret = sbuf_addstr(&s, extra);
	if (!ret)
		ret = put_node_file(j, r->session, r->node_id, "state", s.buf,
				    s.len);
	sbuf_release(&s);
	return ret;
}

/* Store a new state (and what goes with it) and show it; lock held. */
static int set_state(struct jobs *j, struct job_row *r, const char *state,
		     const char *message, const char *extra)
{
	static const char sql[] = "UPDATE graph_jobs SET state = ?2,"
		" scheduler_id = ?3, message = ?4, exit_code = ?5,"
		" pid_start = ?6, started_ns = nullif(?7, 0),"
		" ended_ns = nullif(?8, 0) WHERE id = ?1";
	char *s = strdup(state), *m = message ? strdup(message) : NULL;
	int ret;

	if (!s || (message && !m)) {
		free(s);
		free(m);
		return -ENOMEM;
	}
	free(r->state);
	r->state = s;
	if (message) {
		free(r->message);
		r->message = m;
	}
	ret = store_run(j->host->st, sql, STORE_INT(r->id),
			STORE_TEXT(r->state), STORE_TEXT(r->scheduler_id),
			STORE_TEXT(r->message),
			r->has_exit ? STORE_INT(r->exit_code) : STORE_NULL,
			STORE_INT(r->pid_start), STORE_INT(r->started_ns),
			STORE_INT(r->ended_ns));
	if (!ret)
		ret = write_state_file(j, r, extra);
	log_line(j, r->session, r->node_id, "%s%s%s", r->state,
		 r->message && *r->message ? ": " : "",
		 r->message ? r->message : "");
	return ret;
}

/* ---- who a job runs as ------------------------------------------------------ */

/*
 * The user a session's jobs run as: the daemon's own, or, on a root
 * daemon, the session's owner -- with the groups of their passwd entry
 * (initgroups), or their gid alone when they have none -- as cron runs a
 * user's table.  Never root unless root owns the session.
 */
struct job_user {
	struct jobdir_user dir;	/* uid, gid, name, home */
	struct spawn_cred cred;
	bool other;		/* not the daemon's user: cred applies */
	char name[64];
	char *home, *shell;
	gid_t *groups;
};

static void job_user_release(struct job_user *u)
{
	free(u->home);
	free(u->shell);
	free(u->groups);
	memset(u, 0, sizeof(*u));
}

/* The groups of `name` with `gid` (getgrouplist), into u. */
static int user_groups(struct job_user *u, const char *name, gid_t gid)
{
	int n = 32;

	for (int tries = 0; tries < 8; tries++) {
		gid_t *grown = realloc(u->groups, (size_t)n * sizeof(*grown));
		int want = n;

		if (!grown)
			return -ENOMEM;
		u->groups = grown;
		if (getgrouplist(name, gid, u->groups, &want) >= 0) {
			u->cred.groups = u->groups;
			u->cred.ngroups = (size_t)want;
			return 0;
		}
		n = want > n ? want : n * 2;
	}
	return -E2BIG;
}

/* Who the jobs of a session owned by owner_uid/owner_gid run as. */
static int job_user_get(uint32_t owner_uid, uint32_t owner_gid,
			struct job_user *u)
{
	uid_t me = geteuid();
	struct passwd pw, *found = NULL;
	long size = sysconf(_SC_GETPW_R_SIZE_MAX);
	char *buf;
	int ret = 0;

	memset(u, 0, sizeof(*u));
	u->dir.uid = me == 0 ? (uid_t)owner_uid : me;
	u->other = u->dir.uid != me;
	u->dir.gid = u->other ? (gid_t)owner_gid : getegid();
	if (size < 16384)
		size = 16384;
	buf = malloc((size_t)size);
	if (!buf)
		return -ENOMEM;
	if (getpwuid_r(u->dir.uid, &pw, buf, (size_t)size, &found) != 0)
		found = NULL;
	if (found) {
		snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
		u->home = strdup(pw.pw_dir ? pw.pw_dir : "");
		u->shell = strdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell
								  : "/bin/sh");
		if (!u->home || !u->shell)
			ret = -ENOMEM;
		if (u->other) {
			u->dir.gid = pw.pw_gid;
			if (!ret)
				ret = user_groups(u, pw.pw_name, pw.pw_gid);
		}
	} else {
		/* no passwd entry: its gid and no other group */
		snprintf(u->name, sizeof(u->name), "%u", (unsigned)u->dir.uid);
	}
	free(buf);
	u->dir.name = u->name;
	u->dir.home = u->home;
	u->cred.uid = u->dir.uid;
	u->cred.gid = u->dir.gid;
	if (ret < 0)
		job_user_release(u);
	return ret;
}

/* The job user of session `id` (lock held). */
static int session_user(struct jobs *j, int64_t id, struct job_user *u)
{
	struct session_info s;
	int ret = session_get(j->host->st, id, &s);

	return ret < 0 ? ret : job_user_get(s.uid, s.gid, u);
}

/* ---- a job's environment --------------------------------------------------- */

struct job_env {
	char **vars;
	char *own[4];		/* HOME=, USER=, LOGNAME=, SHELL= made here */
};

static void job_env_release(struct job_env *e)
{
	free(e->vars);
	for (size_t i = 0; i < 4; i++)
		free(e->own[i]);
	memset(e, 0, sizeof(*e));
}

/* Of the daemon's variables, what another user's job is given. */
static bool passed_on(const char *var)
{
	static const char *const names[] = { "PATH=", "LANG=", "TZ=", NULL };

	for (size_t i = 0; names[i]; i++)
		if (!strncmp(var, names[i], strlen(names[i])))
			return true;
	return !strncmp(var, "LC_", 3) || !strncmp(var, "SLURM_", 6);
}

/*
 * The environment of a job: the daemon's, without FLOWFS_* (the
 * engine's key may be among them).  Another user's job (a root daemon's)
 * gets only PATH, LANG, LC_*, TZ and SLURM_* of it and that user's HOME,
 * USER, LOGNAME and SHELL, as cron gives them: nothing of root's own
 * environment (a token, a key) goes to a user.
 */
static int job_environment(const struct job_user *u, struct job_env *e)
{
	size_t n = 0, k = 0;

	memset(e, 0, sizeof(*e));
	while (environ[n])
		n++;
	e->vars = calloc(n + 5, sizeof(*e->vars));
	if (!e->vars)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "FLOWFS_", 7) &&
		    (!u->other || passed_on(environ[i])))
			e->vars[k++] = environ[i];
	if (!u->other)
		return 0;
	if ((u->home && asprintf(&e->own[0], "HOME=%s", u->home) < 0) ||
	    asprintf(&e->own[1], "USER=%s", u->name) < 0 ||
	    asprintf(&e->own[2], "LOGNAME=%s", u->name) < 0 ||
	    asprintf(&e->own[3], "SHELL=%s", u->shell ? u->shell
						      : "/bin/sh") < 0) {
		job_env_release(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < 4; i++)
		if (e->own[i])
			e->vars[k++] = e->own[i];
	return 0;
}

/* ---- reading what a job left --------------------------------------------- */

/* `rel` opened beneath the job folder `dir`, no link followed on the
 * way to it (the folder's path has none: jobdir.h) nor in it. */
static int open_beneath(const char *dir, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	struct open_how dir_how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int dfd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &dir_how,
			       sizeof(dir_how));
	int fd;

	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

/* Anyone: read_tail() checks no owner. */
#define ANY_OWNER ((uid_t)-1)

/* The file's last `max` bytes (all of it when `whole` and it fits):
 * -EFBIG when `whole` and it does not, -EINVAL when not a regular file;
 * unless `owner` is ANY_OWNER, -EMLINK when it has another name (a hard
 * link to a file of someone else's, /etc/shadow) and -EPERM when it is
 * not `owner`'s (the job's user's). */
static int read_tail(const char *dir, const char *rel, size_t max, bool whole,
		     uid_t owner, struct sbuf *out, size_t *cut)
{
	int fd = open_beneath(dir, rel);
	struct stat st;
	off_t from = 0;
	int ret = 0;

	*cut = 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	if (owner != ANY_OWNER && st.st_nlink != 1) {
		ret = -EMLINK;
		goto out;
	}
	if (owner != ANY_OWNER && st.st_uid != owner) {
		ret = -EPERM;
		goto out;
	}
	if ((size_t)st.st_size > max) {
		if (whole) {
			ret = -EFBIG;
			goto out;
		}
		from = st.st_size - (off_t)max;
		*cut = (size_t)from;
	}
	for (;;) {
		ssize_t n;

		ret = sbuf_grow(out, 65536);
		if (ret < 0)
			goto out;
		n = pread(fd, out->buf + out->len, 65536, from);
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (!n || out->len + (size_t)n > max + 65536)
			break;
		sbuf_setlen(out, out->len + (size_t)n);
		from += n;
	}
out:
	close(fd);
	return ret;
}

/* "<code> <seconds>" from the exit file: 1 when there, 0 when not. */
static int read_exit(const char *dir, int64_t *code, int64_t *when)
{
	struct sbuf s = SBUF_INIT;
	size_t cut;
	long long c, w;
	int ret = read_tail(dir, JOBSPEC_EXIT, 64, true, ANY_OWNER, &s, &cut);

	if (ret == -ENOENT || ret == -EFBIG || ret == -EINVAL)
		ret = 0;
	else if (!ret)
		ret = sscanf(s.buf, "%lld %lld", &c, &w) == 2 ? 1 : 0;
	if (ret == 1) {
		*code = c;
		*when = w;
	}
	sbuf_release(&s);
	return ret;
}

static int64_t read_started(const char *dir)
{
	struct sbuf s = SBUF_INIT;
	size_t cut;
	long long w = 0;

	if (read_tail(dir, JOBSPEC_STARTED, 64, true, ANY_OWNER, &s, &cut) ==
	    0)
		sscanf(s.buf, "%lld", &w);
	sbuf_release(&s);
	return w;
}

/* Why a file of the job was not brought, for `state`. */
static const char *not_brought_why(int ret)
{
	return ret == -ENOENT ? "no such file"
	       : ret == -EFBIG ? "over 64 MiB"
	       : ret == -ELOOP || ret == -EXDEV ? "a symbolic link"
	       : ret == -EINVAL ? "not a regular file"
	       : ret == -EMLINK ? "a hard link"
	       : ret == -EPERM ? "not the job user's file"
				: strerror(-ret);
}

/* stdout, stderr and the outputs into jobs/<node>/; lock held.  What
 * could not come is said in *notes.  Each is a regular file of the
 * job's user with one name, opened beneath the job's folder without a
 * link: anything else may be someone else's (a hard link made by a job
 * that ran as root, a link swapped in). */
static void bring_files(struct jobs *j, const struct job_row *r,
			struct sbuf *notes)
{
	static const struct { const char *from, *to; } logs[] = {
		{ JOBSPEC_STDOUT, "stdout" }, { JOBSPEC_STDERR, "stderr" },
	};
	json_t *taken = json_pack("{sbsbsbsb}", "state", 1, "script", 1,
				  "stdout", 1, "stderr", 1);
	struct job_user u;
	uid_t owner = ANY_OWNER;
	const char *name;
	json_t *path;
	int user_ret = session_user(j, r->session, &u);

	/* no user known: nothing is taken for theirs */
	if (!user_ret) {
		owner = u.dir.uid;
		job_user_release(&u);
	}
	for (size_t i = 0; i < 2; i++) {
		struct sbuf s = SBUF_INIT, all = SBUF_INIT;
		size_t cut = 0;
		int ret = user_ret < 0 ? user_ret
				    : read_tail(r->job_dir, logs[i].from,
						JOBS_LOG_MAX, false, owner, &s,
						&cut);

		if (ret < 0)
			sbuf_reset(&s);
		if (ret < 0 && ret != -ENOENT)
			sbuf_addf(notes, "not_brought %s (%s)\n", logs[i].to,
				  not_brought_why(ret));
		if (cut)
			sbuf_addf(&all, "[flowfs: the first %zu bytes are cut; "
				  "the whole file is %s/%s]\n", cut, r->job_dir,
				  logs[i].from);
		sbuf_add(&all, s.buf, s.len);
		put_node_file(j, r->session, r->node_id, logs[i].to, all.buf,
			      all.len);
		sbuf_release(&s);
		sbuf_release(&all);
	}
	json_object_foreach(r->outputs, name, path) {
		const char *p = json_string_value(path);
		size_t dl = strlen(r->job_dir), cut;
		const char *rel, *base;
		struct sbuf s = SBUF_INIT;
		char shown[300];
		int ret;

		/* the job folder itself (out_<label>) is not a file */
		if (!p || strncmp(p, r->job_dir, dl) || p[dl] != '/')
			continue;
		rel = p + dl + 1;
		base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
		/* under its base name; one flowfs's files or an earlier
		 * output took goes under "output-<name>", then under
		 * "<output parameter>-<name>" */
		snprintf(shown, sizeof(shown), "%s", base);
		if (json_object_get(taken, shown))
			snprintf(shown, sizeof(shown), "output-%s", base);
		if (json_object_get(taken, shown))
			snprintf(shown, sizeof(shown), "%.100s-%s", name, base);
		json_object_set_new(taken, shown, json_true());
		ret = user_ret < 0 ? user_ret
				: read_tail(r->job_dir, rel, JOBS_OUTPUT_MAX,
					    true, owner, &s, &cut);
		if (!ret)
			ret = put_node_file(j, r->session, r->node_id, shown,
					    s.buf, s.len);
		if (ret < 0)
			sbuf_addf(notes, "not_brought %s (%s)\n", name,
				  not_brought_why(ret));
		sbuf_release(&s);
	}
	json_decref(taken);
}

/* ---- running commands (sbatch, squeue, scancel) ------------------------- */

/* argv run to its end (spawn.h), stdout and stderr captured (each to
 * COMMAND_OUTPUT_MAX), killed after COMMAND_TIMEOUT_MS: its exit status
 * (0..255), 128 + signal, or 127 when it could not start. */
static int run_command(char *const argv[], struct sbuf *out, struct sbuf *err)
{
	return spawn_capture(argv, COMMAND_TIMEOUT_MS, COMMAND_OUTPUT_MAX, out,
			     err);
}

/* One line of a command's complaint, for a state's message. */
static void one_line(struct sbuf *s)
{
	char *nl;

	while (s->len && (s->buf[s->len - 1] == '\n' ||
			  s->buf[s->len - 1] == ' '))
		sbuf_setlen(s, s->len - 1);
	while ((nl = memchr(s->buf, '\n', s->len)))
		*nl = ' ';
	if (s->len > 400)
		sbuf_setlen(s, 400);
}

/* ---- local jobs ------------------------------------------------------------ */

/* The start time of process `pid` (-1: no such process), and whether it
 * is a zombie (*zombie, when not NULL). */
static int64_t proc_start_state(pid_t pid, bool *zombie)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* after the command name's closing parenthesis: " <field 3>
	 * <field 4>...", each step one field on; starttime is field 22
	 * (vsize, 23, changes at exec) */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	if (zombie)
		*zombie = p[2] == 'Z';
	p++;
	for (int field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -1;
	return (int64_t)start;
}

static int64_t proc_start(pid_t pid)
{
	return proc_start_state(pid, NULL);
}

/* A job whose process was gone before its start time was read has
 * none (-1): proc_start()'s -1 for a missing pid must not match it.  A
 * zombie is gone: the supervisor is nobody's child once it runs, and
 * the process that takes it up (init, a container's) may be slow to
 * reap it; it exits only once nothing of its job is left. */
static bool local_alive(pid_t pid, int64_t start)
{
	bool zombie = false;

	return pid > 0 && start >= 0 &&
	       proc_start_state(pid, &zombie) == start && !zombie;
}

/* ---- stopping a local job ---------------------------------------------------- */

/* SIGTERM to a local job's process group: its supervisor's (supervise.h),
 * which stops every process of the job and SIGKILLs what is left after
 * KILL_GRACE_NS. */
static void stop_group(pid_t pid)
{
	if (pid > 1)
		kill(-pid, SIGTERM);
}

/* The name of job `r`'s cgroup: unique while the row is (two databases
 * would need the same row id queued in the same nanosecond). */
static void job_cgroup_name(const struct job_row *r, char *name, size_t size)
{
	snprintf(name, size, "flowfs-job-%" PRId64 "-%" PRId64, r->id,
		 r->queued_ns);
}

/* The cgroup job `r` was given (supervise.h), found by its name. */
static bool job_cgroup(struct jobs *j, const struct job_row *r,
		       struct cgroup *cg)
{
	const struct cgroup_base *b = j->opt.cgroups;
	char name[64];

	memset(cg, 0, sizeof(*cg));
	cg->procs[0] = cg->procs[1] = -1;
	if (!b || !b->version)
		return false;
	job_cgroup_name(r, name, sizeof(name));
	if (snprintf(cg->dir, sizeof(cg->dir), "%s/%s", b->dir, name) >=
	    (int)sizeof(cg->dir) ||
	    (b->version == 1 && snprintf(cg->pids, sizeof(cg->pids), "%s/%s",
					 b->pids, name) >=
				(int)sizeof(cg->pids)))
		return false;
	cg->version = b->version;
	return true;
}

/* Whatever is left in the cgroup of a job whose supervisor is gone (it
 * removes it itself; one killed may not have) ends, and the cgroup goes. */
static void remove_job_cgroup(struct jobs *j, const struct job_row *r)
{
	struct cgroup cg;

	if (job_cgroup(j, r, &cg))
		cgroup_remove(&cg);
}

/* A Slurm job for the monitor to scancel (without the lock). */
static void queue_scancel(struct jobs *j, const char *id)
{
	char **grown;

	pthread_mutex_lock(&j->mu);
	grown = realloc(j->scancel, (j->nscancel + 1) * sizeof(*grown));
	if (grown) {
		j->scancel = grown;
		j->scancel[j->nscancel++] = strdup(id);
	}
	pthread_mutex_unlock(&j->mu);
}

/* ---- the run's bookkeeping ------------------------------------------------ */

static const char going_sql[] = "SELECT " ROW_COLUMNS ROW_FROM
	" WHERE j.state IN ('queued', 'submitted', 'running')"
	" AND ?1 = ?1 ORDER BY j.session, j.position";
static const char session_sql[] = "SELECT " ROW_COLUMNS ROW_FROM
	" WHERE j.session = ?1 ORDER BY j.position";

/* The jobs of a session whose deps reach `failed` become "skipped". */
static void skip_descendants(struct jobs *j, int64_t session,
			     const struct job_row *failed)
{
	struct job_row *rows;
	size_t n;
	bool *bad;

	if (read_rows(j->host->st, session_sql, session, &rows, &n) < 0)
		return;
	bad = calloc(n + 1, sizeof(*bad));
	for (size_t i = 0; bad && i < n; i++) {
		size_t k;
		json_t *d;

		if (rows[i].position == failed->position)
			bad[i] = true;
		json_array_foreach(rows[i].deps, k, d) {
			int64_t pos = json_integer_value(d);

			/* positions are plan order: a dep comes before */
			for (size_t m = 0; m < i; m++)
				if (rows[m].position == pos && bad[m])
					bad[i] = true;
		}
		if (!bad[i] || rows[i].position == failed->position)
			continue;
		if (!strcmp(rows[i].state, "queued") ||
		    !strcmp(rows[i].state, "submitted")) {
			char why[400];

			if (rows[i].scheduler_id &&
			    !strcmp(rows[i].executor, "slurm"))
				queue_scancel(j, rows[i].scheduler_id);
			snprintf(why, sizeof(why), "upstream node %s %s",
				 failed->node_id, failed->state);
			rows[i].ended_ns = fclock_now_ns();
			set_state(j, &rows[i], "skipped", why, NULL);
		}
	}
	free(bad);
	rows_free(rows, n);
}

/* The run's own state once none of its jobs goes on; lock held. */
static void settle_run(struct jobs *j, int64_t session)
{
	static const char count_sql[] = "SELECT count(*) FROM graph_jobs"
		" WHERE session = ?1 AND state IN ('queued', 'submitted',"
		" 'running')";
	static const char state_sql[] = "SELECT CASE"
		" WHEN EXISTS (SELECT 1 FROM graph_jobs WHERE session = ?1"
		"   AND state = 'cancelled') THEN 2"
		" WHEN EXISTS (SELECT 1 FROM graph_jobs WHERE session = ?1"
		"   AND state IN ('failed', 'skipped')) THEN 1 ELSE 0 END";
	static const char *const words[] = { "done", "failed", "cancelled" };
	static const char end_sql[] = "UPDATE graph_runs SET state = ?2,"
		" ended_ns = ?3 WHERE session = ?1 AND state = 'running'";
	int64_t going = 0, which = 0;

	if (store_int(j->host->st, count_sql, &going, STORE_INT(session)) < 0 ||
	    going)
		return;
	if (store_int(j->host->st, state_sql, &which, STORE_INT(session)) < 0)
		return;
	if (store_run(j->host->st, end_sql, STORE_INT(session),
		      STORE_TEXT(words[which]), STORE_INT(fclock_now_ns())) == 0 &&
	    store_changes(j->host->st))
		log_line(j, session, NULL, "graph %s", words[which]);
}

/* A job ended: its state, files and descendants; lock held. */
static void finish(struct jobs *j, struct job_row *r, bool has_exit,
		   int64_t code, int64_t ended_s, const char *why)
{
	struct sbuf notes = SBUF_INIT;
	int64_t started = read_started(r->job_dir);

	if (started && !r->started_ns)
		r->started_ns = started * 1000000000;
	r->has_exit = has_exit;
	r->exit_code = code;
	r->ended_ns = ended_s ? ended_s * 1000000000 : fclock_now_ns();
	bring_files(j, r, &notes);
	if (has_exit && code == 0) {
		set_state(j, r, "done", NULL, notes.buf);
	} else {
		char msg[500];

		if (has_exit)
			snprintf(msg, sizeof(msg), "exited with %" PRId64
				 "%s%s", code, why ? "; " : "", why ? why : "");
		else
			snprintf(msg, sizeof(msg), "%s", why ? why
				 : "ended without an exit status");
		set_state(j, r, "failed", msg, notes.buf);
		skip_descendants(j, r->session, r);
	}
	sbuf_release(&notes);
	settle_run(j, r->session);
}

/* ---- one poll -------------------------------------------------------------- */

static bool deps_done(const struct job_row *rows, size_t n,
		      const struct job_row *r, bool *blocked)
{
	size_t k;
	json_t *d;

	*blocked = false;
	json_array_foreach(r->deps, k, d) {
		int64_t pos = json_integer_value(d);

		for (size_t m = 0; m < n; m++)
			if (rows[m].session == r->session &&
			    rows[m].position == pos &&
			    strcmp(rows[m].state, "done")) {
				*blocked = strcmp(rows[m].state, "queued") &&
					   strcmp(rows[m].state, "submitted") &&
					   strcmp(rows[m].state, "running");
				return false;
			}
	}
	return true;
}

/* The jobs of the session, all states, for deps (lock held). */
static int session_rows(struct jobs *j, int64_t session,
			struct job_row **rows, size_t *n)
{
	return read_rows(j->host->st, session_sql, session, rows, n);
}

/* A cancelled local job whose every process is gone; lock held. */
static void cancelled(struct jobs *j, struct job_row *r)
{
	r->ended_ns = fclock_now_ns();
	set_state(j, r, "cancelled", "", NULL);
	settle_run(j, r->session);
}

/*
 * A running local job: its supervisor (supervise.h) is gone only once
 * every process of the job is, so the job ends then -- done or failed by
 * its exit file, "cancelled" when a cancel stopped it -- and not when
 * its exit file appears.
 */
static void poll_local(struct jobs *j, struct job_row *r, unsigned *running)
{
	int64_t code, when;
	pid_t pid = r->scheduler_id ? (pid_t)atol(r->scheduler_id) : 0;
	bool over;
	int got;

	if (strcmp(r->state, "running"))
		return;
	over = r->time_limit_s && r->started_ns &&
	       fclock_now_ns() - r->started_ns > r->time_limit_s * 1000000000;
	if (!local_alive(pid, r->pid_start)) {
		char why[200];

		snprintf(why, sizeof(why), over ? "stopped after %" PRId64
			 " minutes (its time_minutes)" : "ended without an "
			 "exit status (killed, or the machine restarted)",
			 r->time_limit_s / 60);
		remove_job_cgroup(j, r);
		got = read_exit(r->job_dir, &code, &when);
		lock(j);
		if (r->message && !strcmp(r->message, CANCEL_NOTE))
			cancelled(j, r);
		else
			finish(j, r, got == 1, code, got == 1 ? when : 0,
			       got == 1 ? NULL : why);
		unlock(j);
		return;
	}
	if (j->nwatch < sizeof(j->watch) / sizeof(*j->watch))
		j->watch[j->nwatch++] = pid;
	/* its time is up: stopped as a cancel stops it, and ended at a
	 * later poll */
	if (over && !r->message) {
		stop_group(pid);
		r->message = strdup("stopping: its time_minutes is up");
		lock(j);
		set_state(j, r, "running", NULL, NULL);
		unlock(j);
	}
	(*running)++;
}

/* What prepare() leaves open for a local job's supervisor; -1: none. */
struct job_files {
	int dir, script, out, err;
};

static void job_files_close(struct job_files *f)
{
	int *fds[4] = { &f->dir, &f->script, &f->out, &f->err };

	for (size_t i = 0; i < 4; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* File `name` in folder `dfd` made anew -- what an earlier run left is
 * removed first, and must not pass for this one's -- without following
 * a link, and given to the job's user. */
static int fresh_file(int dfd, const char *name, int flags,
		      const struct job_user *u)
{
	int fd, ret;

	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (u->other && fchown(fd, u->dir.uid, u->dir.gid) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static int write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The job's folder made below its user's (jobdir.h): <base>/<session>-<n>/
 * run-<k>/<node>, each of the three made when missing and checked. */
static int job_folder(const char *job_dir, const struct job_user *u,
		      struct ferr *err)
{
	char base[PATH_MAX], shown[PATH_MAX];
	const char *levels[3];
	char *cut;
	int fd, next;

	if (snprintf(base, sizeof(base), "%s", job_dir) >= (int)sizeof(base))
		return ferr_set(err, -ENAMETOOLONG, "too long");
	for (int i = 2; i >= 0; i--) {
		cut = strrchr(base, '/');
		if (!cut || cut == base)
			return ferr_set(err, -EINVAL, "not a job's folder");
		*cut = '\0';
		levels[i] = cut + 1;
	}
	fd = jobdir_open(base, &u->dir, err);
	snprintf(shown, sizeof(shown), "%s", base);
	for (int i = 0; fd >= 0 && i < 3; i++) {
		size_t len = strlen(shown);

		snprintf(shown + len, sizeof(shown) - len, "/%s", levels[i]);
		next = jobdir_make(fd, levels[i], 0755, shown, &u->dir, err);
		close(fd);
		fd = next;
	}
	return fd;
}

/*
 * The folder and the script of a job about to start (no lock), and who
 * it runs as (*u).  The folder is made below its user's (job_folder());
 * the files are made in it through its descriptor: the script is
 * written into a new file, never through a name someone else could have
 * put there.  For a local job (`f`), the folder, the script (at its
 * start), stdout and stderr are left open in *f.
 */
static int prepare(struct jobs *j, const struct job_row *r, struct job_user *u,
		   struct job_files *f, struct sbuf *why)
{
	static const char sql[] = "SELECT script FROM graph_jobs WHERE id = ?1";
	struct job_files made = { -1, -1, -1, -1 };
	struct ferr err = FERR_INIT;
	sqlite3_stmt *q;
	char *text = NULL;
	int ret;

	lock(j);
	q = store_stmt(j->host->st, sql);
	if (q) {
		sqlite3_bind_int64(q, 1, r->id);
		if (sqlite3_step(q) == SQLITE_ROW)
			text = col_text(q, 0);
		store_done(q);
	}
	ret = session_user(j, r->session, u);
	unlock(j);
	if (!text || ret < 0) {
		ret = ret < 0 ? ret : -EIO;
		sbuf_addf(why, "cannot read its script or its user: %s",
			  strerror(-ret));
		goto out;
	}
	ret = made.dir = job_folder(r->job_dir, u, &err);
	if (ret < 0)
		goto fail;
	/* what a job of an earlier run left must not pass for this one's */
	unlinkat(made.dir, JOBSPEC_EXIT, 0);
	unlinkat(made.dir, JOBSPEC_STARTED, 0);
	ret = made.script = fresh_file(made.dir, JOBSPEC_SCRIPT, O_RDWR, u);
	if (ret >= 0)
		ret = write_all(made.script, text, strlen(text));
	if (ret >= 0 && lseek(made.script, 0, SEEK_SET) < 0)
		ret = -errno;
	if (ret >= 0 && f)
		ret = made.out = fresh_file(made.dir, JOBSPEC_STDOUT, O_WRONLY,
					    u);
	if (ret >= 0 && f)
		ret = made.err = fresh_file(made.dir, JOBSPEC_STDERR, O_WRONLY,
					    u);
	if (ret < 0) {
		ferr_set(&err, ret, "%s", strerror(-ret));
		goto fail;
	}
	ret = 0;
	if (f) {
		*f = made;
		made = (struct job_files){ -1, -1, -1, -1 };
	}
	goto out;
fail:
	sbuf_addf(why, "cannot make its folder %s: %s", r->job_dir,
		  err.message);
out:
	job_files_close(&made);
	free(text);
	return ret;
}

/* Whether the job is still queued (lock held): a cancel may have come
 * while it was being started without the lock. */
static bool still_queued(struct jobs *j, const struct job_row *r)
{
	int64_t n = 0;

	return store_int(j->host->st, "SELECT count(*) FROM graph_jobs WHERE"
			 " id = ?1 AND state = 'queued'", &n,
			 STORE_INT(r->id)) == 0 && n;
}

/* Start job `r` under its supervisor (supervise.h), in a cgroup of its
 * own where one can be had: its pid (*pid) and that pid's start. */
static int launch(struct jobs *j, const struct job_row *r,
		  const struct job_user *u, struct job_files *f, pid_t *pid,
		  int64_t *start, struct sbuf *why)
{
	char *argv[] = { "/bin/bash", "-c", READ_AND_RUN, "flowfs-job", NULL };
	struct supervise sv = {
		.argv = argv, .dir = f->dir,
		.cred = u->other ? &u->cred : NULL, .grace_ns = KILL_GRACE_NS,
	};
	struct job_env env;
	struct cgroup cg = { .procs = { -1, -1 } };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), ret;

	ret = null < 0 ? -errno : job_environment(u, &env);
	if (ret < 0) {
		if (null >= 0)
			close(null);
		sbuf_addf(why, "cannot start it: %s", strerror(-ret));
		return ret;
	}
	if (j->opt.cgroups && j->opt.cgroups->version) {
		struct ferr err = FERR_INIT;
		char name[64];

		/* none to be had: the supervisor alone holds the job */
		job_cgroup_name(r, name, sizeof(name));
		if (cgroup_make(j->opt.cgroups, name, 0, 0, &cg, &err) == 0)
			sv.cg = &cg;
	}
	sv.envp = env.vars;
	sv.fds[0] = null;
	sv.fds[1] = f->out;
	sv.fds[2] = f->err;
	sv.fds[3] = f->script;
	ret = supervise_start(&sv, pid);
	if (ret < 0) {
		sbuf_addf(why, "cannot start it: %s", strerror(-ret));
		if (sv.cg)
			cgroup_remove(&cg);
	} else {
		/* the start time identifies it across a reused pid */
		*start = proc_start(*pid);
	}
	for (int i = 0; i < 2; i++)
		if (cg.procs[i] >= 0)
			close(cg.procs[i]);
	close(null);
	job_env_release(&env);
	return ret;
}

static void start_local(struct jobs *j, struct job_row *r)
{
	struct job_files f = { -1, -1, -1, -1 };
	struct sbuf why = SBUF_INIT;
	struct job_user u = { 0 };
	char id[32];
	int64_t start = 0;
	pid_t pid = 0;
	bool queued;
	int ret = prepare(j, r, &u, &f, &why);

	if (!ret)
		ret = launch(j, r, &u, &f, &pid, &start, &why);
	job_files_close(&f);
	job_user_release(&u);
	lock(j);
	if (!ret) {
		snprintf(id, sizeof(id), "%d", (int)pid);
		free(r->scheduler_id);
		r->scheduler_id = strdup(id);
		r->pid_start = start;
		r->started_ns = fclock_now_ns();
	}
	queued = still_queued(j, r);
	if (!queued && ret < 0) {
		free(r->state);
		r->state = strdup("cancelled");
	} else if (!queued) {
		/* cancelled while it started: stopped as a cancel stops a
		 * running job, and "cancelled" once nothing of it is left */
		stop_group(pid);
		set_state(j, r, "running", CANCEL_NOTE, NULL);
		store_run(j->host->st, "UPDATE graph_runs SET state ="
			  " 'running', ended_ns = NULL WHERE session = ?1",
			  STORE_INT(r->session));
	} else if (ret < 0) {
		finish(j, r, false, 0, 0, why.buf);
	} else {
		set_state(j, r, "running", NULL, NULL);
	}
	unlock(j);
	sbuf_release(&why);
}

/* The Slurm ids of the jobs r needs, ":"-joined, or false when one has
 * none yet (not submitted). */
static bool dep_ids(const struct job_row *rows, size_t n,
		    const struct job_row *r, struct sbuf *out)
{
	size_t k;
	json_t *d;

	json_array_foreach(r->deps, k, d) {
		int64_t pos = json_integer_value(d);
		bool found = false;

		for (size_t m = 0; m < n; m++) {
			if (rows[m].session != r->session ||
			    rows[m].position != pos)
				continue;
			found = true;
			if (!strcmp(rows[m].state, "done"))
				break;	/* nothing to wait for */
			if (!rows[m].scheduler_id)
				return false;
			sbuf_addf(out, ":%s", rows[m].scheduler_id);
		}
		if (!found)
			return false;
	}
	return true;
}

static void submit_slurm(struct jobs *j, struct job_row *r,
			 const struct job_row *all, size_t nall)
{
	struct sbuf deps = SBUF_INIT, out = SBUF_INIT, err = SBUF_INIT;
	struct sbuf why = SBUF_INIT, depflag = SBUF_INIT;
	struct job_user u = { 0 };
	struct job_env env = { 0 };
	char script[PATH_MAX + 32];
	int ret;

	if (!dep_ids(all, nall, r, &deps))
		goto out;	/* an upstream job is not submitted yet */
	snprintf(script, sizeof(script), "%s/%s", r->job_dir, JOBSPEC_SCRIPT);
	ret = prepare(j, r, &u, NULL, &why);
	if (!ret) {
		ret = job_environment(&u, &env);
		if (ret < 0)
			sbuf_addf(&why, "cannot submit it: %s", strerror(-ret));
	}
	if (!ret) {
		char chdir_f[PATH_MAX + 16], out_f[PATH_MAX + 32],
			err_f[PATH_MAX + 32];
		char *argv[10];
		int a = 0;

		argv[a++] = "sbatch";
		argv[a++] = "--parsable";
		/* the job's folder, stdout and stderr as sbatch flags: a
		 * path in an #SBATCH line is read by Slurm's own rules */
		snprintf(chdir_f, sizeof(chdir_f), "--chdir=%s", r->job_dir);
		snprintf(out_f, sizeof(out_f), "--output=%s/%s", r->job_dir,
			 JOBSPEC_STDOUT);
		snprintf(err_f, sizeof(err_f), "--error=%s/%s", r->job_dir,
			 JOBSPEC_STDERR);
		argv[a++] = chdir_f;
		argv[a++] = out_f;
		argv[a++] = err_f;
		if (deps.len) {
			sbuf_addf(&depflag, "--dependency=afterok%s", deps.buf);
			argv[a++] = depflag.buf;
		}
		argv[a++] = script;
		argv[a] = NULL;
		/* the user's job is the user's to submit: Slurm runs it as
		 * whoever ran sbatch */
		ret = spawn_capture_as(argv, env.vars, u.other ? &u.cred : NULL,
				       COMMAND_TIMEOUT_MS, COMMAND_OUTPUT_MAX,
				       &out, &err);
		if (ret != 0) {
			one_line(&err);
			sbuf_addf(&why, "sbatch failed: %s", err.len ? err.buf
				  : ret < 0 ? strerror(-ret) : "no message");
			ret = -EIO;
		}
	}
	lock(j);
	if (!ret) {
		char *semi = strchr(out.buf, ';');

		if (semi)
			*semi = '\0';
		one_line(&out);
	}
	if (!still_queued(j, r)) {
		/* cancelled meanwhile: it must not run on */
		if (!ret)
			queue_scancel(j, out.buf);
		free(r->state);
		r->state = strdup("cancelled");
	} else if (ret < 0) {
		finish(j, r, false, 0, 0, why.buf);
	} else {
		free(r->scheduler_id);
		r->scheduler_id = strdup(out.buf);
		set_state(j, r, "submitted", NULL, NULL);
	}
	unlock(j);
out:
	job_env_release(&env);
	job_user_release(&u);
	sbuf_release(&deps);
	sbuf_release(&depflag);
	sbuf_release(&out);
	sbuf_release(&err);
	sbuf_release(&why);
}

/* Which Slurm jobs of ours are in the queue: id -> state word.  Ours
 * are the jobs of `users` (uids, comma-separated): the daemon's, or on
 * a root daemon those of the sessions' owners, who submitted them. */
static int squeue_states(const char *users, json_t **out, struct sbuf *why)
{
	char *argv[] = { "squeue", "-h", "-u", (char *)users, "-o", "%i %T",
			 NULL };
	struct sbuf o = SBUF_INIT, e = SBUF_INIT;
	json_t *map = json_object();
	int ret;

	*out = NULL;
	if (!map)
		return -ENOMEM;
	ret = run_command(argv, &o, &e);
	if (ret != 0) {
		one_line(&e);
		sbuf_addf(why, "squeue failed: %s", e.len ? e.buf
			  : ret < 0 ? strerror(-ret) : "no message");
		ret = -EIO;
		goto out;
	}
	for (char *line = o.buf, *next; *line; line = next) {
		char id[64], state[64];

		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		if (sscanf(line, "%63s %63s", id, state) == 2)
			json_object_set_new(map, id, json_string(state));
	}
	*out = map;
	map = NULL;
out:
	json_decref(map);
	sbuf_release(&o);
	sbuf_release(&e);
	return ret;
}

static void poll_slurm(struct jobs *j, struct job_row *r, const json_t *queue)
{
	const char *state;
	char key[32];
	int64_t code, when, missing;
	int got;

	if (!r->scheduler_id)
		return;
	state = json_string_value(json_object_get(queue, r->scheduler_id));
	snprintf(key, sizeof(key), "%" PRId64, r->id);
	if (state) {
		json_object_del(j->missing, key);
		if (!strcmp(state, "RUNNING") || !strcmp(state, "COMPLETING")) {
			if (strcmp(r->state, "running")) {
				lock(j);
				r->started_ns = fclock_now_ns();
				set_state(j, r, "running", NULL, NULL);
				unlock(j);
			}
		}
		return;
	}
	got = read_exit(r->job_dir, &code, &when);
	if (got != 1) {
		missing = json_integer_value(json_object_get(j->missing, key));
		json_object_set_new(j->missing, key, json_integer(missing + 1));
		if (missing + 1 < MISSING_POLLS)
			return;
	}
	json_object_del(j->missing, key);
	lock(j);
	finish(j, r, got == 1, code, got == 1 ? when : 0,
	       got == 1 ? NULL : "left Slurm's queue without an exit status "
	       "(cancelled outside flowfs, or killed: see stderr)");
	unlock(j);
}

/* The scancels queued under the lock. */
static void do_scancels(struct jobs *j)
{
	char **ids;
	size_t n;

	pthread_mutex_lock(&j->mu);
	ids = j->scancel;
	n = j->nscancel;
	j->scancel = NULL;
	j->nscancel = 0;
	pthread_mutex_unlock(&j->mu);
	for (size_t i = 0; i < n; i += 64) {
		char *argv[64 + 2];
		size_t a = 0;
		struct sbuf o = SBUF_INIT, e = SBUF_INIT;

		argv[a++] = "scancel";
		for (size_t k = i; k < n && k < i + 64; k++)
			if (ids[k])
				argv[a++] = ids[k];
		argv[a] = NULL;
		if (a > 1)
			run_command(argv, &o, &e);
		sbuf_release(&o);
		sbuf_release(&e);
	}
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

/* The uids whose Slurm jobs `rows` are, comma-separated (lock held). */
static void slurm_users(struct jobs *j, const struct job_row *rows, size_t n,
			struct sbuf *out)
{
	json_t *seen = json_object();
	char key[32];

	for (size_t i = 0; seen && i < n; i++) {
		struct session_info s;
		uid_t uid = geteuid();

		if (strcmp(rows[i].executor, "slurm"))
			continue;
		if (uid == 0 && session_get(j->host->st, rows[i].session, &s) == 0)
			uid = s.uid;
		snprintf(key, sizeof(key), "%u", (unsigned)uid);
		if (json_object_get(seen, key))
			continue;
		json_object_set_new(seen, key, json_true());
		sbuf_addf(out, "%s%s", out->len ? "," : "", key);
	}
	json_decref(seen);
}

static void poll_once(struct jobs *j)
{
	struct job_row *rows = NULL;
	size_t n = 0;
	unsigned running = 0;
	json_t *queue = NULL;
	bool any_slurm = false;
	int ret;

	do_scancels(j);
	j->nwatch = 0;
	lock(j);
	ret = read_rows(j->host->st, going_sql, 0, &rows, &n);
	unlock(j);
	if (ret < 0 || !n)
		goto out;
	for (size_t i = 0; i < n; i++)
		any_slurm = any_slurm || !strcmp(rows[i].executor, "slurm");
	j->slurm_going = any_slurm;
	if (any_slurm) {
		struct sbuf why = SBUF_INIT, users = SBUF_INIT;

		/* who submitted them (lock held: the sessions' owners) */
		lock(j);
		slurm_users(j, rows, n, &users);
		unlock(j);
		/* no answer from Slurm: nothing is decided this poll */
		if (!users.len || squeue_states(users.buf, &queue, &why) < 0)
			queue = NULL;
		sbuf_release(&why);
		sbuf_release(&users);
	}
	/* what ended first, so that slots and dependencies are current */
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(rows[i].executor, "local"))
			poll_local(j, &rows[i], &running);
		else if (queue && strcmp(rows[i].state, "queued"))
			poll_slurm(j, &rows[i], queue);
	}
	/* then what can start, a session at a time, over its rows as they
	 * are now (a job ended above); a job started or refused here
	 * updates its row in `all`, which the jobs after it read */
	for (size_t i = 0; i < n; i++) {
		struct job_row *all;
		size_t nall;
		bool blocked, any = false;

		if (i && rows[i].session == rows[i - 1].session)
			continue;
		for (size_t k = i; k < n && rows[k].session == rows[i].session;
		     k++)
			any = any || !strcmp(rows[k].state, "queued");
		if (!any)
			continue;
		/* no slot: reading the session's rows for each waiting job
		 * made a poll of a big graph cost jobs squared */
		if (!strcmp(rows[i].executor, "local") && running >= j->slots)
			continue;
		/* the session's rows as they are now: a job ended above */
		lock(j);
		ret = session_rows(j, rows[i].session, &all, &nall);
		unlock(j);
		if (ret < 0)
			continue;
		for (size_t m = 0; m < nall; m++) {
			struct job_row *r = &all[m];

			if (strcmp(r->state, "queued"))
				continue;
			if (!strcmp(r->executor, "slurm")) {
				submit_slurm(j, r, all, nall);
			} else if (running < j->slots &&
				   deps_done(all, nall, r, &blocked)) {
				start_local(j, r);
				running++;
				if (r->scheduler_id && j->nwatch <
				    sizeof(j->watch) / sizeof(*j->watch))
					j->watch[j->nwatch++] =
						(pid_t)atol(r->scheduler_id);
			}
		}
		rows_free(all, nall);
	}
out:
	json_decref(queue);
	rows_free(rows, n);
}

/* Sleep `ms`, or until woken or a watched local job ends. */
static void sleep_a_while(struct jobs *j, int64_t ms)
{
	struct pollfd fds[1 + sizeof(j->watch) / sizeof(*j->watch)];
	size_t n = 0;
	uint64_t count;

	fds[n++] = (struct pollfd){ .fd = j->wake_fd, .events = POLLIN };
	for (size_t i = 0; i < j->nwatch; i++) {
		int fd = (int)syscall(SYS_pidfd_open, j->watch[i], 0);

		if (fd >= 0)
			fds[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	poll(fds, n, (int)ms);
	if (read(j->wake_fd, &count, sizeof(count)) < 0)
		count = 0;	/* nothing was written: a timeout or a job */
	for (size_t i = 1; i < n; i++)
		close(fds[i].fd);
}

static void *monitor(void *arg)
{
	struct jobs *j = arg;
	unsigned poll_ms = j->opt.poll_ms;

	for (;;) {
		int64_t going = 0, ms;
		bool stop, scancels;

		pthread_mutex_lock(&j->mu);
		stop = j->stop;
		pthread_mutex_unlock(&j->mu);
		if (stop)
			break;
		poll_once(j);
		lock(j);
		store_int(j->host->st, "SELECT count(*) FROM graph_jobs WHERE"
			  " ?1 = 0 AND state IN ('queued', 'submitted',"
			  " 'running')", &going, STORE_INT(0));
		unlock(j);
		pthread_mutex_lock(&j->mu);
		scancels = j->nscancel;
		pthread_mutex_unlock(&j->mu);
		/* nothing going: until a submit wakes it, but still round
		 * for the scancels due; local jobs (their supervisors) wake
		 * it as they end */
		ms = !going ? (scancels ? 500 : 60000)
		     : poll_ms ? poll_ms : 1000;
		sleep_a_while(j, ms);
	}
	return NULL;
}

int jobs_start(struct jobs **out, struct run_host *host,
	       const struct jobs_options *opt, struct ferr *err)
{
	struct jobs *j = calloc(1, sizeof(*j));
	long cpus;
	int ret;

	*out = NULL;
	if (!j)
		return -ENOMEM;
	j->host = host;
	j->opt = *opt;
	j->work_dir = strdup(opt->work_dir);
	j->missing = json_object();
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	j->slots = opt->slots ? opt->slots : cpus > 0 ? (unsigned)cpus : 1;
	if (!j->work_dir || !j->missing) {
		ret = -ENOMEM;
		goto fail;
	}
	j->opt.work_dir = j->work_dir;
	j->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->wake_fd < 0) {
		ret = ferr_set(err, -errno, "cannot start the job monitor: %s",
			       strerror(errno));
		goto fail;
	}
	pthread_mutex_init(&j->mu, NULL);
	ret = -pthread_create(&j->thread, NULL, monitor, j);
	if (ret < 0) {
		ferr_set(err, ret, "cannot start the job monitor: %s",
			 strerror(-ret));
		pthread_mutex_destroy(&j->mu);
		close(j->wake_fd);
		goto fail;
	}
	*out = j;
	return 0;
fail:
	json_decref(j->missing);
	free(j->work_dir);
	free(j);
	return ret;
}

void jobs_stop(struct jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	j->stop = true;
	pthread_mutex_unlock(&j->mu);
	wake(j);
	pthread_join(j->thread, NULL);
	/* the scancels still due (a skipped job's): no later mount knows
	 * them, and they would stay pending for ever */
	do_scancels(j);
	close(j->wake_fd);
	/* a local job being stopped needs no one: its supervisor ends it */
	for (size_t i = 0; i < j->nscancel; i++)
		free(j->scancel[i]);
	free(j->scancel);
	json_decref(j->missing);
	pthread_mutex_destroy(&j->mu);
	free(j->work_dir);
	free(j);
}

/* ---- what the fs calls, lock held ------------------------------------------ */

static bool run_going(struct store *st, int64_t session)
{
	int64_t n = 0;

	return store_int(st, "SELECT count(*) FROM graph_jobs WHERE"
			 " session = ?1 AND state IN ('queued', 'submitted',"
			 " 'running')", &n, STORE_INT(session)) == 0 && n;
}

static int store_plan(struct jobs *j, const struct session_info *s,
		      const struct jobspec_plan *plan,
		      const struct jobspec_options *jo, int64_t number)
{
	static const char run_sql[] = "INSERT INTO graph_runs(session,"
		" number, executor, run_dir, state, started_ns) VALUES"
		" (?1, ?2, ?3, ?4, 'running', ?5) ON CONFLICT(session) DO"
		" UPDATE SET number = ?2, executor = ?3, run_dir = ?4,"
		" state = 'running', started_ns = ?5, ended_ns = NULL";
	static const char job_sql[] = "INSERT INTO graph_jobs(session,"
		" position, node_id, job_dir, deps, outputs, script, state,"
		" queued_ns, time_limit_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
		" 'queued', ?8, ?9)";
	struct store *st = j->host->st;
	int64_t now = fclock_now_ns();
	int ret = store_run(st, "DELETE FROM graph_jobs WHERE session = ?1",
			    STORE_INT(s->id));

	if (!ret)
		ret = store_run(st, run_sql, STORE_INT(s->id), STORE_INT(number),
				STORE_TEXT(j->opt.executor == JOBS_SLURM
						   ? "slurm" : "local"),
				STORE_TEXT(jo->run_dir), STORE_INT(now));
	for (size_t i = 0; !ret && i < plan->n; i++) {
		const struct jobspec_job *job = &plan->jobs[i];
		struct sbuf script = SBUF_INIT, deps = SBUF_INIT,
			    outs = SBUF_INIT;
		json_t *d = json_array(), *o = json_object();

		for (size_t k = 0; d && k < job->ndeps; k++)
			json_array_append_new(d, json_integer(
				(json_int_t)job->deps[k]));
		for (size_t k = 0; o && k < job->noutputs; k++)
			json_object_set_new(o, job->outputs[k].name,
					    json_string(job->outputs[k].path));
		ret = !d || !o ? -ENOMEM : jobspec_script(plan, i, jo, &script);
		if (!ret)
			ret = fjson_dump(&deps, d);
		if (!ret)
			ret = fjson_dump(&outs, o);
		if (!ret)
			ret = store_run(st, job_sql, STORE_INT(s->id),
					STORE_INT(i), STORE_TEXT(job->node_id),
					STORE_TEXT(job->job_dir),
					STORE_TEXT(deps.buf),
					STORE_TEXT(outs.buf),
					STORE_TEXT(script.buf), STORE_INT(now),
					STORE_INT(job->time_minutes * 60LL));
		json_decref(d);
		json_decref(o);
		sbuf_release(&deps);
		sbuf_release(&outs);
		sbuf_release(&script);
	}
	return ret;
}

/* jobs/ emptied of an earlier run's folders (lock held): each node
 * folder and the files in it; a folder a user made inside one stays,
 * and so does its parent. */
static int clear_jobs_folder(struct jobs *j, const struct session_info *s)
{
	struct tree_dir dir;
	int ret = tree_readdir(j->host->tree, s->jobs_ino, &dir);

	if (ret < 0)
		return ret;
	for (size_t i = 0; !ret && i < dir.n; i++) {
		const char *name = dir.ents[i].name;
		struct tree_dir inner;

		if (!S_ISDIR(dir.ents[i].attr.mode)) {
			ret = tree_unlink(j->host->tree, s->jobs_ino, name);
			continue;
		}
		ret = tree_readdir(j->host->tree, dir.ents[i].attr.ino, &inner);
		if (ret < 0)
			break;
		for (size_t k = 0; !ret && k < inner.n; k++)
			if (!S_ISDIR(inner.ents[k].attr.mode)) {
				ret = tree_unlink(j->host->tree,
						  dir.ents[i].attr.ino,
						  inner.ents[k].name);
				if (!ret)
					j->host->changed(j->host->ctx, s->id,
						dir.ents[i].attr.ino,
						inner.ents[k].name);
			}
		tree_dir_free(&inner);
		if (!ret && tree_rmdir(j->host->tree, s->jobs_ino, name) == 0)
			j->host->changed(j->host->ctx, s->id, s->jobs_ino,
					 name);
	}
	tree_dir_free(&dir);
	return ret;
}

int jobs_submit(struct jobs *j, const struct session_info *s,
		const struct graph_tools *tools, const char *tools_error,
		struct ferr *err)
{
	struct jobspec_plan plan = { 0 };
	struct jobspec_options jo = {
		.session = s->name, .container = j->opt.container,
		.tools_path = j->opt.tools_path,
	};
	struct plan_source src = { .session = s->id, .tools = tools,
				   .tools_error = tools_error, .whole = true };
	char leaf[32], *run_dir = NULL, *base = NULL;
	struct ferr why = FERR_INIT;
	struct job_user u;
	int64_t number = 0;
	int ret, files;

	if (run_going(j->host->st, s->id))
		return ferr_set(err, -EBUSY, "the job graph is running (echo "
				"cancel > ctl stops it)");
	/* the jobs' folders lie in a folder of their user's, made and
	 * checked now: a graph that cannot run there is refused whole */
	ret = job_user_get(s->uid, s->gid, &u);
	if (ret < 0)
		return ferr_set(err, ret, "cannot tell who the jobs run as: %s",
				strerror(-ret));
	ret = jobdir_base(j->work_dir, u.other && !j->opt.work_dir_given,
			  &u.dir, &base, &why);
	job_user_release(&u);
	if (ret < 0) {
		ferr_set(err, ret, "no folder for the jobs: %s", why.message);
		goto out;
	}
	store_int(j->host->st, "SELECT number FROM graph_runs WHERE"
		  " session = ?1", &number, STORE_INT(s->id));
	snprintf(leaf, sizeof(leaf), "run-%" PRId64, number + 1);
	if (graph_session_dir(base, s->name, s->id, leaf, &run_dir) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	jo.run_dir = run_dir;
	ret = graph_plan(j->host->st, &src, &jo, &plan, err);
	if (ret == -ENOENT)
		ret = ferr_set(err, -EINVAL, "the graph has no nodes");
	if (ret < 0)
		goto out;
	/* the files are what a user sees of the rows: the rows first, in
	 * one transaction, so the monitor never sees half a run */
	ret = store_begin(j->host->st);
	if (ret < 0)
		goto out;
	ret = store_plan(j, s, &plan, &jo, number + 1);
	if (!ret)
		ret = store_commit(j->host->st);
	else
		store_rollback(j->host->st);
	if (ret < 0) {
		ferr_set(err, ret, "cannot store the run: %s", strerror(-ret));
		goto out;
	}
	/* the run is on from here: a file that cannot be shown is logged,
	 * the jobs run all the same */
	files = clear_jobs_folder(j, s);
	for (size_t i = 0; !files && i < plan.n; i++) {
		struct sbuf script = SBUF_INIT;
		struct job_row r = { 0 };

		files = jobspec_script(&plan, i, &jo, &script);
		if (!files)
			files = put_node_file(j, s->id, plan.jobs[i].node_id,
					      "script", script.buf, script.len);
		r.session = s->id;
		r.node_id = plan.jobs[i].node_id;
		r.state = "queued";
		r.queued_ns = fclock_now_ns();
		if (!files)
			files = write_state_file(j, &r, NULL);
		sbuf_release(&script);
	}
	if (files < 0)
		log_line(j, s->id, NULL, "cannot show the jobs in jobs/: %s",
			 strerror(-files));
	log_line(j, s->id, NULL, "graph submitted: %zu jobs (%s), in %s",
		 plan.n, j->opt.executor == JOBS_SLURM ? "slurm" : "local",
		 run_dir);
	wake(j);
out:
	jobspec_plan_release(&plan);
	free(run_dir);
	free(base);
	return ret;
}

int jobs_cancel(struct jobs *j, int64_t session)
{
	struct job_row *rows;
	size_t n;
	int stopped = 0;

	if (read_rows(j->host->st, session_sql, session, &rows, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct job_row *r = &rows[i];
		bool going = !strcmp(r->state, "submitted") ||
			     !strcmp(r->state, "running");

		if (!going && strcmp(r->state, "queued"))
			continue;
		stopped = 1;
		/* a local job that runs is "cancelled" only once nothing of
		 * it is left: its supervisor stops it all, and the monitor
		 * sees the supervisor go (poll_local()) */
		if (going && !strcmp(r->executor, "local") && r->scheduler_id) {
			if (local_alive((pid_t)atol(r->scheduler_id),
					r->pid_start))
				stop_group((pid_t)atol(r->scheduler_id));
			if (!r->message || strcmp(r->message, CANCEL_NOTE))
				set_state(j, r, "running", CANCEL_NOTE, NULL);
			continue;
		}
		if (going && !strcmp(r->executor, "slurm") && r->scheduler_id)
			queue_scancel(j, r->scheduler_id);
		r->ended_ns = fclock_now_ns();
		set_state(j, r, "cancelled", NULL, NULL);
	}
	rows_free(rows, n);
	if (stopped) {
		settle_run(j, session);
		wake(j);
	}
	return stopped;
}

int jobs_node_busy(struct store *st, int64_t session, const char *id,
		   struct ferr *err)
{
	int64_t n = 0;

	if (!id)
		return run_going(st, session)
		       ? ferr_set(err, -EBUSY, "the job graph is running "
				  "(echo cancel > ctl stops it)")
		       : 0;
	if (store_int(st, "SELECT count(*) FROM graph_jobs WHERE session = ?1"
		      " AND node_id = ?2 AND state IN ('queued', 'submitted',"
		      " 'running')", &n, STORE_INT(session), STORE_TEXT(id)) < 0 ||
	    !n)
		return 0;
	return ferr_set(err, -EBUSY, "node \"%s\" is in the running job graph "
			"(see jobs/%s/state; echo cancel > ctl stops the "
			"graph)", id, id);
}

int jobs_report(struct store *st, int64_t session, json_t **report,
		int64_t *when)
{
	static const char sql[] = "SELECT r.state, r.executor, r.started_ns,"
		" coalesce(r.ended_ns, 0),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'done'),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'failed'),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'skipped'),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'cancelled'),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'running'),"
		" (SELECT max(max(coalesce(started_ns, 0), coalesce(ended_ns, 0)))"
		"   FROM graph_jobs WHERE session = ?1)"
		" FROM graph_runs r WHERE r.session = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int ret = 0, rc;

	*report = NULL;
	*when = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		int64_t started = sqlite3_column_int64(q, 2),
			ended = sqlite3_column_int64(q, 3),
			latest = sqlite3_column_int64(q, 10);

		char st[40], en[40];

		iso_time(started / 1000000000, st, sizeof(st));
		iso_time(ended / 1000000000, en, sizeof(en));
		*report = json_pack("{ss ss sI sI sI sI sI sI ss so}",
			"state", (const char *)sqlite3_column_text(q, 0),
			"executor", (const char *)sqlite3_column_text(q, 1),
			"jobs", (json_int_t)sqlite3_column_int64(q, 4),
			"done", (json_int_t)sqlite3_column_int64(q, 5),
			"failed", (json_int_t)sqlite3_column_int64(q, 6),
			"skipped", (json_int_t)sqlite3_column_int64(q, 7),
			"cancelled", (json_int_t)sqlite3_column_int64(q, 8),
			"running", (json_int_t)sqlite3_column_int64(q, 9),
			"started", st,
			"ended", ended ? json_string(en) : json_null());
		if (!*report)
			ret = -ENOMEM;
		*when = started > ended ? started : ended;
		if (latest > *when)
			*when = latest;
	} else if (rc != SQLITE_DONE) {
		ret = store_errno(rc);
	}
	store_done(q);
	return ret;
}

int jobs_problem(struct store *st, int64_t session, int64_t graph_mtime_ns,
		 struct sbuf *out)
{
	static const char run_sql[] = "SELECT r.state, r.started_ns,"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'done'),"
		" (SELECT count(*) FROM graph_jobs WHERE session = ?1"
		"   AND state = 'failed')"
		" FROM graph_runs r WHERE r.session = ?1"
		" AND r.state IN ('failed', 'cancelled')";
	static const char first_sql[] = "SELECT node_id, coalesce(message, '')"
		" FROM graph_jobs WHERE session = ?1 AND state = 'failed'"
		" ORDER BY coalesce(ended_ns, 0), position LIMIT 1";
	sqlite3_stmt *q = store_stmt(st, run_sql);
	char *state = NULL, *node = NULL, *why = NULL;
	int64_t started = 0, jobs = 0, done = 0, failed = 0;
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		state = strdup((const char *)sqlite3_column_text(q, 0));
		started = sqlite3_column_int64(q, 1);
		jobs = sqlite3_column_int64(q, 2);
		done = sqlite3_column_int64(q, 3);
		failed = sqlite3_column_int64(q, 4);
		ret = state ? 0 : -ENOMEM;
	} else if (rc != SQLITE_DONE) {
		ret = store_errno(rc);
	}
	store_done(q);
	/* no such run, or the graph changed since: history, not state */
	if (ret < 0 || !state || graph_mtime_ns > started)
		goto out;
	if (failed) {
		q = store_stmt(st, first_sql);
		if (!q) {
			ret = -EIO;
			goto out;
		}
		sqlite3_bind_int64(q, 1, session);
		if (sqlite3_step(q) == SQLITE_ROW) {
			node = strdup((const char *)sqlite3_column_text(q, 0));
			why = strdup((const char *)sqlite3_column_text(q, 1));
		}
		store_done(q);
	}
	if (!strcmp(state, "failed"))
		ret = fname_line(out, "graph: failed: %" PRId64 " of %" PRId64
				 " jobs failed%s%s%s%s%s", failed, jobs,
				 node ? " (" : "", node ? node : "",
				 why && *why ? ": " : "", why ? why : "",
				 node ? ")" : "");
	else
		ret = fname_line(out, "graph: cancelled: %" PRId64 " of %" PRId64
				 " done", done, jobs);
out:
	free(state);
	free(node);
	free(why);
	return ret;
}
