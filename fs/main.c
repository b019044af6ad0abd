/*
 * flowfs [--db=FILE] [-f] [-d] [-o OPTS] MOUNTPOINT
 *
 * Everything that can be wrong before mounting (the database, the
 * mountpoint) is checked first and reported as one line on stderr, before
 * the daemon detaches, so the caller's exit status tells the truth.
 */
#include <dirent.h>
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pwd.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "flowfs-config.h"
#include "graph/jobspec.h"
#include "graph/picture.h"
#include "lib/fclock.h"
#include "lib/fname.h"
#include "fs.h"
#include "store/backup.h"
#include "store/contents.h"

#define MAX_SKILL_DIRS 32
/* fuse_opt key of --skills=DIR, handed to take_mountpoint() */
#define KEY_SKILLS 1
/* fuse_opt key of a whole-number option (numeric_opts[]) */
#define KEY_NUMBER 2
/* fuse_opt key of -o nonempty (ours: libfuse 3 has none) */
#define KEY_NONEMPTY 3
/* the exit status of a command line flowfs cannot take */
#define EXIT_USAGE 2

struct options {
	char *db;
	char *engine_url;
	char *engine_model;
	char *engine_key_file;
	long engine_timeout_s;
	long engine_retries;
	long engine_backoff_ms;
	long exec_timeout_s;
	long exec_disk_mib;
	long exec_memory_mib;
	char *max_fetch;
	long fetch_timeout_s;
	char *fetch_low_speed;
	long fetch_jobs;
	long runs;
	int fetch_allow_private;
	char *fetch_allow;
	int allow_exec;
	char *datcom;
	long datcom_timeout_s;
	char *sandbox_user;
	char *executor;
	char *work_dir;
	char *container;
	long job_slots;
	char *skill_dirs[MAX_SKILL_DIRS];
	size_t nskill_dirs;
	char *db_opt;		/* -o db=FILE (fstab, mount -t fuse.flowfs) */
	char *source;		/* SOURCE of "flowfs SOURCE MOUNTPOINT" */
	char *mountpoint;
	int extra_args;
	int nonempty;
	int bad_number;
	int help;
	int version;
	int check;		/* --check */
	char *backup;		/* --backup=DEST */
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	{ "--db=%s", offsetof(struct options, db), 0 },
	{ "--check", offsetof(struct options, check), 1 },
	{ "--backup=%s", offsetof(struct options, backup), 0 },
	{ "db=%s", offsetof(struct options, db_opt), 0 },
	{ "nonempty", -1U, KEY_NONEMPTY },
	{ "--skills=%s", -1U, KEY_SKILLS },
	{ "--engine-url=%s", offsetof(struct options, engine_url), 0 },
	{ "--engine-model=%s", offsetof(struct options, engine_model), 0 },
	{ "--engine-key-file=%s", offsetof(struct options, engine_key_file), 0 },
	{ "--engine-timeout=", -1U, KEY_NUMBER },
	{ "--engine-retries=", -1U, KEY_NUMBER },
	{ "--engine-backoff-ms=", -1U, KEY_NUMBER },
	{ "--exec-timeout=", -1U, KEY_NUMBER },
	{ "--exec-disk=", -1U, KEY_NUMBER },
	{ "--exec-memory=", -1U, KEY_NUMBER },
	OPT("--allow-exec", allow_exec),
	{ "--datcom=%s", offsetof(struct options, datcom), 0 },
	{ "--datcom-timeout=", -1U, KEY_NUMBER },
	{ "--sandbox-user=%s", offsetof(struct options, sandbox_user), 0 },
	{ "--executor=%s", offsetof(struct options, executor), 0 },
	{ "--work-dir=%s", offsetof(struct options, work_dir), 0 },
	{ "--container=%s", offsetof(struct options, container), 0 },
	{ "--jobs=", -1U, KEY_NUMBER },
	{ "--max-fetch=%s", offsetof(struct options, max_fetch), 0 },
	{ "--fetch-timeout=", -1U, KEY_NUMBER },
	{ "--fetch-low-speed=%s", offsetof(struct options, fetch_low_speed), 0 },
	{ "--fetch-jobs=", -1U, KEY_NUMBER },
	{ "--runs=", -1U, KEY_NUMBER },
	OPT("--fetch-allow-private", fetch_allow_private),
	{ "--fetch-allow=%s", offsetof(struct options, fetch_allow), 0 },
	OPT("--help", help),
	OPT("-h", help),
	OPT("--version", version),
	OPT("-V", version),
	FUSE_OPT_END
};

/*
 * The whole-number options and the values each takes (README, -h): a
 * value outside them (or a number too large for a long) would overflow
 * the milliseconds computed from it.
 */
static const struct numeric_opt {
	const char *name;
	size_t offset;
	long min, max;
} numeric_opts[] = {
	{ "--engine-timeout", offsetof(struct options, engine_timeout_s),
	  1, 86400 },
	{ "--engine-retries", offsetof(struct options, engine_retries), 0, 100 },
	{ "--engine-backoff-ms", offsetof(struct options, engine_backoff_ms),
	  1, ENGINE_BACKOFF_MAX_MS },
	{ "--exec-timeout", offsetof(struct options, exec_timeout_s), 1, 86400 },
	{ "--datcom-timeout", offsetof(struct options, datcom_timeout_s),
	  1, DATCOMRUN_TIMEOUT_MAX },
	{ "--exec-disk", offsetof(struct options, exec_disk_mib), 1, 1L << 20 },
	{ "--exec-memory", offsetof(struct options, exec_memory_mib),
	  64, 1L << 20 },
	{ "--fetch-timeout", offsetof(struct options, fetch_timeout_s),
	  1, 7 * 86400 },
	{ "--fetch-jobs", offsetof(struct options, fetch_jobs), 1, 64 },
	{ "--runs", offsetof(struct options, runs), 1, RUNS_GOING_MAX },
	{ "--jobs", offsetof(struct options, job_slots), 1, 4096 },
};

/* --NAME=VALUE of numeric_opts[] into its field; one line and -1 when
 * VALUE is not a whole number in its range. */
static int take_number(struct options *opts, const char *arg)
{
	const char *eq = strchr(arg, '=');

	for (size_t i = 0; eq && i < sizeof(numeric_opts) / sizeof(*numeric_opts);
	     i++) {
		const struct numeric_opt *o = &numeric_opts[i];
		char *end;
		long v;

		if (strlen(o->name) != (size_t)(eq - arg) ||
		    strncmp(arg, o->name, (size_t)(eq - arg)))
			continue;
		errno = 0;
		v = strtol(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || v < o->min || v > o->max) {
			fprintf(stderr, "flowfs: %s takes a whole number from"
				" %ld to %ld, not \"%s\"\n", o->name, o->min,
				o->max, eq + 1);
			opts->bad_number = 1;
			return -1;
		}
		*(long *)((char *)opts + o->offset) = v;
		return 0;
	}
	return -1;
}

/* An absolute path for `path`, so the daemon's chdir("/") changes nothing. */
static char *absolute_path(const char *path)
{
	char cwd[PATH_MAX];
	char *out = NULL;

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

/*
 * Take the mountpoint out of the arguments: libfuse would resolve it
 * itself and report a missing one in its own words, not ours.  Collect
 * the --skills folders (the option may be repeated).
 */
static int take_mountpoint(void *data, const char *arg, int key,
			   struct fuse_args *outargs)
{
	struct options *opts = data;

	(void)outargs;
	if (key == KEY_NUMBER)
		return take_number(opts, arg);
	if (key == KEY_NONEMPTY) {
		opts->nonempty = 1;
		return 0;
	}
	if (key == KEY_SKILLS) {
		if (opts->nskill_dirs == MAX_SKILL_DIRS) {
			fprintf(stderr, "flowfs: at most %d --skills folders\n",
				MAX_SKILL_DIRS);
			return -1;
		}
		opts->skill_dirs[opts->nskill_dirs] =
			absolute_path(arg + strlen("--skills="));
		return opts->skill_dirs[opts->nskill_dirs++] ? 0 : -1;
	}
	/* x-systemd.automount and the like, which mount(8) passes on from
	 * an fstab line: for the tools that read fstab, not for flowfs */
	if (key == FUSE_OPT_KEY_OPT && !strncmp(arg, "x-", 2))
		return 0;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	/* "flowfs SOURCE MOUNTPOINT", as mount.fuse3 runs it: the first
	 * of two is the database */
	if (opts->source) {
		opts->extra_args++;
		return 0;
	}
	if (opts->mountpoint) {
		opts->source = opts->mountpoint;
		opts->mountpoint = NULL;
	}
	opts->mountpoint = strdup(arg);
	return opts->mountpoint ? 0 : -1;
}

static void usage(const char *prog)
{
	printf("usage: %s [--db=FILE] [-f] [-d] [-o OPTS] MOUNTPOINT\n"
	       "       %s FILE MOUNTPOINT [-o OPTS]  (as mount -t fuse.flowfs runs it)\n"
	       "       flowfs --db=FILE --check | --backup=DEST  (mounted or not)\n"
	       "\n"
	       "Shows the agent workflow sessions stored in FILE as folders.\n"
	       "\n"
	       "  --db=FILE   the database (default $XDG_DATA_HOME/flowfs/flowfs.db,\n"
	       "              i.e. ~/.local/share/flowfs/flowfs.db; created if missing);\n"
	       "              also -o db=FILE, or FILE before MOUNTPOINT; large files'\n"
	       "              contents are in FILE.d/\n"
	       "  --check     verify the store (every data file there and whole, every\n"
	       "              count right): one line per problem, exit 1 if any\n"
	       "  --backup=DEST  a consistent copy of the store, while mounted: the\n"
	       "              database to DEST, its data files to DEST.d/ (linked)\n"
	       "  --skills=DIR  a folder of skill packages (repeatable); also searched:\n"
	       "              $XDG_CONFIG_HOME/flowfs/skills and the built-in skills\n"
	       "  --engine-url=URL  an OpenAI-compatible base URL (e.g.\n"
	       "              http://127.0.0.1:8080/v1): `echo run > X/ctl` runs\n"
	       "              session X against it.  Nothing is sent anywhere without it.\n"
	       "  --engine-model=NAME  the model to ask for (default \"default\")\n"
	       "  --engine-key-file=FILE  the API key (else $FLOWFS_ENGINE_KEY)\n"
	       "  --engine-timeout=S  seconds one engine call may take (300;\n"
	       "              1 to 86400)\n"
	       "  --engine-retries=N  retries on 429, 5xx and timeouts (3; 0 to 100)\n"
	       "  --engine-backoff-ms=MS  the first wait before a retry (1000;\n"
	       "              1 to 60000); it doubles, up to 60 s\n"
	       "  --allow-exec  let scientific-workflow runs execute experiments,\n"
	       "                in a bubblewrap sandbox (bwrap must be on PATH)\n"
	       "  --exec-timeout=S  seconds an experiment may run (120; 1 to 86400)\n"
	       "  --sandbox-user=NAME|UID  the host user experiments run as when\n"
	       "              flowfs runs as root (flowfs-sandbox if there, else\n"
	       "              65534, nobody; never root)\n"
	       "  --datcom=PATH  a USAF Digital DATCOM program: output/for006.dat,\n"
	       "              coefficients.csv and coefficients.svg of datcom\n"
	       "              sessions run it on their deck, in the sandbox\n"
	       "              (bwrap must be on PATH)\n"
	       "  --datcom-timeout=S  seconds DATCOM may run on a deck (30;\n"
	       "              1 to 3600)\n"
	       "  --exec-disk=MIB  what an experiment may write to its folder\n"
	       "              (1024; 1 to 1048576)\n"
	       "  --exec-memory=MIB  the memory of an experiment's whole sandbox,\n"
	       "              where a cgroup can be made (4096; 64 to 1048576)\n"
	       "  --max-fetch=SIZE  the largest URL input fetched (1G; K, M, G)\n"
	       "  --fetch-timeout=S  seconds a fetch may take (3600; 1 to 604800)\n"
	       "  --fetch-low-speed=BYTES:S  a fetch slower than BYTES a second\n"
	       "              for S seconds fails (1K:30; 0: no such limit)\n"
	       "  --fetch-jobs=N  fetches going on at once, the rest wait (4; 1 to 64)\n"
	       "  --runs=N    engine runs (and their experiments) going on at once,\n"
	       "              all sessions together; the rest wait (4; 1 to 64)\n"
	       "  --fetch-allow-private  fetch from loopback, private, link-local\n"
	       "              and this machine's addresses too (refused by default)\n"
	       "  --fetch-allow=ADDR[/BITS],...  fetch from these addresses and\n"
	       "              ranges whatever they are (e.g. a NAS: 192.168.1.10)\n"
	       "  --executor=local|slurm  where `echo submit > SESSION/ctl` runs the\n"
	       "              job graph: this machine (default) or Slurm (sbatch)\n"
	       "  --work-dir=DIR  the jobs' folders, outside the mount; on a file\n"
	       "              system the cluster's nodes reach for slurm (default\n"
	       "              $XDG_STATE_HOME/flowfs/jobs, ~/.local/state/flowfs/jobs)\n"
	       "  --jobs=N    local jobs running at once (the CPUs; 1 to 4096)\n"
	       "  --container=CMD  run a node that has an image as CMD + its command,\n"
	       "              CMD's words (split at blanks outside {{ }}) templates\n"
	       "              seeing {{ image }} and {{ job_dir }}\n"
	       "              (e.g. \"apptainer exec docker://{{ image }}\")\n"
	       "  -f          stay in the foreground and print log lines on stderr\n"
	       "              (else they go to syslog)\n"
	       "  -d          debug: print every request (implies -f)\n"
	       "  -o OPTS     mount options (see mount.fuse3(8)); -o nonempty mounts\n"
	       "              on a folder that has files (hidden while mounted)\n"
	       "  -V          print the version\n"
	       "\n"
	       "Unmount with: fusermount3 -u MOUNTPOINT\n", prog, prog);
}

/* mkdir -p of the folder that holds `path`. */
static int make_parent_dirs(const char *path)
{
	return fname_make_dirs(path, 0700, true);
}

/* $XDG_CONFIG_HOME/flowfs/<name> (~/.config/flowfs/<name>); NULL when
 * neither is set or out of memory. */
/*
 * The user's home folder: $HOME when it is an absolute path to a folder of
 * the user's own, else the passwd entry's.  mount(8) runs its helpers with
 * an environment that is not the user's (HOME may be root's), so a HOME
 * that is not the user's is not taken.  NULL when there is none.
 */
static const char *home_dir(void)
{
	const char *home = getenv("HOME");
	struct passwd *pw;
	struct stat st;

	if (home && home[0] == '/' && stat(home, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == getuid())
		return home;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/*
 * A folder of the XDG base-directory spec: $<xdg_var>/flowfs/<leaf> when
 * the variable is an absolute path, else <home>/<home_rel>/flowfs/<leaf>;
 * NULL (errno ENOENT) without a home, or out of memory.
 */
static char *xdg_path(const char *xdg_var, const char *home_rel,
		      const char *leaf)
{
	const char *base = getenv(xdg_var), *home = home_dir();
	char *path = NULL;

	if (base && base[0] == '/')
		return asprintf(&path, "%s/flowfs/%s", base, leaf) < 0 ? NULL
								       : path;
	if (!home) {
		errno = ENOENT;
		return NULL;
	}
	return asprintf(&path, "%s/%s/flowfs/%s", home, home_rel, leaf) < 0
		       ? NULL : path;
}

static char *config_path(const char *name)
{
	char *path = xdg_path("XDG_CONFIG_HOME", ".config", name);

	return path || errno != ENOENT ? path : strdup("/nonexistent");
}

/*
 * The skill search folders: --skills first, then the user's, then the
 * built-in ones (installed, or the source tree's when running from a
 * build that was not installed).
 */
static int open_skills(const struct options *opts, struct skill_registry **out)
{
	const char *dirs[MAX_SKILL_DIRS + 2];
	char *user = config_path("skills");
	struct stat st;
	size_t n = 0;
	int ret;

	if (!user)
		return -ENOMEM;
	for (size_t i = 0; i < opts->nskill_dirs; i++)
		dirs[n++] = opts->skill_dirs[i];
	dirs[n++] = user;
	dirs[n++] = stat(FLOWFS_DATADIR "/skills", &st) == 0
			    ? FLOWFS_DATADIR "/skills" : FLOWFS_SOURCE_SKILLS;
	ret = skill_registry_new(out, dirs, n);
	free(user);
	return ret;
}

static char *default_db_path(void)
{
	return xdg_path("XDG_DATA_HOME", ".local/share", "flowfs.db");
}

/* Open (creating, migrating) the store; one line on stderr on failure. */
static int open_store(const char *db, struct store **out)
{
	struct ferr err = FERR_INIT;
	int ret;

	ret = make_parent_dirs(db);
	if (ret < 0) {
		fprintf(stderr, "flowfs: cannot create the folder for %s: %s\n",
			db, strerror(-ret));
		return ret;
	}
	ret = store_open(out, db, &err);
	if (ret < 0)
		fprintf(stderr, "flowfs: %s\n", err.message);
	else if (store_warning(*out))
		fprintf(stderr, "flowfs: %s\n", store_warning(*out));
	return ret;
}

/*
 * $FLOWFS_ENGINE_KEY, taken out of the environment (NULL when unset or
 * out of memory): whatever the daemon starts (the refresher, an
 * experiment, libcurl's helpers) must not inherit it, and
 * /proc/<pid>/environ shows the environment the process started with,
 * so the value is wiped there too.  Called before any thread exists.
 */
static char *take_env_key(void)
{
	static const char name[] = "FLOWFS_ENGINE_KEY=";
	char *env = getenv("FLOWFS_ENGINE_KEY");
	char *key = env && *env ? strdup(env) : NULL;

	/* every entry: execve() may pass the name twice, and getenv()
	 * finds the first only */
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, name, sizeof(name) - 1))
			explicit_bzero(*e + sizeof(name) - 1,
				       strlen(*e + sizeof(name) - 1));
	unsetenv("FLOWFS_ENGINE_KEY");
	return key;
}

/*
 * Credentials in --engine-url (user:password@) out of the command line
 * other users read in /proc/<pid>/cmdline and ps(1): the option's text
 * was copied by fuse_opt_parse(), argv's own bytes are overwritten.
 */
static void hide_url_credentials(int argc, char *argv[])
{
	for (int i = 1; i < argc; i++) {
		char *url = argv[i], *rest, *end, *at = NULL, *query;

		if (strncmp(url, "--engine-url=", 13))
			continue;
		rest = strstr(url, "://");
		if (!rest)
			continue;
		rest += 3;
		/* the authority ends at the first '/', '?' or '#'; its
		 * userinfo at the last '@' in it (a raw '@' in a password) */
		end = rest + strcspn(rest, "/?#");
		for (char *p = rest; p < end; p++)
			if (*p == '@')
				at = p;
		for (char *p = rest; at && p < at; p++)
			*p = '*';
		/* a key may be in the query too (engine_url_shown()) */
		query = strchr(end, '?');
		for (char *p = query ? query + 1 : NULL; p && *p && *p != '#'; p++)
			*p = '*';
	}
}

/* The engine key: --engine-key-file's first line, else
 * $FLOWFS_ENGINE_KEY (`env`, taken over), else none.  Never printed. */
static int read_engine_key(const struct options *opts, char *env, char **key)
{
	char line[4096];
	FILE *f;
	size_t len;

	*key = NULL;
	if (!opts->engine_key_file) {
		*key = env;
		return 0;
	}
	if (env)
		explicit_bzero(env, strlen(env));
	free(env);
	f = fopen(opts->engine_key_file, "r");
	if (!f) {
		int saved = errno;

		fprintf(stderr, "flowfs: cannot read the engine key file %s: %s\n",
			opts->engine_key_file, strerror(saved));
		return -saved;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	len = strlen(line);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
		       line[len - 1] == ' '))
		line[--len] = '\0';
	if (!len) {
		fprintf(stderr, "flowfs: the engine key file %s is empty\n",
			opts->engine_key_file);
		return -EINVAL;
	}
	*key = strdup(line);
	explicit_bzero(line, sizeof(line));
	return *key ? 0 : -ENOMEM;
}

/* A run's bookkeeping writes what it did (fs.h: the locks). */
static void host_lock(void *ctx)
{
	fs_lock_write(ctx);
}

static void host_unlock(void *ctx)
{
	fs_unlock(ctx);
}

static void host_changed(void *ctx, int64_t session, uint64_t parent,
			 const char *name)
{
	struct flowfs *fs = ctx;

	fs_notify_entry(fs->notifier, parent, name);
	fs_notify_session(fs->notifier, session);
}

static void host_settle(void *ctx)
{
	fs_notify_settle(((struct flowfs *)ctx)->notifier);
}

static void host_log(void *ctx, int64_t session, const char *path,
		     const char *message)
{
	struct flowfs *fs = ctx;
	struct session_info s;

	/* a session removed meanwhile has no log to keep it */
	if (session_get(fs->st, session, &s) == 0)
		fs_log(fs, s.id, s.name, path, message);
	/* a run or fetch started or ended: status shows it */
	fs_notify_session(fs->notifier, session);
}

/* A size such as 500M or 2G (K, M, G: binary), or -1 when `text` is
 * not one. */
static long long parse_size(const char *text)
{
	char *end;
	long long v;
	int shift;

	errno = 0;
	v = strtoll(text, &end, 10);
	shift = !strcasecmp(end, "k") ? 10 : !strcasecmp(end, "m") ? 20
		: !strcasecmp(end, "g") ? 30 : *end ? -1 : 0;
	if (end == text || errno || v <= 0 || shift < 0 ||
	    v > (1LL << (62 - shift)))
		return -1;
	return v << shift;
}

/* --fetch-low-speed=BYTES:SECONDS (BYTES a size), or 0: none. */
static int parse_low_speed(const char *text, struct fetch_limits *f)
{
	const char *colon = strchr(text, ':');
	char bytes[32], *end;
	long long v;
	long secs;

	if (!strcmp(text, "0")) {
		f->low_speed_bytes = -1;
		return 0;
	}
	if (!colon || (size_t)(colon - text) >= sizeof(bytes))
		goto bad;
	memcpy(bytes, text, (size_t)(colon - text));
	bytes[colon - text] = '\0';
	v = parse_size(bytes);
	errno = 0;
	secs = strtol(colon + 1, &end, 10);
	if (v <= 0 || v > (1LL << 30) || end == colon + 1 || *end || errno ||
	    secs < 1 || secs > 86400)
		goto bad;
	f->low_speed_bytes = (long)v;
	f->low_speed_s = secs;
	return 0;
bad:
	fprintf(stderr, "flowfs: --fetch-low-speed takes BYTES:SECONDS such as"
		" 1K:30 (at most 1G and 86400), or 0\n");
	return -EINVAL;
}

/* A run ended: a queued one may start (runs.h). */
static void host_ended(void *ctx, const struct run *r)
{
	runs_next(&((struct flowfs *)ctx)->runs, r);
}

static bool host_generated(void *ctx, const char *name)
{
	return fs_entry_find(ctx, NULL, SCOPE_OUTPUT, name) >= 0;
}

/* The system user made for the sandbox (tools/setup), by default. */
#define SANDBOX_USER "flowfs-sandbox"

/*
 * The host user a root daemon's sandbox runs as: --sandbox-user's NAME or
 * UID (a number with no user takes its own number as gid), else
 * SANDBOX_USER when it exists, else nobody, with a warning when it
 * matters (root, --allow-exec).  -EINVAL and one line for a bad value.
 */
static int take_sandbox_user(const struct options *opts, struct sandbox_limits *lim)
{
	const char *given = opts->sandbox_user;
	struct passwd *pw = NULL;

	if (given && *given && strspn(given, "0123456789") == strlen(given)) {
		unsigned long v;

		errno = 0;
		v = strtoul(given, NULL, 10);
		/* (uid_t)-1 is "no change" to setresuid() */
		if (errno || v == 0 || v >= (uid_t)-1) {
			fprintf(stderr, "flowfs: --sandbox-user takes a user name"
				" or a uid from 1 to %u, not \"%s\" (never root:"
				" the sandbox would own root's files)\n",
				(unsigned)(uid_t)-2, given);
			return -EINVAL;
		}
		pw = getpwuid((uid_t)v);
		lim->uid = (uid_t)v;
		lim->gid = pw ? pw->pw_gid : (gid_t)v;
	} else if (given) {
		pw = getpwnam(given);
		if (!pw) {
			fprintf(stderr, "flowfs: --sandbox-user: no user named"
				" \"%s\"\n", given);
			return -EINVAL;
		}
		lim->uid = pw->pw_uid;
		lim->gid = pw->pw_gid;
	} else if ((pw = getpwnam(SANDBOX_USER)) && pw->pw_uid && pw->pw_gid) {
		lim->uid = pw->pw_uid;
		lim->gid = pw->pw_gid;
	} else {
		lim->uid = lim->gid = SANDBOX_ID;
		if (geteuid() == 0 && opts->allow_exec)
			fprintf(stderr, "flowfs: warning: experiments run as uid"
				" %d (nobody), which other services share; make"
				" them a user of their own: useradd --system"
				" --no-create-home --shell /usr/sbin/nologin "
				SANDBOX_USER "\n", SANDBOX_ID);
	}
	if (lim->uid == 0 || lim->gid == 0) {
		fprintf(stderr, "flowfs: --sandbox-user cannot be root (uid or"
			" gid 0): the sandbox would own root's files\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * Where experiments' cgroups go: found once the daemon is the process
 * that runs them and before it starts another (a v2 cgroup moves it,
 * and may hold no other process).  0, or a negative errno and `why`.
 */
static int find_cgroups(struct flowfs *fs, struct ferr *why)
{
	int ret = cgroup_base_find(&fs->cgroups, why);

	if (!ret)
		fs->run_opt.limits.cgroups = &fs->cgroups;
	return ret;
}

/* One line saying which bound of the sandbox is in force. */
static void log_cgroups(struct flowfs *fs, const struct ferr *why)
{
	const struct sandbox_limits *lim = &fs->run_opt.limits;
	char line[PATH_MAX + 512];
	long procs = lim->procs > 0 ? lim->procs : 256;

	if (lim->cgroups)
		snprintf(line, sizeof(line), "a cgroup (v%d) for each: %ld MiB"
			 " of memory and %ld processes for the whole sandbox",
			 fs->cgroups.version, lim->memory_total_mib > 0 ?
			 lim->memory_total_mib : 4096, procs);
	else
		snprintf(line, sizeof(line), "no cgroup (%s): the sandbox is"
			 " bounded per process only, %ld MiB of address space"
			 " each and %ld processes", why->message,
			 lim->memory_mib > 0 ? lim->memory_mib : 2048, procs);
	fs_log(fs, 0, "", "experiments", line);
}

/* $XDG_STATE_HOME/flowfs/jobs (~/.local/state/flowfs/jobs). */
static char *default_work_dir(void)
{
	char *path = xdg_path("XDG_STATE_HOME", ".local/state", "jobs");

	return path || errno != ENOENT ? path : strdup("/tmp/flowfs-jobs");
}

/* `path` with its longest existing ancestor resolved (realpath) and the
 * rest as it is: where making it would put it, NULL when unknown. */
static char *resolve_existing(const char *path)
{
	char *copy = strdup(path), *cut, *real = NULL, *out = NULL;

	if (!copy)
		return NULL;
	for (;;) {
		real = realpath(copy[0] ? copy : "/", NULL);
		if (real || errno != ENOENT || !(cut = strrchr(copy, '/')))
			break;
		*cut = '\0';
	}
	if (real && asprintf(&out, "%s%s", strcmp(real, "/") ? real : "",
			     path + strlen(copy)) < 0)
		out = NULL;
	free(real);
	free(copy);
	return out;
}

static bool is_inside(const char *path, const char *mountpoint)
{
	size_t ml = strlen(mountpoint);

	return !strncmp(path, mountpoint, ml) &&
	       (path[ml] == '/' || !path[ml] || ml == 1);
}

/*
 * Where the job graph runs: the executor, and a work folder of its own
 * outside the mount (a job writing into the mount would call the daemon
 * that waits for it).  One line and -EINVAL for a bad value.
 */
static int configure_jobs(struct flowfs *fs, const struct options *opts,
			  const char *mountpoint)
{
	struct jobs_options *o = &fs->jobs_opt;
	char *dir, *real;
	int ret;

	if (!opts->executor || !strcmp(opts->executor, "local")) {
		o->executor = JOBS_LOCAL;
	} else if (!strcmp(opts->executor, "slurm")) {
		o->executor = JOBS_SLURM;
	} else {
		fprintf(stderr, "flowfs: --executor takes local or slurm, not"
			" \"%s\"\n", opts->executor);
		return -EINVAL;
	}
	dir = opts->work_dir ? absolute_path(opts->work_dir)
			     : default_work_dir();
	if (!dir)
		return -ENOMEM;
	/* refused before anything is made in the mount point's folder */
	real = resolve_existing(dir);
	if (real && is_inside(real, mountpoint)) {
		fprintf(stderr, "flowfs: the work folder %s is inside the mount"
			" point: jobs must run outside it (--work-dir)\n", real);
		free(real);
		free(dir);
		return -EINVAL;
	}
	free(real);
	ret = make_parent_dirs(dir);
	if (!ret && mkdir(dir, 0700) < 0 && errno != EEXIST)
		ret = -errno;
	real = ret ? NULL : realpath(dir, NULL);
	if (!real) {
		fprintf(stderr, "flowfs: cannot make the work folder %s: %s\n",
			dir, strerror(ret ? -ret : errno));
		free(dir);
		return -EINVAL;
	}
	free(dir);
	if (is_inside(real, mountpoint)) {
		fprintf(stderr, "flowfs: the work folder %s is inside the mount"
			" point: jobs must run outside it (--work-dir)\n", real);
		free(real);
		return -EINVAL;
	}
	o->work_dir = real;
	o->work_dir_given = opts->work_dir != NULL;
	o->slots = (unsigned)(opts->job_slots > 0 ? opts->job_slots : 0);
	/* split at blanks outside {{ }}: "-v {{ job_dir }}:{{ job_dir }}"
	 * is two words, not six; each checked now, not at the first submit */
	if (opts->container) {
		struct ferr err = FERR_INIT;

		ret = jobspec_runner_words(opts->container, &fs->container,
					   &err);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0) {
			fprintf(stderr, "flowfs: --container: %s\n",
				err.message);
			return -EINVAL;
		}
	}
	o->container = (const char *const *)fs->container;
	return 0;
}

/* What runs use: the engine, exec, and the filesystem they write to. */
static int configure_runs(struct flowfs *fs, const struct options *opts,
			  char *key)
{
	struct run_options *o = &fs->run_opt;

	if (opts->engine_url && strncmp(opts->engine_url, "http://", 7) &&
	    strncmp(opts->engine_url, "https://", 8)) {
		fprintf(stderr, "flowfs: --engine-url must be an http:// or"
			" https:// URL\n");
		return -EINVAL;
	}
	if (opts->engine_url) {
		char *shown = engine_url_shown(opts->engine_url);

		if (!shown || !strcmp(shown, "(not a URL)")) {
			fprintf(stderr, "flowfs: --engine-url is not a URL\n");
			free(shown);
			return -EINVAL;
		}
		free(shown);
	}
	o->engine.url = opts->engine_url;
	o->engine.model = opts->engine_model ? opts->engine_model : "default";
	o->engine.key = key;
	o->engine.timeout_ms = opts->engine_timeout_s * 1000;
	/* -1 (not given): engine.h's default */
	o->engine.retries = (int)opts->engine_retries;
	o->engine.backoff_ms = opts->engine_backoff_ms;
	o->allow_exec = opts->allow_exec;
	o->limits.wall_s = opts->exec_timeout_s;
	if (take_sandbox_user(opts, &o->limits) < 0)
		return -EINVAL;
	if (o->allow_exec) {
		struct ferr err = FERR_INIT;
		const char *tmp = getenv("TMPDIR");
		size_t swept;

		/* experiments run in bubblewrap, or not at all; one sandbox
		 * is made now, so that a host where bwrap cannot make one
		 * (user namespaces off) is told at start, not at each run */
		if (sandbox_check(&err) < 0 ||
		    sandbox_scratch_open(tmp && *tmp == '/' ? tmp : "/tmp",
				      &fs->scratch, &swept, &err) < 0 ||
		    sandbox_trial(fs->scratch.path, &o->limits, &err) < 0) {
			fprintf(stderr, "flowfs: %s\n", err.message);
			return -ENOENT;
		}
		o->scratch = fs->scratch.path;
	}
	o->limits.disk_mib = opts->exec_disk_mib;
	o->limits.memory_total_mib = opts->exec_memory_mib;
	o->fetch.timeout_s = opts->fetch_timeout_s;
	if (opts->max_fetch) {
		long long v = parse_size(opts->max_fetch);

		if (v < 0) {
			fprintf(stderr, "flowfs: --max-fetch takes a size such"
				" as 500M or 2G\n");
			return -EINVAL;
		}
		o->fetch.max_bytes = (int64_t)v;
	}
	if (opts->fetch_low_speed &&
	    parse_low_speed(opts->fetch_low_speed, &o->fetch) < 0)
		return -EINVAL;
	/* 0: not given (numeric_opts[] checked its range, from 1) */
	o->fetch_jobs = (unsigned)opts->fetch_jobs;
	o->fetch.allow_private = opts->fetch_allow_private;
	if (opts->fetch_allow) {
		struct ferr err = FERR_INIT;

		if (fetch_parse_allow(opts->fetch_allow, &o->fetch, &err) < 0) {
			fprintf(stderr, "flowfs: %s\n", err.message);
			return -EINVAL;
		}
	}
	fs->run_host = (struct run_host){ .ctx = fs, .lock = host_lock,
					  .unlock = host_unlock,
					  .changed = host_changed,
					  .settle = host_settle,
					  .log = host_log,
					  .fetches = &fs->fetch_queue,
					  .generated = host_generated,
					  .ended = host_ended };
	fs->runs.going_max = (unsigned)opts->runs;
	return 0;
}

/*
 * --datcom: the program, checked now (a file one may run), and what runs
 * it: the sandbox (bwrap) and a scratch folder, shared with --allow-exec.
 * -ENOENT after one line on stderr when something it needs is missing.
 */
static int configure_datcom(struct flowfs *fs, const struct options *opts)
{
	struct datcomrun_options o = { .timeout_s = opts->datcom_timeout_s };
	struct ferr err = FERR_INIT;
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	char *program;
	size_t swept;
	int ret;

	if (!opts->datcom)
		return 0;
	program = realpath(opts->datcom, NULL);
	if (!program || stat(program, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(program, X_OK) < 0) {
		fprintf(stderr, "flowfs: --datcom=%s: %s\n", opts->datcom,
			!program ? strerror(errno) : "not a program one may run"
			" (a regular file with execute permission)");
		free(program);
		return -ENOENT;
	}
	if (sandbox_check(&err) < 0) {
		fprintf(stderr, "flowfs: --datcom runs DATCOM in bubblewrap, and"
			" no bwrap is on PATH: install it (Debian package"
			" bubblewrap)\n");
		free(program);
		return -ENOENT;
	}
	if (!fs->scratch.path &&
	    sandbox_scratch_open(tmp && *tmp == '/' ? tmp : "/tmp",
				 &fs->scratch, &swept, &err) < 0) {
		fprintf(stderr, "flowfs: %s\n", err.message);
		free(program);
		return -ENOENT;
	}
	o.program = program;
	o.scratch = fs->scratch.path;
	/* the sandbox's user (--sandbox-user); its cgroups when found
	 * (--allow-exec looks for them) */
	o.limits = fs->run_opt.limits;
	o.limits.cgroups = &fs->cgroups;
	fs->datcom = calloc(1, sizeof(*fs->datcom));
	ret = fs->datcom ? datcomrun_init(fs->datcom, &o) : -ENOMEM;
	if (ret < 0) {
		free(fs->datcom);
		fs->datcom = NULL;
		free(program);
	}
	return ret;
}

static void release_datcom(struct flowfs *fs)
{
	char *program;

	if (!fs->datcom)
		return;
	program = (char *)fs->datcom->opt.program;
	datcomrun_release(fs->datcom);
	free(fs->datcom);
	fs->datcom = NULL;
	free(program);
}

/* A mount point of /proc/self/mountinfo, its octal escapes undone
 * (\040 a space, \011 a tab, \012 a newline, \134 a backslash). */
static void unescape_mount_point(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
					(s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Whether something is mounted on `real` (an absolute path, resolved). */
static bool mounted_on(const char *real)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		char *field = line, *end;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
		for (int i = 0; i < 4 && field; i++) {
			field = strchr(field, ' ');
			if (field)
				field++;
		}
		if (!field)
			continue;
		end = strchr(field, ' ');
		if (end)
			*end = '\0';
		unescape_mount_point(field);
		found = !strcmp(field, real);
	}
	free(line);
	fclose(f);
	return found;
}

static bool has_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

/* Each --skills folder is one that holds skill packages (one line
 * when not: a missing one was accepted without a word, and a package
 * given itself showed its subfolders as broken skills). */
static int check_skill_dirs(const struct options *opts)
{
	for (size_t i = 0; i < opts->nskill_dirs; i++) {
		const char *dir = opts->skill_dirs[i];
		char manifest[PATH_MAX];
		struct stat st;

		if (stat(dir, &st) < 0) {
			fprintf(stderr, "flowfs: --skills folder %s: %s\n", dir,
				strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "flowfs: --skills %s is not a folder\n",
				dir);
			return -1;
		}
		snprintf(manifest, sizeof(manifest), "%s/SKILL.md", dir);
		if (stat(manifest, &st) == 0) {
			fprintf(stderr, "flowfs: --skills %s is a skill package"
				" itself: give the folder that holds it\n", dir);
			return -1;
		}
	}
	return 0;
}

/*
 * The mountpoint is a folder flowfs may mount on, as rclone and sshfs
 * users expect: not a mount already (a second daemon would stack on
 * the first, over the same database), not a dead one, and empty unless
 * -o nonempty (its files would be hidden without a word).
 */
static int check_mountpoint(const char *mp, bool nonempty)
{
	static const char dead[] = "flowfs: %s is a mount whose daemon has"
		" ended; clear it with: fusermount3 -u %s\n";
	struct statvfs sv;
	struct stat st;
	char *real;
	bool mounted;

	if (stat(mp, &st) < 0) {
		if (errno == ENOTCONN)
			fprintf(stderr, dead, mp, mp);
		else
			fprintf(stderr, "flowfs: mountpoint %s: %s\n", mp,
				strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "flowfs: mountpoint %s is not a folder\n", mp);
		return -1;
	}
	real = realpath(mp, NULL);
	mounted = real && mounted_on(real);
	free(real);
	if (mounted) {
		/* the kernel may answer a stat of a dead mount from its
		 * cache, never a statfs */
		if (statvfs(mp, &sv) < 0 && errno == ENOTCONN)
			fprintf(stderr, dead, mp, mp);
		else
			fprintf(stderr, "flowfs: %s is already mounted (unmount"
				" it first: fusermount3 -u %s)\n", mp, mp);
		return -1;
	}
	if (!nonempty && has_entries(mp)) {
		fprintf(stderr, "flowfs: %s is not empty, and its files would"
			" be hidden while mounted: mount on an empty folder, or"
			" add -o nonempty\n", mp);
		return -1;
	}
	return 0;
}

/*
 * The database flowfs created for a mount that then failed, and the
 * folders it made for it (from the top one made, `made_top`): a failed
 * mount leaves nothing behind.
 */
static void undo_created_db(const char *db, const char *made_top)
{
	static const char *const suffixes[] = { "", "-wal", "-shm",
						"-journal" };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
		snprintf(path, sizeof(path), "%s%s", db, suffixes[i]);
		unlink(path);
	}
	/* the data folder, empty as made but for the mount's lock */
	snprintf(path, sizeof(path), "%s.d/lock", db);
	unlink(path);
	snprintf(path, sizeof(path), "%s.d", db);
	rmdir(path);
	if (!made_top)
		return;
	snprintf(path, sizeof(path), "%s", db);
	for (;;) {
		char *slash = strrchr(path, '/');

		if (!slash || slash == path)
			break;
		*slash = '\0';
		if (rmdir(path) < 0 || !strcmp(path, made_top))
			break;
	}
}

/* The top folder make_parent_dirs() would make for `path` (NULL: none). */
static char *first_missing_parent(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (stat(buf, &st) < 0)
			return strdup(buf);
		*p = '/';
	}
	return NULL;
}

/*
 * fuse_session_new(), its complaints about the options (libfuse prints
 * "fuse: unknown option(s): `-o foo'") in flowfs's words.
 */
static struct fuse_session *new_session(struct fuse_args *args,
					struct flowfs *fs)
{
	struct fuse_session *se;
	int saved = dup(STDERR_FILENO);
	int cap = memfd_create("flowfs-options", MFD_CLOEXEC);
	char said[1024];
	ssize_t n = 0;

	if (saved < 0 || cap < 0) {
		if (saved >= 0)
			close(saved);
		if (cap >= 0)
			close(cap);
		return fuse_session_new(args, &fs_ops, sizeof(fs_ops), fs);
	}
	fflush(stderr);
	dup2(cap, STDERR_FILENO);
	se = fuse_session_new(args, &fs_ops, sizeof(fs_ops), fs);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if (lseek(cap, 0, SEEK_SET) == 0)
		n = read(cap, said, sizeof(said) - 1);
	close(cap);
	said[n > 0 ? n : 0] = '\0';
	for (char *line = said, *next; *line; line = next) {
		const char *unknown = "fuse: unknown option(s): `";
		size_t len = strcspn(line, "\n");

		next = line + len + (line[len] == '\n');
		line[len] = '\0';
		if (!strncmp(line, unknown, strlen(unknown))) {
			char *opt = line + strlen(unknown);

			opt[strcspn(opt, "'")] = '\0';
			fprintf(stderr, "flowfs: unknown option %s (see flowfs"
				" --help)\n", opt);
		} else if (*line) {
			fprintf(stderr, "flowfs: %s\n",
				strncmp(line, "fuse: ", 6) ? line : line + 6);
		}
	}
	return se;
}

/*
 * What main() carries from one step to the next, and what release()
 * frees whichever step stopped it.
 */
struct daemon {
	struct fuse_args args;
	struct fuse_cmdline_opts cmd;
	struct options opts;
	char *engine_key, *env_key;
	struct flowfs fs;
	struct fuse_session *se;
	struct fuse_loop_config *loop;
	/* a database others may read (said once mounted), and why the
	 * experiments' cgroups could not be made */
	struct ferr exposed, cgroup_why;
	char *db, *made_top;
	bool db_made, handlers, mounted;
	int lock_fd;		/* lock_store() */
};

/* What a step returns to go on; anything else is the exit status. */
#define GO_ON (-1)

/*
 * No core dump and no ptrace or /proc/<pid>/mem by another process of the
 * same user (an experiment, a fetched script): the daemon holds the
 * engine key and every session's data.  It also makes /proc/<pid>/
 * root's; nothing of flowfs reads its own from outside.
 */
static void harden(void)
{
	prctl(PR_SET_DUMPABLE, 0);
	/*
	 * One request runs at a time (one lock), so per-thread malloc arenas
	 * buy nothing, and large transient buffers (a rendered
	 * parameters.json is megabytes) should go back to the system when
	 * freed instead of staying in an arena for good.  The threshold sits
	 * above the 1 MiB read and write buffers: mapping each of those anew
	 * cost a third of cold-read speed.
	 */
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	/* fixing the threshold above also fixes this one at 128 KiB: keep
	 * the heap from shrinking and growing again around every request */
	mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
}

/* --check's lines, on stdout. */
static void say_problem(void *ctx, int64_t session, const char *line)
{
	(void)session;
	printf("%s: %s\n", (const char *)ctx, line);
}

static void say_note(void *ctx, int64_t session, const char *line)
{
	(void)session;
	printf("%s: note: %s\n", (const char *)ctx, line);
}

/*
 * flowfs --db=FILE --check | --backup=DEST: no mount (the database may be
 * mounted meanwhile: both only read it).  --check exits 1 naming every
 * problem, --backup 1 with why it could not.
 */
static int store_tool(struct daemon *d)
{
	struct options *opts = &d->opts;
	const char *given = opts->db ? opts->db : opts->db_opt ? opts->db_opt
							       : opts->source;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	int ret, n;

	if (opts->check && opts->backup) {
		fprintf(stderr, "flowfs: --check or --backup, not both\n");
		return EXIT_USAGE;
	}
	d->db = given ? absolute_path(given) : default_db_path();
	if (!d->db || access(d->db, F_OK) < 0) {
		fprintf(stderr, "flowfs: no database %s\n",
			d->db ? d->db : "given");
		return 1;
	}
	if (store_open(&st, d->db, &err) < 0) {
		fprintf(stderr, "flowfs: %s\n", err.message);
		return 1;
	}
	if (opts->backup) {
		char *dest = absolute_path(opts->backup);

		ret = dest ? store_backup(st, dest, &err) : -ENOMEM;
		if (ret < 0)
			fprintf(stderr, "flowfs: backup of %s failed: %s\n",
				d->db, err.message[0] ? err.message
						      : strerror(-ret));
		else
			printf("flowfs: %s backed up to %s (and %s.d)\n",
			       d->db, dest, dest);
		free(dest);
		store_close(st);
		return ret < 0;
	}
	n = contents_verify(store_contents(st), st, say_problem, d->db);
	if (n >= 0)
		contents_orphans(store_contents(st), st, say_note, d->db);
	store_close(st);
	if (n < 0) {
		fprintf(stderr, "flowfs: cannot check %s: %s\n", d->db,
			strerror(-n));
		return 1;
	}
	if (n)
		printf("%s: %d problem%s found\n", d->db, n, n > 1 ? "s" : "");
	else
		printf("%s: no problem found\n", d->db);
	return n ? 1 : 0;
}

/* The command line: the options, the mountpoint, the database. */
static int read_command_line(struct daemon *d, int argc, char *argv[])
{
	struct options *opts = &d->opts;

	if (fuse_opt_parse(&d->args, opts, option_spec, take_mountpoint) < 0)
		return opts->bad_number ? EXIT_USAGE : 1;
	hide_url_credentials(argc, argv);
	if (opts->help) {
		usage(argv[0]);
		return 0;
	}
	if (opts->version) {
		printf("flowfs %s (database schema %d)\n", FLOWFS_VERSION,
		       STORE_SCHEMA_VERSION);
		return 0;
	}
	if (opts->check || opts->backup)
		return store_tool(d);
	if (fuse_parse_cmdline(&d->args, &d->cmd) < 0)
		return 1;
	if (!opts->mountpoint) {
		fprintf(stderr, "flowfs: no mountpoint given (see flowfs --help)\n");
		return 1;
	}
	if (opts->extra_args) {
		fprintf(stderr, "flowfs: too many arguments: give a mountpoint,"
			" and the database before it if not with --db (see"
			" flowfs --help)\n");
		return 1;
	}
	if (!!opts->db + !!opts->db_opt + !!opts->source > 1) {
		fprintf(stderr, "flowfs: the database is given twice (--db,"
			" -o db= or before the mountpoint): give it once\n");
		return 1;
	}
	return GO_ON;
}

/*
 * One mount per database: the daemon holds an flock() on DB.d/lock for
 * its whole life (the kernel lets go of it when the process ends,
 * however it ends: a killed daemon leaves no lock behind).  Taken before
 * the database is opened (a second daemon must not migrate or convert
 * it under the first), kept across the fork into the daemon (the lock
 * belongs to the open file, which the child shares), and closed on
 * exec (the refresher, jobs).  The file says who holds it, for the
 * refusal.
 */
static int lock_store(struct daemon *d)
{
	char dir[PATH_MAX], path[PATH_MAX], who[PATH_MAX + 64] = "";
	ssize_t n;
	int fd;

	if (snprintf(dir, sizeof(dir), "%s.d", d->db) >= (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/lock", dir) >= (int)sizeof(path)) {
		fprintf(stderr, "flowfs: %s: name too long\n", d->db);
		return 1;
	}
	/* a read-only file system: store_open() says why in its words (no
	 * one can mount it, so there is nothing to lock) */
	if (make_parent_dirs(d->db) < 0 ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		if (errno == EROFS)
			return GO_ON;
		fprintf(stderr, "flowfs: cannot make %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EROFS)
		return GO_ON;
	if (fd < 0) {
		fprintf(stderr, "flowfs: cannot open %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		n = pread(fd, who, sizeof(who) - 1, 0);
		who[n > 0 ? n : 0] = '\0';
		who[strcspn(who, "\n")] = '\0';
		if (e == EWOULDBLOCK)
			fprintf(stderr, "flowfs: %s is in use: %s; one flowfs"
				" at a time may mount a database (unmount that"
				" one first)\n", d->db,
				who[0] ? who : "mounted by another flowfs");
		else
			fprintf(stderr, "flowfs: cannot lock %s: %s\n", path,
				strerror(e));
		close(fd);
		return 1;
	}
	d->lock_fd = fd;
	return GO_ON;
}

/* Who holds the lock, as the refusal names it (the daemon's own pid,
 * once it has detached). */
static void say_lock_owner(struct daemon *d)
{
	char who[PATH_MAX + 64];
	int n = snprintf(who, sizeof(who), "mounted by flowfs (pid %d) on %s\n",
			 (int)getpid(), d->cmd.mountpoint);

	if (d->lock_fd < 0 || n <= 0 || ftruncate(d->lock_fd, 0) < 0 ||
	    pwrite(d->lock_fd, who, strlen(who), 0) < 0)
		return;
}

/* The conversion's progress on stderr, at most a line a second (and the
 * last), once it is big enough to be waited for. */
struct convert_progress {
	int64_t last_ns;
	bool said;
};

static void convert_said(void *ctx, int64_t done, int64_t total)
{
	struct convert_progress *p = ctx;
	int64_t now = fclock_now_ns();

	if (total < 64 * 1024 * 1024 ||
	    (done < total && now - p->last_ns < 1000000000))
		return;
	p->last_ns = now;
	p->said = true;
	fprintf(stderr, "flowfs: moving large files out of the database:"
		" %lld of %lld MiB\n", (long long)(done >> 20),
		(long long)(total >> 20));
}

/*
 * A store of the last schema keeps large files in the database: they
 * move to data files now, before mounting (tree_convert(): a crash
 * breaks nothing, and the next mount goes on).
 */
static int convert_store(const char *db, struct store *st)
{
	struct convert_progress p = { .last_ns = fclock_now_ns() };
	struct tree *t;
	int ret = tree_new(&t, st);

	if (!ret)
		ret = tree_convert(t, convert_said, &p);
	if (ret < 0)
		fprintf(stderr, "flowfs: cannot move the large files of %s to"
			" %s.d: %s\n", db, db, strerror(-ret));
	else if (p.said)
		fprintf(stderr, "flowfs: large files moved to %s.d\n", db);
	tree_free(t);
	return ret;
}

/*
 * Everything that can be wrong before mounting, said on stderr in the
 * process the caller waits for: the mountpoint, the skill folders, the
 * engine's key, the runs' and jobs' settings, the database (checked and
 * migrated now: it is opened again after detaching, as SQLite's locks
 * belong to a process and do not survive fork()).
 */
static int check_before_mounting(struct daemon *d)
{
	struct options *opts = &d->opts;
	const char *db_given = opts->db ? opts->db : opts->db_opt ? opts->db_opt
								  : opts->source;
	int ret;

	if (check_mountpoint(opts->mountpoint, opts->nonempty) < 0 ||
	    check_skill_dirs(opts) < 0)
		return 1;
	d->cmd.mountpoint = realpath(opts->mountpoint, NULL);
	if (!d->cmd.mountpoint) {
		fprintf(stderr, "flowfs: mountpoint %s: %s\n", opts->mountpoint,
			strerror(errno));
		return 1;
	}
	ret = read_engine_key(opts, d->env_key, &d->engine_key);
	d->env_key = NULL;
	if (ret < 0)
		return 1;
	ret = configure_runs(&d->fs, opts, d->engine_key);
	if (!ret)
		ret = configure_jobs(&d->fs, opts, d->cmd.mountpoint);
	if (!ret)
		ret = configure_datcom(&d->fs, opts);
	if (ret < 0)
		return ret == -EINVAL ? EXIT_USAGE : 1;
	if (engine_global_init() < 0) {
		fprintf(stderr, "flowfs: cannot start libcurl\n");
		return 1;
	}
	d->db = db_given ? absolute_path(db_given) : default_db_path();
	if (!d->db) {
		fprintf(stderr, "flowfs: no --db given and the user has no home folder\n");
		return 1;
	}
	d->db_made = access(d->db, F_OK) < 0;
	d->made_top = first_missing_parent(d->db);
	ret = lock_store(d);
	if (ret != GO_ON)
		return ret;
	if (open_store(d->db, &d->fs.st) < 0)
		return 1;
	ret = convert_store(d->db, d->fs.st);
	store_close(d->fs.st);
	d->fs.st = NULL;
	if (ret < 0)
		return 1;
	/* one line where the caller sees it: stderr now when detaching
	 * (syslog after), else the foreground log line below; and the
	 * mount's .flowfs/log */
	if (store_check_private(d->db, &d->exposed) == 1 &&
	    !d->cmd.foreground)
		fprintf(stderr, "flowfs: %s\n", d->exposed.message);
	return GO_ON;
}

/* The FUSE session, mounted; then the daemon detaches (without -f). */
static int mount_and_detach(struct daemon *d)
{
	struct flowfs *fs = &d->fs;

	fuse_opt_add_arg(&d->args,
			 "-odefault_permissions,subtype=flowfs,fsname=flowfs");
	d->se = new_session(&d->args, fs);
	if (!d->se || fuse_set_signal_handlers(d->se) != 0)
		return 1;
	d->handlers = true;
	if (fuse_session_mount(d->se, d->cmd.mountpoint) != 0)
		return 1;
	d->mounted = true;
	fuse_daemonize(d->cmd.foreground);
	say_lock_owner(d);
	/* the logs' lines go where the daemon's own messages can be seen */
	fs->foreground = d->cmd.foreground;
	if (!fs->foreground)
		openlog("flowfs", LOG_PID, LOG_USER);
	/* experiments are bounded by one, and local jobs held by one */
	find_cgroups(fs, &d->cgroup_why);
	return GO_ON;
}

/* Damage the store found (a data file missing or short): in the mount's
 * log, and in the session's when it is one's. */
static void report_damage(void *ctx, int64_t session, const char *line)
{
	struct flowfs *fs = ctx;

	fs_log(fs, 0, "", ".flowfs", line);
	if (session)
		fs_log(fs, session, "", "", line);
}

/*
 * What serves the mount, in the daemon: the store and its connections,
 * the skills, the tree, the notifier and refresher, the runs' host, the
 * spill thread and the job monitor (last: it shares fs->st under the
 * lock, so nothing before may use fs->st without it).
 */
static int start_serving(struct daemon *d)
{
	struct flowfs *fs = &d->fs;
	struct ferr err = FERR_INIT;
	char line[PATH_MAX * 2 + 64];

	if (open_store(d->db, &fs->st) < 0)
		return 1;
	if (store_start_checkpointer(fs->st, &err) < 0 ||
	    store_open_beside(fs->st, &fs->wst, &err) < 0) {
		fprintf(stderr, "flowfs: %s\n", err.message);
		return 1;
	}
	if (open_skills(&d->opts, &fs->skills) < 0) {
		fprintf(stderr, "flowfs: cannot read the skill folders\n");
		return 1;
	}
	/* Nodes, edges and rounds a crash left half-created. */
	if (graph_drop_all_drafts(fs->st) < 0 ||
	    roundstore_drop_all_drafts(fs->st) < 0 ||
	    tree_new(&fs->tree, fs->st) < 0) {
		fprintf(stderr, "flowfs: cannot read %s\n", d->db);
		return 1;
	}
	tree_set_reporter(fs->tree, report_damage, fs);
	pthread_mutex_init(&fs->readers_lock, NULL);
	pthread_mutex_init(&fs->write_lock, NULL);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->handles_lock, NULL);
	fs->mountpoint = strdup(d->cmd.mountpoint);
	fs->tools_path = config_path("tools.json");
	fs->toolfile.path = fs->tools_path;
	if (!fs->mountpoint || !fs->tools_path ||
	    fs_notifier_start(&fs->notifier, d->se, fs_refresh_session, fs) < 0) {
		fprintf(stderr, "flowfs: out of memory\n");
		return 1;
	}
	/* without it, file managers only miss what changes by itself */
	if (fs_refresher_start(fs) < 0)
		fprintf(stderr, "flowfs: cannot start the refresher: file"
			" managers will not see generated files change\n");
	fs->run_host.st = fs->st;
	fs->run_host.tree = fs->tree;
	fs->run_host.skills = fs->skills;
	fs->run_host.mountpoint = fs->mountpoint;
	fs->runs.host = &fs->run_host;
	fs->runs.opt = &fs->run_opt;
	/* runs the last daemon left going on cannot go on */
	if (run_recover(fs->st) < 0) {
		fprintf(stderr, "flowfs: cannot read %s\n", d->db);
		return 1;
	}
	fs->mounted_ns = fclock_now_ns();
	fs->uid = getuid();
	fs->gid = getgid();
	snprintf(line, sizeof(line), "mounted %s (flowfs %s)", d->db,
		 FLOWFS_VERSION);
	fs_log(fs, 0, "", fs->mountpoint, line);
	if (d->exposed.message[0])
		fs_log(fs, 0, "", d->db, d->exposed.message);
	/* a data file missing or short: said, never fixed (contents.h) */
	tree_check_contents(fs->tree);
	if (contents_reserve(store_contents(fs->st)) < 0)
		fs_log(fs, 0, "", ".flowfs", "the disk holding the database has"
		       " less than 8 MiB free: writes fail with ENOSPC until"
		       " removals make room (removals still work)");
	if (fs->run_opt.allow_exec)
		log_cgroups(fs, &d->cgroup_why);
	/* each local job in a cgroup of its own where one can be had; else
	 * its supervisor alone holds its processes (run/supervise.h) */
	if (fs->cgroups.version)
		fs->jobs_opt.cgroups = &fs->cgroups;

	/* from here on, threads: every commit by the writer, big cuts of
	 * files outside the lock */
	fs_check_locks(fs, fs->st);
	fs_check_locks(fs, fs->wst);
	tree_set_cutter(fs->tree, fs->wst, fs_leave_cb, fs_enter_cb, fs);
	/* without it, a big write's commits wait for its requests */
	if (fs_spiller_start(fs) < 0)
		fprintf(stderr, "flowfs: cannot start the spill thread:"
			" big writes go slower\n");
	/* the job graphs the last daemon left going are taken up again;
	 * its thread shares fs.st under the lock, so it starts only now
	 * that nothing above uses fs.st without it (it corrupted the
	 * database when it started before the log line of the mount) */
	fs->jobs_opt.tools_path = fs->tools_path;
	if (jobs_start(&fs->jobs, &fs->run_host, &fs->jobs_opt, &err) < 0) {
		fprintf(stderr, "flowfs: %s\n", err.message);
		return 1;
	}
	return GO_ON;
}

/* The loop, until an unmount or SIGTERM, SIGINT, SIGHUP (which stop it
 * as an unmount does: cleanly); 0 or 1. */
static int serve(struct daemon *d)
{
	int ret;

	d->loop = fuse_loop_cfg_create();
	if (!d->loop)
		return 1;
	fuse_loop_cfg_set_clone_fd(d->loop, (unsigned)d->cmd.clone_fd);
	/* Unset, libfuse 3.14 warns "Ignoring invalid max threads value". */
	fuse_loop_cfg_set_max_threads(d->loop, FS_READERS);
	fuse_loop_cfg_set_idle_threads(d->loop, 4);
	ret = d->cmd.singlethread ? fuse_session_loop(d->se)
				  : fuse_session_loop_mt(d->se, d->loop);
	return ret < 0;
}

/* Stop what start_serving() started, whatever it got to, and unmount. */
static void stop_serving(struct daemon *d)
{
	struct flowfs *fs = &d->fs;

	/* at once: it may be waiting for an answer no loop will give */
	fs_refresher_stop(fs);
	/* the handles the kernel never released first: committing a
	 * request.json there may start a fetch, which must be stopped */
	fs_release_open_handles(fs);
	fs_spiller_stop(fs);
	if (fs->runs.host)
		runs_stop(&fs->runs);
	/* a DATCOM run going on is stopped (no reader waits for it now) */
	if (fs->datcom)
		datcomrun_stop(fs->datcom);
	/* the jobs go on; the next mount takes them up */
	jobs_stop(fs->jobs);
	fs->jobs = NULL;
	fs_notifier_stop(fs->notifier);
	fs->notifier = NULL;
	if (fs->wst) {
		fs_check_locks(NULL, fs->st);
		fs_check_locks(NULL, fs->wst);
	}
	/* one thread again, holding no lock */
	if (fs->tree)
		tree_set_cutter(fs->tree, NULL, NULL, NULL, NULL);
	fs_readers_close(fs);
	fuse_session_unmount(d->se);
}

/* Free all of it (no thread left); the database made for a mount that
 * never happened goes too. */
static void release(struct daemon *d)
{
	struct flowfs *fs = &d->fs;
	struct options *opts = &d->opts;

	if (d->handlers)
		fuse_remove_signal_handlers(d->se);
	if (d->se)
		fuse_session_destroy(d->se);
	if (d->db_made && !d->mounted && d->db)
		undo_created_db(d->db, d->made_top);
	free(d->made_top);
	if (d->loop)
		fuse_loop_cfg_destroy(d->loop);
	fs_log_drop(fs);
	tree_free(fs->tree);
	graph_toolfile_release(&fs->toolfile);
	free(fs->tools_path);
	fs_cache_release(&fs->cache);
	binding_cache_release(&fs->binding_cache);
	skill_registry_free(fs->skills);
	release_datcom(fs);
	picture_shutdown();
	/* every run has ended: what they left goes */
	sandbox_scratch_close(&fs->scratch);
	fs_readers_close(fs);
	store_close(fs->wst);
	store_close(fs->st);
	if (fs->tree) {
		pthread_mutex_destroy(&fs->readers_lock);
		pthread_mutex_destroy(&fs->write_lock);
		pthread_mutex_destroy(&fs->lock);
		pthread_mutex_destroy(&fs->handles_lock);
	}
	free(fs->mountpoint);
	free(d->db);
	free(d->cmd.mountpoint);
	free((char *)fs->jobs_opt.work_dir);
	jobspec_runner_free(fs->container);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	free(opts->db);
	free(opts->backup);
	free(opts->db_opt);
	free(opts->source);
	free(opts->mountpoint);
	free(opts->engine_url);
	free(opts->engine_model);
	free(opts->engine_key_file);
	free(opts->max_fetch);
	free(opts->fetch_low_speed);
	free(opts->fetch_allow);
	free(opts->sandbox_user);
	free(opts->datcom);
	free(opts->executor);
	free(opts->work_dir);
	free(opts->container);
	for (size_t i = 0; i < opts->nskill_dirs; i++)
		free(opts->skill_dirs[i]);
	if (!fs->foreground)
		closelog();
	if (d->engine_key)
		explicit_bzero(d->engine_key, strlen(d->engine_key));
	free(d->engine_key);
	if (d->env_key)
		explicit_bzero(d->env_key, strlen(d->env_key));
	free(d->env_key);
	fuse_opt_free_args(&d->args);
}

int main(int argc, char *argv[])
{
	struct daemon d = {
		.args = FUSE_ARGS_INIT(argc, argv),
		.opts = { .engine_retries = -1 },
		/* the refresher's lock is taken on every way out */
		.fs = { .refresher_fd = -1,
			.refresher_lock = PTHREAD_MUTEX_INITIALIZER,
			.scratch = { .fd = -1 } },
		.exposed = FERR_INIT, .cgroup_why = FERR_INIT,
		.lock_fd = -1,
	};
	int ret;

	harden();
	d.env_key = take_env_key();
	/* the refresher, a process the daemon starts (refresh.c) */
	if (argc > 1 && !strcmp(argv[1], "--refresh-helper")) {
		free(d.env_key);
		return fs_refresher_main(argc, argv);
	}
	ret = read_command_line(&d, argc, argv);
	if (ret == GO_ON)
		ret = check_before_mounting(&d);
	if (ret == GO_ON)
		ret = mount_and_detach(&d);
	if (ret == GO_ON)
		ret = start_serving(&d);
	if (ret == GO_ON)
		ret = serve(&d);
	if (d.mounted)
		stop_serving(&d);
	release(&d);
	return ret;
}
