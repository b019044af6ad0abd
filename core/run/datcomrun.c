/* datcomrun: DATCOM on a deck, in the sandbox, once per deck; see
 * datcomrun.h. */
#include "run/datcomrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/printout.h"
#include "lib/fclock.h"

/* what the sandbox may write: DATCOM's printout and its scratch files
 * (for013.dat, for014.dat, gfortran's in /tmp), gnuplot's picture */
#define RUN_FILE_MIB 64
#define RUN_DISK_MIB 256
#define RUN_FILES 100
/* input-error lines named in `why` */
#define WHY_ERRORS 1

int datcomrun_init(struct datcomrun *r, const struct datcomrun_options *opt)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->opt = *opt;
	if (!r->opt.timeout_s)
		r->opt.timeout_s = DATCOMRUN_TIMEOUT_S;
	ret = -pthread_mutex_init(&r->lock, NULL);
	if (ret)
		return ret;
	ret = -pthread_cond_init(&r->cond, NULL);
	if (ret)
		pthread_mutex_destroy(&r->lock);
	return ret;
}

static void result_free(struct datcomrun_result *res)
{
	sbuf_release(&res->printout);
	sbuf_release(&res->csv);
	sbuf_release(&res->svg);
	free(res);
}

void datcomrun_stop(struct datcomrun *r)
{
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->cond);
	while (r->going || r->waiting)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void datcomrun_release(struct datcomrun *r)
{
	datcomrun_stop(r);
	for (size_t i = 0; i < DATCOMRUN_SLOTS; i++) {
		struct datcomrun_slot *s = &r->slot[i];

		if (s->res && !--s->res->refs)
			result_free(s->res);
		free(s->deck);
	}
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

/* FNV-1a, twice with different starts: 128 bits of the text. */
void datcomrun_hash(const char *deck, size_t len, int64_t out[2])
{
	uint64_t a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < len; i++) {
		a = (a ^ (unsigned char)deck[i]) * 1099511628211ULL;
		b = (b ^ (unsigned char)deck[i]) * 0x100000001b3ULL;
		b ^= b >> 29;
	}
	out[0] = (int64_t)a;
	out[1] = (int64_t)(b ^ len);
}

uint64_t datcomrun_generation(struct datcomrun *r)
{
	uint64_t g;

	pthread_mutex_lock(&r->lock);
	g = r->generation;
	pthread_mutex_unlock(&r->lock);
	return g;
}

/* The slot of `deck`, or NULL; r->lock held. */
static struct datcomrun_slot *find(struct datcomrun *r, const char *deck,
				   size_t len)
{
	for (size_t i = 0; i < DATCOMRUN_SLOTS; i++) {
		struct datcomrun_slot *s = &r->slot[i];

		if (s->age.valid && s->len == len && !memcmp(s->deck, deck, len))
			return s;
	}
	return NULL;
}

struct datcomrun_result *datcomrun_peek(struct datcomrun *r, const char *deck,
					size_t len, bool *running)
{
	struct datcomrun_result *res = NULL;
	struct datcomrun_slot *s;

	pthread_mutex_lock(&r->lock);
	s = find(r, deck, len);
	if (s && s->res) {
		res = s->res;
		res->refs++;
	}
	if (running)
		*running = s && s->running;
	pthread_mutex_unlock(&r->lock);
	return res;
}

void datcomrun_put(struct datcomrun *r, struct datcomrun_result *res)
{
	bool last;

	if (!res)
		return;
	pthread_mutex_lock(&r->lock);
	last = !--res->refs;
	pthread_mutex_unlock(&r->lock);
	if (last)
		result_free(res);
}

/* ---- one run ------------------------------------------------------------- */

static bool run_cancelled(void *ctx)
{
	struct datcomrun *r = ctx;
	bool stop;

	pthread_mutex_lock(&r->lock);
	stop = r->stopping;
	pthread_mutex_unlock(&r->lock);
	return stop;
}

static int write_file(const char *dir, const char *name, const char *text,
		      size_t len)
{
	char path[4096];
	ssize_t n = 0;
	int fd, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return -errno;
	for (size_t at = 0; at < len; at += (size_t)n) {
		n = write(fd, text + at, len - at);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
	}
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/*
 * File `name` the sandbox made in `dir`, at most `max` bytes of it, into
 * `out`: a regular file with one link (sandbox_open_made()), never a link
 * to elsewhere.  *cut says whether there was more.  -ENOENT: none.
 */
static int read_made(const char *dir, const char *name, size_t max,
		     struct sbuf *out, bool *cut)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char buf[65536];
	int fd, ret = 0;

	*cut = false;
	if (dfd < 0)
		return -errno;
	fd = sandbox_open_made(dfd, name, &st);
	close(dfd);
	if (fd < 0)
		return fd;
	while (!ret && out->len < max) {
		size_t want = max - out->len < sizeof(buf) ? max - out->len
							   : sizeof(buf);
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		ret = sbuf_add(out, buf, (size_t)n);
	}
	if (!ret && out->len >= max)
		*cut = read(fd, buf, 1) > 0;
	close(fd);
	return ret;
}

/* The first line of `text` that says what went wrong (a Fortran runtime
 * error), else its first line; at most 200 bytes. */
static void first_complaint(const struct sbuf *text, char *out, size_t size)
{
	const char *at = text->len ? strstr(text->buf, "runtime error") : NULL;
	const char *start = text->buf, *nl;

	if (at) {
		while (at > text->buf && at[-1] != '\n')
			at--;
		start = at;
	}
	nl = strchr(start, '\n');
	snprintf(out, size, "%.*s", (int)((nl ? (size_t)(nl - start)
					  : strlen(start)) > 200 ? 200
					  : (nl ? (size_t)(nl - start)
						: strlen(start))), start);
}

static void set_why(struct datcomrun_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_why(struct datcomrun_result *res, const char *fmt, ...)
{
	va_list ap;

	res->ok = false;
	va_start(ap, fmt);
	vsnprintf(res->why, sizeof(res->why), fmt, ap);
	va_end(ap);
	/* one line: it goes to status */
	for (char *c = res->why; *c; c++)
		if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
}

/* Run `argv` in `dir` for at most wall_s; *res as sandbox_run() gives. */
static int run_program(struct datcomrun *r, const char *dir,
		       const char *const *argv, const char *bind, long wall_s,
		       struct sandbox_result *sr, struct ferr *err)
{
	struct sandbox_program prog = { .argv = argv, .bind = bind };
	struct sandbox_limits lim = r->opt.limits;

	lim.wall_s = wall_s;
	lim.cpu_s = wall_s;
	lim.file_mib = RUN_FILE_MIB;
	lim.disk_mib = RUN_DISK_MIB;
	lim.files = RUN_FILES;
	return sandbox_run(dir, &prog, &lim, run_cancelled, r, sr, err);
}

/* What went wrong with a program's run (sandbox_observation()'s words
 * for a stop or a signal), into `why`. */
static void stopped_why(const struct sandbox_result *sr,
			const struct sandbox_limits *lim, char *why,
			size_t size)
{
	struct sandbox_result quiet = *sr;
	struct sbuf how = SBUF_INIT;

	/* its words on how it ended, not what it printed */
	sbuf_init(&quiet.out);
	sbuf_init(&quiet.err);
	if (sandbox_observation(&quiet, lim, &how) == 0 && how.len)
		snprintf(why, size, "%s", how.buf[0] == '\n' ? how.buf + 1
							     : how.buf);
	else
		snprintf(why, size, "it failed");
	sbuf_release(&how);
}

/* gnuplot on the tables into res->svg; a picture of why when it cannot. */
static int plot(struct datcomrun *r, const char *dir,
		const struct printout *p, struct datcomrun_result *res)
{
	static const char *const argv[] = { "gnuplot", "coefficients.gp",
					    NULL };
	struct sandbox_result sr;
	struct ferr err = FERR_INIT;
	struct sbuf script = SBUF_INIT;
	char why[256] = "";
	bool cut = false;
	int ret = printout_plot_script(p, "coefficients.svg", &script);

	if (ret == -ENOENT) {
		ret = printout_message_svg("No plot", "DATCOM printed no"
					   " number to plot: see"
					   " coefficients.csv", &res->svg);
		goto out;
	}
	if (!ret)
		ret = write_file(dir, "coefficients.gp", script.buf, script.len);
	if (ret < 0)
		goto out;
	ret = run_program(r, dir, argv, NULL, DATCOMRUN_PLOT_S, &sr, &err);
	if (ret == -ECANCELED)
		goto out;
	if (ret < 0) {
		snprintf(why, sizeof(why), "gnuplot could not be run: %.200s",
			 err.message);
	} else {
		if (sr.timed_out || !WIFEXITED(sr.status) ||
		    WEXITSTATUS(sr.status))
			first_complaint(&sr.err, why, sizeof(why));
		sandbox_result_release(&sr);
		ret = why[0] ? 0 : read_made(dir, "coefficients.svg",
					     DATCOMRUN_SVG_MAX, &res->svg,
					     &cut);
		if (!why[0] && cut)
			snprintf(why, sizeof(why), "its picture is over %zu"
				 " bytes", DATCOMRUN_SVG_MAX);
		else if (!why[0] && ret < 0)
			snprintf(why, sizeof(why), "it wrote no picture: %s",
				 strerror(-ret));
		if (why[0])
			sbuf_reset(&res->svg);
		ret = 0;
	}
	if (why[0]) {
		char text[400];

		snprintf(text, sizeof(text), "gnuplot failed on DATCOM's"
			 " tables: %s", why);
		ret = printout_message_svg("No plot", text, &res->svg);
	}
out:
	sbuf_release(&script);
	return ret;
}

/* DATCOM on what `dir` holds as d.dat; the result filled. */
static int run_datcom(struct datcomrun *r, const char *dir,
		      struct datcomrun_result *res)
{
	const char *const argv[] = { r->opt.program, "d.dat", NULL };
	struct sandbox_limits lim = r->opt.limits;
	struct sandbox_result sr;
	struct ferr err = FERR_INIT;
	struct printout p = { 0 };
	struct sbuf errors = SBUF_INIT;
	int64_t started = fclock_mono_ms();
	bool cut = false, ended;
	size_t nerrors;
	int ret;

	lim.wall_s = r->opt.timeout_s;
	ret = run_program(r, dir, argv, r->opt.program, r->opt.timeout_s, &sr,
			  &err);
	res->seconds_ms = fclock_mono_ms() - started;
	if (ret == -ECANCELED)
		return ret;
	if (ret < 0) {
		set_why(res, "DATCOM could not be run: %s", err.message);
		return 0;
	}
	ret = read_made(dir, "output.dat", PRINTOUT_MAX_SIZE, &res->printout,
			&cut);
	if (ret == -ENOENT)
		ret = 0;
	ended = res->printout.len && strstr(res->printout.buf, "END OF JOB");
	if (!ret && sr.timed_out) {
		set_why(res, "DATCOM did not end within %ld s (--datcom-timeout)"
			" and was stopped", r->opt.timeout_s);
	} else if (!ret && sr.over) {
		char why[256];

		stopped_why(&sr, &lim, why, sizeof(why));
		set_why(res, "DATCOM was stopped: %s", why);
	} else if (!ret && !ended) {
		char why[256] = "";

		first_complaint(&sr.err, why, sizeof(why));
		if (!why[0])
			stopped_why(&sr, &lim, why, sizeof(why));
		set_why(res, "DATCOM stopped before the end of the job: %s",
			why);
	} else if (!ret && (nerrors = printout_input_errors(
			res->printout.buf, res->printout.len, WHY_ERRORS,
			&errors))) {
		if (errors.len)
			sbuf_setlen(&errors, errors.len - 1);
		set_why(res, "DATCOM marked %zu line%s of the deck as wrong:"
			" %s", nerrors, nerrors == 1 ? "" : "s", errors.buf);
	}
	sandbox_result_release(&sr);
	if (!ret && !res->why[0])
		ret = printout_parse(res->printout.buf, res->printout.len, &p);
	if (!ret && !res->why[0] && !p.n)
		set_why(res, "DATCOM printed no coefficient table");
	if (!ret && !res->why[0]) {
		res->ok = true;
		ret = printout_csv(&p, &res->csv);
		if (!ret)
			ret = plot(r, dir, &p, res);
	}
	if (!ret && cut)
		ret = sbuf_addf(&res->printout, "\nflowfs: DATCOM printed more"
				" than %zu bytes; the rest is not shown\n",
				PRINTOUT_MAX_SIZE);
	printout_release(&p);
	sbuf_release(&errors);
	return ret;
}

/* Every file says why DATCOM failed. */
static int show_failure(struct datcomrun_result *res)
{
	int ret = 0;

	if (res->printout.len && res->printout.buf[res->printout.len - 1] !=
	    '\n')
		ret = sbuf_addch(&res->printout, '\n');
	if (!ret)
		ret = sbuf_addf(&res->printout, "flowfs: %s\n", res->why);
	sbuf_reset(&res->csv);
	if (!ret)
		ret = sbuf_addf(&res->csv, "flowfs: %s\n", res->why);
	sbuf_reset(&res->svg);
	if (!ret)
		ret = printout_message_svg("DATCOM failed on this deck",
					   res->why, &res->svg);
	return ret;
}

/* A run of `deck`, start to end, in a scratch folder of its own. */
static int run_deck(struct datcomrun *r, const char *deck, size_t len,
		    struct datcomrun_result **out)
{
	struct datcomrun_result *res = calloc(1, sizeof(*res));
	char *dir = NULL;
	int ret;

	*out = NULL;
	if (!res)
		return -ENOMEM;
	sbuf_init(&res->printout);
	sbuf_init(&res->csv);
	sbuf_init(&res->svg);
	if (asprintf(&dir, "%s/datcom-XXXXXX", r->opt.scratch) < 0) {
		dir = NULL;
		ret = -ENOMEM;
		goto out;
	}
	if (!mkdtemp(dir)) {
		set_why(res, "DATCOM could not be run: cannot make a folder in"
			" %s: %s", r->opt.scratch, strerror(errno));
		free(dir);
		dir = NULL;
		ret = show_failure(res);
		goto out;
	}
	ret = write_file(dir, "d.dat", deck, len);
	if (!ret)
		ret = sandbox_prepare_dir(dir, &r->opt.limits, NULL, NULL);
	if (ret < 0) {
		set_why(res, "DATCOM could not be run: cannot write its deck"
			" into %s: %s", dir, strerror(-ret));
		ret = 0;
	} else {
		ret = run_datcom(r, dir, res);
	}
	if (!ret && !res->ok)
		ret = show_failure(res);
out:
	if (dir)
		sandbox_remove_tree(dir);
	free(dir);
	if (ret < 0) {
		result_free(res);
		return ret;
	}
	res->refs = 1;
	*out = res;
	return 0;
}

/* ---- the results kept ------------------------------------------------------ */

int datcomrun_get(struct datcomrun *r, const char *deck, size_t len,
		  struct datcomrun_result **res, bool *fresh)
{
	struct datcomrun_slot *s;
	struct datcomrun_result *made = NULL;
	char *copy = NULL;
	bool waited = false;
	int ret = 0;

	*res = NULL;
	if (fresh)
		*fresh = false;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (r->stopping) {
			ret = -ECANCELED;
			goto out;
		}
		s = find(r, deck, len);
		if (s && s->res) {
			lru_touch(&s->age, &r->clock);
			*res = s->res;
			s->res->refs++;
			goto out;
		}
		/* its run, or a free one, is waited for; past the waiters'
		 * bound, not: the filesystem's threads are few */
		if (!(s && s->running) && r->going < DATCOMRUN_GOING)
			break;
		if (!waited && r->waiting >= DATCOMRUN_WAITING) {
			ret = -EAGAIN;
			goto out;
		}
		if (!waited)
			r->waiting++;
		waited = true;
		pthread_cond_wait(&r->cond, &r->lock);
	}
	copy = malloc(len ? len : 1);
	if (!copy) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(copy, deck, len);
	/* a slot of its own, marked running: others with this deck wait */
	s = &r->slot[lru_pick(&r->slot[0].age, DATCOMRUN_SLOTS,
			      sizeof(r->slot[0]))];
	for (size_t i = 0; s->running && i < DATCOMRUN_SLOTS; i++)
		s = &r->slot[i];
	if (s->running) {
		ret = -EAGAIN;	/* cannot be: fewer runs than slots */
		goto out;
	}
	if (s->res && !--s->res->refs)
		result_free(s->res);
	free(s->deck);
	s->deck = copy;
	copy = NULL;
	s->len = len;
	s->res = NULL;
	s->running = true;
	lru_touch(&s->age, &r->clock);
	r->going++;
	r->generation++;
	if (waited) {
		r->waiting--;
		waited = false;
	}
	pthread_mutex_unlock(&r->lock);
	ret = run_deck(r, deck, len, &made);
	pthread_mutex_lock(&r->lock);
	r->going--;
	r->generation++;
	/* the slot is this run's while it runs: no one else takes it */
	s->running = false;
	if (!ret) {
		made->serial = ++r->serials;
		s->res = made;
		made->refs++;
		*res = made;
		if (fresh)
			*fresh = true;
	} else {
		s->age.valid = false;
		free(s->deck);
		s->deck = NULL;
		s->len = 0;
	}
	pthread_cond_broadcast(&r->cond);
out:
	if (waited) {
		r->waiting--;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	free(copy);
	return ret;
}
