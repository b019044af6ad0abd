/*
 * run_rounds: scientific-workflow's rounds (seed 004) and their
 * experiments; see run.h.
 */
#include "run/run_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fjson.h"
#include "formats/rounds.h"
#include "session/roundstore.h"

/* ---- scientific-workflow -------------------------------------------------- */

json_t *run_parse_tags(const char *reply)
{
	json_t *round = json_object();
	const char *const *tag;

	for (tag = rounds_tags; round && *tag; tag++) {
		char open[32], close[32];
		const char *start, *end;
		json_t *text;
		size_t len;

		/* the tag's name as the transcript writes it: capitalized */
		snprintf(open, sizeof(open), "<%c%s>", **tag - 32, *tag + 1);
		snprintf(close, sizeof(close), "</%c%s>", **tag - 32, *tag + 1);
		start = strstr(reply, open);
		end = start ? strstr(start, close) : NULL;
		if (!end)
			continue;
		start += strlen(open);
		while (start < end && strchr(" \t\r\n", *start))
			start++;
		len = (size_t)(end - start);
		while (len && strchr(" \t\r\n", start[len - 1]))
			len--;
		/* code in a fence inside <Experiment>: the code */
		if (!strcmp(*tag, "experiment") && len > 6 &&
		    !strncmp(start, "```", 3) && !strncmp(start + len - 3, "```", 3)) {
			const char *nl = memchr(start, '\n', len);

			if (nl) {
				len -= (size_t)(nl + 1 - start) + 3;
				start = nl + 1;
				while (len && strchr(" \t\r\n", start[len - 1]))
					len--;
			}
		}
		/* text that is not UTF-8 is no tag (a reply from JSON always
		 * is; the caller may hand anything) */
		text = json_stringn(start, len);
		if (text && json_object_set_new(round, *tag, text) < 0) {
			json_decref(round);
			round = NULL;
		}
	}
	return round;
}

/* rounds/<n>.json = round (the lock taken here). */
static int put_round(struct run *r, long n, const json_t *round,
		     struct ferr *err)
{
	struct sbuf text = SBUF_INIT;
	int ret = fjson_dump(&text, round);

	if (!ret) {
		run_lock(r);
		ret = roundstore_put(r->host->st, r->session, n, text.buf,
				     text.len, err);
		run_unlock(r);
	}
	sbuf_release(&text);
	return ret;
}

/* Copy file `ino` of the tree to `path` in 1 MiB slices, the lock taken
 * for each (an upload of gigabytes must not stall the mount). */
static int copy_file_out(struct run *r, uint64_t ino, const char *path)
{
	static const size_t slice = 1 << 20;
	char *buf = malloc(slice);
	int64_t off = 0;
	size_t got = 1;
	int fd, ret = 0;

	fd = buf ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
	if (fd < 0) {
		free(buf);
		return buf ? -errno : -ENOMEM;
	}
	while (!ret && got) {
		run_lock(r);
		ret = tree_read(r->host->tree, ino, buf, slice, off, &got);
		run_unlock(r);
		if (!ret && got && write(fd, buf, got) != (ssize_t)got)
			ret = -EIO;
		off += (int64_t)got;
		if (atomic_load(&r->cancel))
			ret = -ECANCELED;
	}
	close(fd);
	free(buf);
	return ret;
}

/* Copy folder `ino` of the tree into `dir`. */
static int copy_out(struct run *r, uint64_t ino, const char *dir, int depth)
{
	struct tree_dir d = { 0 };
	struct sbuf target = SBUF_INIT;
	int ret;

	if (depth > 64)
		return -ELOOP;
	run_lock(r);
	ret = tree_readdir(r->host->tree, ino, &d);
	run_unlock(r);
	for (size_t i = 0; !ret && i < d.n; i++) {
		const struct tree_attr *a = &d.ents[i].attr;
		char *path = NULL;

		if (asprintf(&path, "%s/%s", dir, d.ents[i].name) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (S_ISDIR(a->mode)) {
			ret = mkdir(path, 0700) < 0 ? -errno : 0;
			if (!ret)
				ret = copy_out(r, a->ino, path, depth + 1);
		} else if (S_ISLNK(a->mode)) {
			sbuf_reset(&target);
			run_lock(r);
			ret = tree_readlink(r->host->tree, a->ino, &target);
			run_unlock(r);
			if (!ret && symlink(target.buf, path) < 0)
				ret = -errno;
		} else if (S_ISREG(a->mode)) {
			ret = copy_file_out(r, a->ino, path);
		}
		free(path);
	}
	tree_dir_free(&d);
	sbuf_release(&target);
	return ret;
}

/* Files larger than this, made by an experiment, stay behind; so do the
 * files past OUTPUT_MAX bytes or OUTPUT_FILES files kept from one run. */
#define MADE_FILE_MAX (64 << 20)
#define OUTPUT_MAX (256 << 20)
#define OUTPUT_FILES 1000

/*
 * The regular files the experiments made at the top of the scratch
 * folder (not there in uploads/, not hidden, not links of any kind) into
 * output/, copied by content, the lock taken for each.  What is left
 * behind over the limits, or under a name flowfs keeps, is said in the
 * log.
 */
static int keep_made_files(struct run *r, const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	struct sbuf first = SBUF_INIT;
	int64_t kept = 0;
	int files = 0, left = 0, ret = 0;

	if (!d)
		return -errno;
	while (!ret && (e = readdir(d))) {
		struct tree_attr a;
		struct stat st;
		bool was_upload;
		int fd;

		if (e->d_name[0] == '.' || strlen(e->d_name) > 200)
			continue;
		run_lock(r);
		was_upload = tree_lookup(r->host->tree, r->uploads_ino, e->d_name,
					 &a) == 0;
		run_unlock(r);
		fd = was_upload ? -1 : sandbox_open_made(dirfd(d), e->d_name, &st);
		if (fd < 0)
			continue;
		if (st.st_size > MADE_FILE_MAX || files >= OUTPUT_FILES ||
		    kept + st.st_size > OUTPUT_MAX ||
		    run_reserved_output(r, e->d_name)) {
			if (!left++)
				ret = sbuf_addstr(&first, e->d_name);
		} else {
			/* in slices, like a fetch: the lock is let go between
			 * them */
			ret = run_store_fd(r, fd, r->output_ino, e->d_name,
					   (size_t)st.st_size, NULL);
			kept += st.st_size;
			files++;
		}
		close(fd);
	}
	closedir(d);
	/* one line, however many (the log is no place for a million) */
	if (left) {
		run_lock(r);
		run_log(r, "output", "%d file%s the experiments made left out"
			" (%s%s): over 64 MiB, past 256 MiB or 1000 files kept"
			" from one run, or a name flowfs keeps", left,
			left > 1 ? "s" : "", first.buf,
			left > 1 ? ", …" : "");
		run_unlock(r);
	}
	sbuf_release(&first);
	return ret;
}

/* sandbox_prepare_dir()'s hook: a link of uploads/ left out, in the log. */
static void link_dropped(void *ctx, const char *path)
{
	struct run *r = ctx;
	struct sbuf name = SBUF_INIT;

	if (sbuf_addf(&name, "uploads/%s", path) < 0)
		return;
	run_lock(r);
	run_log(r, name.buf, "not in the experiment's folder: the link does not"
		" point inside uploads/");
	run_unlock(r);
	sbuf_release(&name);
}

/* Run round n's experiment in the scratch folder: the observation. */
static int experiment(struct run *r, const char *dir, long n, const char *code,
		      struct sbuf *observation, struct ferr *err)
{
	struct sandbox_result res;
	char file[64], *path = NULL;
	int fd, ret;

	snprintf(file, sizeof(file), ".flowfs-experiment-%ld.py", n);
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	/* readable by the sandbox's uid when the daemon is root (the folder
	 * itself is that uid's alone) */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		  O_NONBLOCK, 0644);
	ret = fd < 0 ? -errno : 0;
	if (!ret && write(fd, code, strlen(code)) != (ssize_t)strlen(code))
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	free(path);
	if (ret < 0)
		return ferr_set(err, ret, "cannot write the experiment: %s",
				strerror(-ret));
	run_progress(r, "round %ld: running the experiment", n);
	ret = sandbox_run_python(dir, file, &r->opt->limits, run_cancelled, r, &res, err);
	if (ret < 0)
		return ret;
	ret = sandbox_observation(&res, &r->opt->limits, observation);
	sandbox_result_release(&res);
	return ret;
}

/* One reply whose tags make round n (asked again when tags are missing). */
static int ask_round(struct run *r, const struct engine_hooks *hooks,
		     json_t *messages, long n, bool last, json_t **round,
		     struct ferr *err)
{
	struct engine_reply reply = { 0 };
	char purpose[32];
	int ret;

	snprintf(purpose, sizeof(purpose), "round %ld", n);
	for (int attempt = 0;; attempt++) {
		struct ferr why = FERR_INIT;

		run_progress(r, "round %ld: waiting for the engine", n);
		ret = engine_chat(&r->opt->engine, hooks, purpose, messages, NULL,
				  &reply, err);
		if (ret < 0)
			return ret;
		json_array_append(messages, reply.message);
		*round = run_parse_tags(reply.content);
		engine_reply_release(&reply);
		if (!*round)
			return -ENOMEM;
		/* a concluding round runs no experiment: drop what is not its */
		if (last) {
			json_object_del(*round, "hypothesis");
			json_object_del(*round, "model");
			json_object_del(*round, "experiment");
		}
		json_object_del(*round, "observation");
		if (n > 1)
			json_object_del(*round, "phenomenon");
		if (!last)
			json_object_del(*round, "conclusion");
		ret = rounds_check_one((size_t)n, (size_t)n, *round, &why);
		if (!ret)
			return 0;
		json_decref(*round);
		*round = NULL;
		if (attempt == MAX_RETRIES)
			return ferr_set(err, -EPROTO, "round %ld: %s", n,
					why.message);
		json_array_append_new(messages, run_message("user", why.message));
	}
}

int run_flow_rounds(struct run *r, const struct engine_hooks *hooks,
		    struct ferr *err)
{
	struct sbuf prompt = SBUF_INIT, observation = SBUF_INIT;
	struct sbuf dir = SBUF_INIT;
	bool have_dir = false;
	json_t *messages = NULL, *round = NULL;
	long n, last = r->max_rounds;
	int ret = -ENOMEM;

	if (sbuf_addf(&prompt, "%s\n\nI/O Requirements:\n%s\n\nWork on this"
		      " task in rounds of the scientific method, at most %ld."
		      " This is round 1. Answer with these tagged blocks:\n"
		      "<Phenomenon>what the task and its data show</Phenomenon>\n"
		      "<Hypothesis>what you expect</Hypothesis>\n"
		      "<Model>how you will test it</Model>\n"
		      "<Experiment>Python 3 code to run; the working folder holds"
		      " the uploaded files; print what you need to see"
		      "</Experiment>", r->description, r->io ? r->io : "",
		      last) < 0)
		goto out;
	messages = json_pack("[o, o]", run_message("system", r->system),
			     run_message("user", prompt.buf));
	if (!messages)
		goto out;
	for (n = 1; n <= last; n++) {
		bool concluding = n == last && n > 1;

		ret = ask_round(r, hooks, messages, n, concluding, &round, err);
		if (!ret)
			ret = put_round(r, n, round, err);
		if (ret < 0 || concluding)
			break;
		if (!r->opt->allow_exec) {
			ret = ferr_set(err, -EPERM, "round %ld: experiments run"
				       " only when flowfs is started with"
				       " --allow-exec; rounds/%ld.json holds the"
				       " experiment", n, n);
			break;
		}
		if (!have_dir) {
			/* in the daemon's own folder: a daemon killed with
			 * kill -9 leaves it to the next one to sweep */
			if (sbuf_addf(&dir, "%s/experiment-XXXXXX",
				      r->opt->scratch) < 0) {
				ret = -ENOMEM;
				break;
			}
			if (!mkdtemp(dir.buf)) {
				ret = ferr_set(err, -errno, "cannot make a scratch"
					       " folder: %s", strerror(errno));
				break;
			}
			have_dir = true;
			run_progress(r, "copying uploads/ for the experiments");
			ret = copy_out(r, r->uploads_ino, dir.buf, 0);
			if (!ret)
				ret = sandbox_prepare_dir(dir.buf, &r->opt->limits,
						       link_dropped, r);
			if (ret < 0) {
				ferr_set(err, ret, "cannot copy uploads/: %s",
					 strerror(-ret));
				break;
			}
		}
		sbuf_reset(&observation);
		ret = experiment(r, dir.buf, n, json_string_value(json_object_get(
					round, "experiment")), &observation, err);
		/* what a program prints ends in a newline the block has */
		while (observation.len &&
		       strchr(" \t\r\n", observation.buf[observation.len - 1]))
			sbuf_setlen(&observation, observation.len - 1);
		if (!ret && json_object_set_new(round, "observation",
						json_string(observation.buf)) < 0)
			ret = -ENOMEM;
		if (!ret)
			ret = put_round(r, n, round, err);
		if (ret < 0)
			break;
		json_decref(round);
		round = NULL;
		if (n == last)
			break;
		sbuf_reset(&prompt);
		if (n + 1 < last)
			ret = sbuf_addf(&prompt, "<Observation>\n%s\n</Observation>"
					"\n\nThis is round %ld. From the"
					" observation, answer with:\n"
					"<Inference>what the observation tells</Inference>\n"
					"<Hypothesis>...</Hypothesis>\n<Model>...</Model>\n"
					"<Experiment>Python 3 code</Experiment>",
					observation.buf, n + 1);
		else if (n + 1 == last)
			ret = sbuf_addf(&prompt, "<Observation>\n%s\n</Observation>"
					"\n\nThis is the last round (%ld). Answer"
					" with:\n<Inference>what the observation"
					" tells</Inference>\n<Conclusion>the answer"
					" to the task</Conclusion>",
					observation.buf, n + 1);
		if (ret < 0 || json_array_append_new(messages,
					run_message("user", prompt.buf)) < 0) {
			ret = -ENOMEM;
			break;
		}
	}
out:
	/* experiment processes that did not end may still change the
	 * folder (swap one of its folders for a link): it is neither read
	 * nor removed, only named in the log */
	if (have_dir && ret == -EBUSY) {
		run_lock(r);
		run_log(r, "output", "the experiments' folder %s is left as it"
			" is: its processes did not end", dir.buf);
		run_unlock(r);
	} else if (have_dir) {
		/* what the experiments made is the run's result too (the
		 * seed's example writes output.txt), even when it failed */
		int kept = keep_made_files(r, dir.buf);

		if (!ret && kept < 0)
			ret = ferr_set(err, kept, "cannot copy what the"
				       " experiments wrote into output/: %s",
				       strerror(-kept));
		sandbox_remove_tree(dir.buf);
	}
	json_decref(round);
	json_decref(messages);
	sbuf_release(&prompt);
	sbuf_release(&observation);
	sbuf_release(&dir);
	return ret;
}

