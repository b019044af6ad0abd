/* gexport: the plan of a job graph as an Argo Workflow and as a Slurm
 * submit script; see gexport.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "graph/gexport.h"
#include "lib/utf8.h"

#define SESSION_NAME_MAX 40
#define HEREDOC_EOF "FLOWFS_JOB_EOF"

/* ---- a set of names ----------------------------------------------------- */

/*
 * Open addressing over owned strings, each with the next suffix to try
 * when it comes again as a base: with 10000 nodes all made the same
 * name, asking each set member in turn would be quadratic.
 */
struct name_set {
	char **keys;
	unsigned *next;
	size_t cap;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t name_slot(const struct name_set *set, const char *s)
{
	size_t i = name_hash(s) & (set->cap - 1);

	while (set->keys[i] && strcmp(set->keys[i], s))
		i = (i + 1) & (set->cap - 1);
	return i;
}

static int name_set_init(struct name_set *set, size_t n)
{
	set->cap = 16;
	while (set->cap < 2 * n + 2)
		set->cap *= 2;
	set->keys = calloc(set->cap, sizeof(*set->keys));
	set->next = calloc(set->cap, sizeof(*set->next));
	if (!set->keys || !set->next) {
		free(set->keys);
		free(set->next);
		set->keys = NULL;
		set->next = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void name_set_release(struct name_set *set)
{
	for (size_t i = 0; set->keys && i < set->cap; i++)
		free(set->keys[i]);
	free(set->keys);
	free(set->next);
	set->keys = NULL;
	set->next = NULL;
}

/* Add `name`.  A set made for n names gets at most n + 1 (the callers'
 * names and "graph") in room for 2 n + 2, so a probe always ends. */
static int name_set_add(struct name_set *set, const char *name)
{
	size_t i = name_slot(set, name);

	if (set->keys[i])
		return 0;
	set->keys[i] = strdup(name);
	if (!set->keys[i])
		return -ENOMEM;
	set->next[i] = 2;
	return 0;
}

/*
 * `base`, or base + sep + 2, 3... the first not in the set, added to it
 * and written to `out` (`size` holds base and any suffix).  The base's
 * entry keeps where the count stopped, so the next one that comes to it
 * starts there.
 */
static int name_set_take(struct name_set *set, const char *base, char sep,
			 char *out, size_t size)
{
	size_t i = name_slot(set, base);
	unsigned k;

	if (!set->keys[i]) {
		snprintf(out, size, "%s", base);
		return name_set_add(set, base);
	}
	for (k = set->next[i];; k++) {
		snprintf(out, size, "%s%c%u", base, sep, k);
		if (!set->keys[name_slot(set, out)])
			break;
	}
	set->next[i] = k + 1;
	return name_set_add(set, out);
}

/* ---- names -------------------------------------------------------------- */

/* `s` lower case, every run of bytes outside [a-z0-9] one "-", none at
 * either end, cut to `max` bytes (and any "-" the cut leaves at the end
 * dropped). */
static void dns_label(const char *s, char *out, size_t max)
{
	size_t n = 0;
	bool dash = false;

	for (; *s && n < max; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && n) {
				if (n + 1 >= max)
					break;
				out[n++] = '-';
			}
			dash = false;
			out[n++] = (char)c;
		} else {
			dash = true;
		}
	}
	while (n && out[n - 1] == '-')
		n--;
	out[n] = '\0';
}

/* A task's name before the suffix that makes it unique: Argo's
 * [a-zA-Z0-9][-a-zA-Z0-9]*, and no leading digit, since Argo refuses
 * one in a DAG that has dependencies. */
static void task_base(const char *id, char out[GEXPORT_NAME_MAX + 1])
{
	size_t n;

	dns_label(id, out, GEXPORT_NAME_MAX);
	if (out[0] && (out[0] < '0' || out[0] > '9'))
		return;
	n = strlen(out);
	if (n > GEXPORT_NAME_MAX - 2)
		n = GEXPORT_NAME_MAX - 2;
	while (n && out[n - 1] == '-')
		n--;
	memmove(out + 2, out, n);
	memcpy(out, "n-", 2);
	out[n ? n + 2 : 1] = '\0';
}

/* An Argo parameter name: [-a-zA-Z0-9_]+. */
static void param_base(const char *name, char *out, size_t size)
{
	size_t n = 0;

	for (; *name && n + 1 < size; name++) {
		unsigned char c = (unsigned char)*name;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';

		out[n++] = ok ? (char)c : '_';
	}
	if (!n)
		out[n++] = '_';
	out[n] = '\0';
}

/* ---- YAML --------------------------------------------------------------- */

static int yaml_indent(struct sbuf *out, int depth)
{
	int ret = 0;

	for (int d = 0; !ret && d < depth; d++)
		ret = sbuf_addstr(out, "  ");
	return ret;
}

/*
 * `s` double-quoted: JSON's escapes, and \u for the code points YAML
 * will not hold raw (not "printable" in YAML 1.1/1.2, or a line break a
 * YAML 1.1 reader would fold).  `dollars` doubles "$" for a Kubernetes
 * command.  Bytes that are not UTF-8 become U+FFFD: YAML is Unicode.
 */
static int yaml_quoted(struct sbuf *out, const char *s, bool dollars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	int ret = sbuf_addch(out, '"');

	while (!ret && n) {
		uint32_t cp;
		size_t k = utf8_decode(p, n, &cp);

		if (!k) {
			ret = sbuf_addstr(out, "\\ufffd");
			p++;
			n--;
			continue;
		}
		switch (cp) {
		case '"': ret = sbuf_addstr(out, "\\\""); break;
		case '\\': ret = sbuf_addstr(out, "\\\\"); break;
		case '\n': ret = sbuf_addstr(out, "\\n"); break;
		case '\r': ret = sbuf_addstr(out, "\\r"); break;
		case '\t': ret = sbuf_addstr(out, "\\t"); break;
		case '\b': ret = sbuf_addstr(out, "\\b"); break;
		case '\f': ret = sbuf_addstr(out, "\\f"); break;
		case '$':
			ret = sbuf_addstr(out, dollars ? "$$" : "$");
			break;
		default:
			if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
			    cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
			    cp == 0xfffe || cp == 0xffff)
				ret = sbuf_addf(out, "\\u%04x", (unsigned)cp);
			else
				ret = sbuf_add(out, p, k);
		}
		p += k;
		n -= k;
	}
	return ret ? ret : sbuf_addch(out, '"');
}

/* "<indent><key>: \"<value>\"\n" */
static int yaml_pair(struct sbuf *out, int depth, const char *key,
		     const char *value)
{
	int ret = yaml_indent(out, depth);

	if (!ret)
		ret = sbuf_addf(out, "%s: ", key);
	if (!ret)
		ret = yaml_quoted(out, value, false);
	return ret ? ret : sbuf_addch(out, '\n');
}

/* "<indent>- name: \"<value>\"\n": a list item that is a mapping, its
 * first key on the dash's line. */
static int yaml_item_pair(struct sbuf *out, int depth, const char *key,
			  const char *value)
{
	int ret = yaml_indent(out, depth);

	if (!ret)
		ret = sbuf_addf(out, "- %s: ", key);
	if (!ret)
		ret = yaml_quoted(out, value, false);
	return ret ? ret : sbuf_addch(out, '\n');
}

static int yaml_line(struct sbuf *out, int depth, const char *text)
{
	int ret = yaml_indent(out, depth);

	if (!ret)
		ret = sbuf_addstr(out, text);
	return ret ? ret : sbuf_addch(out, '\n');
}

/* ---- Argo --------------------------------------------------------------- */

/* What the export needs per job beyond the plan. */
struct argo_job {
	char task[GEXPORT_NAME_MAX + 16];
	char **pnames;		/* parameter names as Argo takes them */
	char **pvalues;		/* their values as strings */
	size_t nparams;
};

static void argo_jobs_release(struct argo_job *aj, size_t n)
{
	for (size_t i = 0; aj && i < n; i++) {
		for (size_t p = 0; p < aj[i].nparams; p++) {
			free(aj[i].pnames[p]);
			free(aj[i].pvalues[p]);
		}
		free(aj[i].pnames);
		free(aj[i].pvalues);
	}
	free(aj);
}

static int no_braces(const struct jobspec_job *j, const char *field,
		     const char *text, struct ferr *err)
{
	if (!strstr(text, "{{"))
		return 0;
	return ferr_set(err, -EINVAL, "node \"%s\": %s holds \"{{\", which "
			"Argo Workflows reads as its own variable syntax and "
			"has no escape for: the Argo export cannot carry it",
			j->node_id, field);
}

/* Parameter names and values of job `j`: the input object's keys in
 * their order (jansson keeps insertion order). */
static int argo_params(const struct jobspec_job *j, struct argo_job *a,
		       struct ferr *err)
{
	struct name_set names = { 0 };
	size_t n = json_is_object(j->inputs) ? json_object_size(j->inputs) : 0;
	const char *key;
	json_t *value;
	char field[FERR_MESSAGE_MAX / 2];
	int ret;

	if (!n)
		return 0;
	a->pnames = calloc(n, sizeof(*a->pnames));
	a->pvalues = calloc(n, sizeof(*a->pvalues));
	ret = a->pnames && a->pvalues ? name_set_init(&names, n) : -ENOMEM;
	if (ret)
		goto out;
	json_object_foreach(j->inputs, key, value) {
		size_t p = a->nparams;
		size_t size = strlen(key) + 16;
		char *base = malloc(size);

		if (!base) {
			ret = -ENOMEM;
			goto out;
		}
		param_base(key, base, size);
		a->pnames[p] = malloc(size);
		ret = a->pnames[p] ? name_set_take(&names, base, '_',
						   a->pnames[p], size)
				   : -ENOMEM;
		free(base);
		if (ret)
			goto out;
		a->nparams++;
		if (json_is_string(value)) {
			a->pvalues[p] = strndup(json_string_value(value),
						json_string_length(value));
		} else {
			struct sbuf sb = SBUF_INIT;

			ret = fjson_dump(&sb, value);
			if (ret) {
				sbuf_release(&sb);
				goto out;
			}
			a->pvalues[p] = sbuf_detach(&sb, NULL);
		}
		if (!a->pvalues[p]) {
			ret = -ENOMEM;
			goto out;
		}
		snprintf(field, sizeof(field), "input \"%.100s\"", key);
		ret = no_braces(j, field, a->pvalues[p], err);
		if (ret)
			goto out;
	}
out:
	name_set_release(&names);
	return ret;
}

/* Names, parameters, and the refusal of "{{", before a byte is
 * written. */
static int argo_prepare(const struct jobspec_plan *plan,
			struct argo_job **out, struct ferr *err)
{
	struct name_set tasks = { 0 };
	struct argo_job *aj = calloc(plan->n ? plan->n : 1, sizeof(*aj));
	char field[64];
	int ret;

	*out = NULL;
	ret = aj ? name_set_init(&tasks, plan->n + 1) : -ENOMEM;
	if (!ret)
		ret = name_set_add(&tasks, "graph");
	for (size_t i = 0; !ret && i < plan->n; i++) {
		const struct jobspec_job *j = &plan->jobs[i];
		char base[GEXPORT_NAME_MAX + 1];

		ret = no_braces(j, "its id", j->node_id, err);
		if (!ret)
			ret = no_braces(j, "the image", j->image, err);
		if (!ret)
			ret = no_braces(j, "the job folder", j->job_dir, err);
		for (size_t a = 0; !ret && a < j->argc; a++) {
			snprintf(field, sizeof(field), "argv[%zu]", a);
			ret = no_braces(j, field, j->argv[a], err);
		}
		if (ret)
			break;
		task_base(j->node_id, base);
		ret = name_set_take(&tasks, base, '-', aj[i].task,
				    sizeof(aj[i].task));
		if (!ret)
			ret = argo_params(j, &aj[i], err);
	}
	name_set_release(&tasks);
	if (ret) {
		argo_jobs_release(aj, plan->n);
		return ret;
	}
	*out = aj;
	return 0;
}

static int argo_header(struct sbuf *out, const struct jobspec_options *opt)
{
	char session[SESSION_NAME_MAX + 1], gen[SESSION_NAME_MAX + 16];
	int ret;

	dns_label(opt->session ? opt->session : "", session, SESSION_NAME_MAX);
	snprintf(gen, sizeof(gen), "flowfs-%s%s", session,
		 session[0] ? "-" : "");
	ret = yaml_pair(out, 0, "apiVersion", "argoproj.io/v1alpha1");
	if (!ret)
		ret = yaml_pair(out, 0, "kind", "Workflow");
	if (!ret)
		ret = yaml_line(out, 0, "metadata:");
	if (!ret)
		ret = yaml_pair(out, 1, "generateName", gen);
	if (!ret)
		ret = yaml_line(out, 0, "spec:");
	if (!ret)
		ret = yaml_pair(out, 1, "entrypoint", "graph");
	if (!ret)
		ret = yaml_line(out, 1, "volumeClaimTemplates:");
	/* Argo does without apiVersion and kind here; the Kubernetes
	 * schema of a claim wants them */
	if (!ret)
		ret = yaml_item_pair(out, 2, "apiVersion", "v1");
	if (!ret)
		ret = yaml_pair(out, 3, "kind", "PersistentVolumeClaim");
	if (!ret)
		ret = yaml_line(out, 3, "metadata:");
	if (!ret)
		ret = yaml_pair(out, 4, "name", "work");
	if (!ret)
		ret = yaml_line(out, 3, "spec:");
	if (!ret)
		ret = yaml_line(out, 4, "accessModes:");
	if (!ret)
		ret = yaml_line(out, 5, "- \"ReadWriteMany\"");
	if (!ret)
		ret = yaml_line(out, 4, "resources:");
	if (!ret)
		ret = yaml_line(out, 5, "requests:");
	if (!ret)
		ret = yaml_pair(out, 6, "storage", GEXPORT_ARGO_STORAGE);
	if (!ret)
		ret = yaml_line(out, 1, "templates:");
	return ret;
}

static int argo_task(struct sbuf *out, const struct jobspec_plan *plan,
		     size_t i, const struct argo_job *aj, size_t *stamp)
{
	const struct jobspec_job *j = &plan->jobs[i];
	bool any = false;
	int ret;

	/* depth 5: the tasks' list; a task's keys at 6 */
	ret = yaml_item_pair(out, 5, "name", aj[i].task);
	if (!ret)
		ret = yaml_pair(out, 6, "template", aj[i].task);
	/* an upstream job named twice (two edges) is one dependency */
	for (size_t d = 0; !ret && d < j->ndeps; d++) {
		size_t up = j->deps[d];

		if (up >= plan->n || stamp[up] == i + 1)
			continue;
		stamp[up] = i + 1;
		if (!any)
			ret = yaml_line(out, 6, "dependencies:");
		any = true;
		if (!ret)
			ret = yaml_indent(out, 7);
		if (!ret)
			ret = sbuf_addstr(out, "- ");
		if (!ret)
			ret = yaml_quoted(out, aj[up].task, false);
		if (!ret)
			ret = sbuf_addch(out, '\n');
	}
	if (!ret && !any)
		ret = yaml_line(out, 6, "dependencies: []");
	if (!ret)
		ret = yaml_line(out, 6, "arguments:");
	if (!ret && !aj[i].nparams)
		ret = yaml_line(out, 7, "parameters: []");
	else if (!ret)
		ret = yaml_line(out, 7, "parameters:");
	for (size_t p = 0; !ret && p < aj[i].nparams; p++) {
		ret = yaml_item_pair(out, 8, "name", aj[i].pnames[p]);
		if (!ret)
			ret = yaml_pair(out, 9, "value", aj[i].pvalues[p]);
	}
	return ret;
}

static int argo_resources(struct sbuf *out, const struct jobspec_job *j,
			  const char *which)
{
	char num[32];
	int ret = yaml_line(out, 5, which);

	snprintf(num, sizeof(num), "%u", j->cpus ? j->cpus : 1);
	if (!ret)
		ret = yaml_pair(out, 6, "cpu", num);
	if (!ret && j->memory_mib) {
		snprintf(num, sizeof(num), "%luMi", j->memory_mib);
		ret = yaml_pair(out, 6, "memory", num);
	}
	if (!ret && j->gpus) {
		snprintf(num, sizeof(num), "%u", j->gpus);
		ret = yaml_pair(out, 6, "nvidia.com/gpu", num);
	}
	return ret;
}

static int argo_template(struct sbuf *out, const struct jobspec_job *j,
			 const struct argo_job *a,
			 const struct jobspec_options *opt)
{
	int ret;

	/* depth 2: the templates' list; a template's keys at 3 */
	ret = yaml_item_pair(out, 2, "name", a->task);
	if (!ret)
		ret = yaml_line(out, 3, "metadata:");
	if (!ret)
		ret = yaml_line(out, 4, "annotations:");
	if (!ret)
		ret = yaml_pair(out, 5, "flowfs/node-id", j->node_id);
	if (!ret)
		ret = yaml_line(out, 3, "inputs:");
	if (!ret)
		ret = yaml_line(out, 4, a->nparams ? "parameters:"
						   : "parameters: []");
	for (size_t p = 0; !ret && p < a->nparams; p++)
		ret = yaml_item_pair(out, 5, "name", a->pnames[p]);
	if (!ret && j->time_minutes) {
		ret = yaml_indent(out, 3);
		if (!ret)
			ret = sbuf_addf(out, "activeDeadlineSeconds: %lu\n",
					(unsigned long)j->time_minutes * 60);
	}
	if (!ret)
		ret = yaml_line(out, 3, "container:");
	if (!ret)
		ret = yaml_pair(out, 4, "name", "main");
	if (!ret)
		ret = yaml_pair(out, 4, "image", j->image && j->image[0]
				? j->image : GEXPORT_ARGO_IMAGE);
	if (!ret)
		ret = yaml_line(out, 4, j->argc ? "command:" : "command: []");
	for (size_t k = 0; !ret && k < j->argc; k++) {
		ret = yaml_indent(out, 5);
		if (!ret)
			ret = sbuf_addstr(out, "- ");
		if (!ret)
			ret = yaml_quoted(out, j->argv[k], true);
		if (!ret)
			ret = sbuf_addch(out, '\n');
	}
	if (!ret)
		ret = yaml_pair(out, 4, "workingDir", j->job_dir);
	if (!ret)
		ret = yaml_line(out, 4, "volumeMounts:");
	if (!ret)
		ret = yaml_item_pair(out, 5, "name", "work");
	if (!ret)
		ret = yaml_pair(out, 6, "mountPath", opt->run_dir);
	if (!ret)
		ret = yaml_line(out, 4, "resources:");
	if (!ret)
		ret = argo_resources(out, j, "requests:");
	if (!ret)
		ret = argo_resources(out, j, "limits:");
	return ret;
}

int gexport_argo(const struct jobspec_plan *plan,
		 const struct jobspec_options *opt, struct sbuf *out,
		 struct ferr *err)
{
	size_t start = out->len;
	struct argo_job *aj = NULL;
	size_t *stamp = NULL;
	int ret;

	ret = argo_prepare(plan, &aj, err);
	if (ret)
		goto out;
	stamp = calloc(plan->n ? plan->n : 1, sizeof(*stamp));
	if (!stamp) {
		ret = -ENOMEM;
		goto out;
	}
	ret = argo_header(out, opt);
	if (!ret)
		ret = yaml_item_pair(out, 2, "name", "graph");
	if (!ret)
		ret = yaml_line(out, 3, "dag:");
	if (!ret)
		ret = yaml_line(out, 4, plan->n ? "tasks:" : "tasks: []");
	for (size_t i = 0; !ret && i < plan->n; i++)
		ret = argo_task(out, plan, i, aj, stamp);
	for (size_t i = 0; !ret && i < plan->n; i++)
		ret = argo_template(out, &plan->jobs[i], &aj[i], opt);
out:
	if (ret)
		sbuf_setlen(out, start);
	free(stamp);
	argo_jobs_release(aj, plan->n);
	return ret;
}

/* ---- Slurm -------------------------------------------------------------- */

/* `s` for a comment line: a newline would end the comment and make the
 * rest a command. */
static int comment_text(struct sbuf *out, const char *s)
{
	int ret = 0;

	for (; !ret && *s; s++) {
		unsigned char c = (unsigned char)*s;

		ret = sbuf_addch(out, c < 0x20 || c == 0x7f ? '?' : (char)c);
	}
	return ret;
}

static bool has_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, line, len) && (p[len] == '\n' || !p[len]))
			return true;
	return false;
}

/* The here-document writing job i's batch script into its folder. */
static int slurm_script(struct sbuf *out, const struct jobspec_plan *plan,
			size_t i, const struct jobspec_options *opt,
			struct sbuf *script)
{
	const struct jobspec_job *j = &plan->jobs[i];
	char eof[sizeof(HEREDOC_EOF) + 16];
	unsigned k = 0;
	int ret;

	sbuf_reset(script);
	ret = jobspec_script(plan, i, opt, script);
	if (ret)
		return ret;
	if (script->len && script->buf[script->len - 1] != '\n')
		ret = sbuf_addch(script, '\n');
	snprintf(eof, sizeof(eof), "%s", HEREDOC_EOF);
	while (!ret && has_line(script->buf, eof))
		snprintf(eof, sizeof(eof), "%s_%u", HEREDOC_EOF, ++k);
	if (!ret)
		ret = sbuf_addstr(out, "mkdir -p -- ");
	if (!ret)
		ret = jobspec_shell_quote(out, j->job_dir);
	if (!ret)
		ret = sbuf_addstr(out, "\ncat > ");
	if (!ret)
		ret = jobspec_shell_quote(out, j->job_dir);
	if (!ret)
		ret = sbuf_addf(out, "/" JOBSPEC_SCRIPT " <<'%s'\n", eof);
	if (!ret)
		ret = sbuf_add(out, script->buf, script->len);
	if (!ret)
		ret = sbuf_addf(out, "%s\n", eof);
	return ret;
}

/* "jid_<i>=$(sbatch ...) || fail", its id checked and printed. */
static int slurm_submit(struct sbuf *out, const struct jobspec_plan *plan,
			size_t i, size_t *stamp)
{
	const struct jobspec_job *j = &plan->jobs[i];
	char **flags = NULL;
	bool any = false;
	int ret;

	ret = sbuf_addf(out, "jid_%zu=$(sbatch --parsable", i);
	for (size_t d = 0; !ret && d < j->ndeps; d++) {
		size_t up = j->deps[d];

		if (up >= plan->n || stamp[up] == i + 1)
			continue;
		stamp[up] = i + 1;
		ret = sbuf_addf(out, "%s\"$jid_%zu\"",
				any ? ":" : " --dependency=afterok:", up);
		any = true;
	}
	/* without it a job after one that failed waits for ever (unless
	 * the cluster sets kill_invalid_depend) */
	if (!ret && any)
		ret = sbuf_addstr(out, " --kill-on-invalid-dep=yes");
	if (!ret)
		ret = jobspec_sbatch_flags(plan, i, &flags);
	for (size_t f = 0; !ret && flags[f]; f++) {
		ret = sbuf_addch(out, ' ');
		if (!ret)
			ret = jobspec_shell_quote(out, flags[f]);
	}
	if (!ret)
		ret = sbuf_addch(out, ' ');
	if (!ret)
		ret = jobspec_shell_quote(out, j->job_dir);
	if (!ret)
		ret = sbuf_addstr(out, "/" JOBSPEC_SCRIPT ") || fail ");
	if (!ret)
		ret = jobspec_shell_quote(out, j->node_id);
	/* --parsable prints "<id>" or "<id>;<cluster>" */
	if (!ret)
		ret = sbuf_addf(out, "\njid_%zu=${jid_%zu%%%%;*}\n", i, i);
	if (!ret)
		ret = sbuf_addf(out, "case $jid_%zu in ''|*[!0-9]*) fail ", i);
	if (!ret)
		ret = jobspec_shell_quote(out, j->node_id);
	if (!ret)
		ret = sbuf_addf(out, " \"no job id: $jid_%zu\";; esac\n"
				"printf '%%s %%s\\n' ", i);
	if (!ret)
		ret = jobspec_shell_quote(out, j->node_id);
	if (!ret)
		ret = sbuf_addf(out, " \"$jid_%zu\"\n", i);
	for (size_t f = 0; flags && flags[f]; f++)
		free(flags[f]);
	free(flags);
	return ret;
}

int gexport_slurm(const struct jobspec_plan *plan,
		  const struct jobspec_options *opt, struct sbuf *out,
		  struct ferr *err)
{
	size_t start = out->len;
	struct sbuf script = SBUF_INIT;
	size_t *stamp = calloc(plan->n ? plan->n : 1, sizeof(*stamp));
	int ret = stamp ? 0 : -ENOMEM;

	(void)err;
	if (!ret)
		ret = sbuf_addstr(out, "#!/bin/bash\n"
				  "# submit.slurm.sh: the job graph of flowfs "
				  "session\n#   ");
	if (!ret)
		ret = comment_text(out, opt->session ? opt->session : "");
	if (!ret)
		ret = sbuf_addf(out, "\n"
			"# as Slurm jobs, one per node (%zu), generated by "
			"flowfs.\n"
			"# Run it on a login node: bash submit.slurm.sh\n"
			"# It writes each job's batch script into the job's "
			"folder as\n"
			"# " JOBSPEC_SCRIPT ", submits it with sbatch after "
			"the jobs it needs\n"
			"# (afterok; a job after one that failed is "
			"cancelled), and prints\n"
			"# \"<node id> <job id>\" per job.  It stops at the "
			"first sbatch that\n"
			"# fails or prints no job id.\n"
			"set -euo pipefail\n\n"
			"fail() {\n"
			"\tprintf 'submit.slurm.sh: sbatch failed for node "
			"%%s%%s\\n' \"$1\" \"${2:+: $2}\" >&2\n"
			"\texit 1\n"
			"}\n", plan->n);
	for (size_t i = 0; !ret && i < plan->n; i++) {
		ret = sbuf_addstr(out, "\n# node ");
		if (!ret)
			ret = comment_text(out, plan->jobs[i].node_id);
		if (!ret)
			ret = sbuf_addch(out, '\n');
		if (!ret)
			ret = slurm_script(out, plan, i, opt, &script);
		if (!ret)
			ret = slurm_submit(out, plan, i, stamp);
	}
	if (ret)
		sbuf_setlen(out, start);
	sbuf_release(&script);
	free(stamp);
	return ret;
}

/* ---- the files (gexport_file) ----------------------------------------- */

/* An export's reason for not being made, on one line. */
static void one_line_reason(struct ferr *err, int ret)
{
	if (!err->message[0])
		snprintf(err->message, sizeof(err->message), "%s",
			 strerror(-ret));
	for (char *p = err->message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* The script a Slurm export is when the graph cannot run: it says why
 * and fails. */
static int failing_script(struct sbuf *out, const char *reason)
{
	struct sbuf why = SBUF_INIT;
	int ret = sbuf_addf(&why, "submit.slurm.sh: flowfs cannot submit this"
			    " job graph: %s", reason);

	if (!ret)
		ret = sbuf_addstr(out, "#!/bin/bash\necho ");
	if (!ret)
		ret = jobspec_shell_quote(out, why.buf);
	if (!ret)
		ret = sbuf_addstr(out, " >&2\nexit 1\n");
	sbuf_release(&why);
	return ret;
}

int gexport_file(struct store *st, enum gexport_kind kind,
		 const struct gexport_source *src, struct sbuf *out)
{
	struct plan_source graph = src->graph;
	struct jobspec_options jo = { .session = src->session_name,
				      .tools_path = src->tools_path };
	struct jobspec_plan plan = { 0 };
	struct ferr err = FERR_INIT;
	char *run_dir = NULL;
	int ret = 0;

	graph.whole = false;
	if (kind == GEXPORT_SLURM)
		ret = graph_session_dir(src->work_dir, src->session_name,
					graph.session, "export", &run_dir);
	jo.run_dir = kind == GEXPORT_SLURM ? run_dir : "/work";
	if (!ret)
		ret = graph_plan(st, &graph, &jo, &plan, &err);
	if (!ret) {
		ret = kind == GEXPORT_ARGO ? gexport_argo(&plan, &jo, out, &err)
					   : gexport_slurm(&plan, &jo, out, &err);
		jobspec_plan_release(&plan);
	}
	if (ret == -EINVAL || ret == -E2BIG) {
		one_line_reason(&err, ret);
		ret = kind == GEXPORT_ARGO
			      ? sbuf_addf(out, "# flowfs cannot export this job"
					  " graph for Argo Workflows: %s\n",
					  err.message)
			      : failing_script(out, err.message);
	}
	free(run_dir);
	return ret;
}
