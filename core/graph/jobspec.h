/*
 * jobspec: how a session's job graph runs (issue 16) — each node of
 * nodes/ made into a job from the tool map, and the graph into a plan in
 * dependency order, the same plan for every executor (jobs.h) and every
 * export (gexport.h).
 *
 * ---- The tool map ----
 * The tool map ($XDG_CONFIG_HOME/flowfs/tools.json, tools.h) says per
 * node label how its tool runs:
 *
 *	{"abacus_relax": {
 *	   "image": "registry.example/abacus:3.8",
 *	   "images": ["registry.example/abacus:3.9"],
 *	   "machine_type": "c2_m8_cpu",
 *	   "command": ["abacus-relax", "--in", "{{ structure_file }}",
 *	               "--out", "{{ job_dir }}/relaxed.cif", "{{ flags }}"],
 *	   "options": ["flags"],
 *	   "outputs": {"relaxed_structure": "relaxed.cif"},
 *	   "resources": {"cpus": 4, "memory_mib": 16384,
 *	                 "time_minutes": 120, "partition": "compute"}}}
 *
 * every field optional.  `command` is an argv list (1..JOBSPEC_ARGV_MAX
 * items, each a template of template.h's Jinja subset, at most
 * JOBSPEC_ITEM_MAX bytes): no shell ever reads it, so a value a node
 * carries (an LLM's) is one argument and never code — nor an option
 * (below, "Options").  A template sees
 * the node's input parameters by name (an edge's replaced by the path
 * its source hands on, below), `inputs` (the same as a dict), `job_dir`
 * (the job's folder, absolute), `node` ({"id", "label"}) and `session`
 * (the session's name); those four shadow an input of the same name.
 * `outputs` maps an output parameter name to a file in the job's
 * folder (a relative path of 1..255 bytes, no "..", "." or empty
 * component, not starting with "/"); the output `out_<label>` (the
 * MatMaster default edge source) is the job folder itself unless the
 * map declares it.  `resources`: cpus (1..4096), memory_mib
 * (1..16777216), gpus (0..64), time_minutes (1..525600), partition (a
 * Slurm partition name: letters, digits, "_", "-", ".", 1..64 bytes).
 * Without resources, or for the ones it leaves out, `machine_type` (the
 * node's, else the map's) gives them in MatMaster's form
 * c<cpus>_m<GiB>_cpu or c<cpus>_m<GiB>_<gpu-name> ("c2_m8_cpu": 2 CPUs,
 * 8 GiB; "c8_m32_1 * NVIDIA V100" one GPU); another machine type gives
 * 1 CPU and nothing else.
 *
 * ---- Images ----
 * A node's image (its system_values.image, else the map's
 * `image` for its label) goes to the container runner (`--container`) and
 * into the Argo export, so a node (its writer may be an LLM) names only an
 * image the map allows for its label: the map's `image`, or one listed in
 * `images` (a list of up to JOBSPEC_IMAGES_MAX references, compared byte
 * for byte), and every one of them is an image reference in the grammar of
 * OCI / Docker's distribution (github.com/distribution/reference):
 *
 *	reference  := name [ ":" tag ] [ "@" digest ]
 *	name       := [ domain "/" ] path          (at most 255 bytes)
 *	domain     := host [ ":" port ]
 *	host       := domain-component *( "." domain-component )
 *	            | "[" 1*( hex-digit | ":" ) "]"   (IPv6)
 *	domain-component := [A-Za-z0-9] | [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]
 *	port       := 1*[0-9]
 *	path       := path-component *( "/" path-component )
 *	path-component := [a-z0-9]+ *( separator [a-z0-9]+ )
 *	separator  := "." | "_" | "__" | 1*"-"
 *	tag        := [A-Za-z0-9_] 0*127[A-Za-z0-9_.-]
 *	digest     := algorithm ":" 32*128 hex-digit
 *	algorithm  := component *( [+._-] component ),
 *	              component := [A-Za-z][A-Za-z0-9]*
 *
 * ("registry.example:5000/abacus/relax:3.8@sha256:<64 hex>", "ubuntu",
 * "[::1]:5000/x"): a name is one when it reads as a path, or its first
 * part as a domain and the rest as a path.  So an image never begins
 * with "-", holds no blank, quote or control byte, and is one word of the
 * runner's command line, never an option of it.  128 hex digits (sha512's) is flowfs's bound, the grammar
 * has none.  An empty image is none: the command runs without the runner.
 * A map's `image` or `images` item outside the grammar is refused with the
 * map ("\"relax\": images[1]: \"reg/X\" is not an image reference
 * (registry/name:tag@digest): its name is not [domain/]path, ..."); a
 * node's, at submit and in the exports:
 *	"node \"n1\": system_values.image \"--privileged\" is not an image
 *	 reference (registry/name:tag@digest): it begins with \"-\""
 *	"node \"n1\": system_values.image \"evil/x:1\" is not an image the
 *	 tool map allows for \"relax\" (it allows: reg/a:1, reg/a:2)"
 *
 * ---- Options ----
 * A program reads an argument that begins with "-" as an option
 * (tar's --checkpoint-action=exec=CMD runs CMD), so a node's value may not
 * begin one.  An argument (a rendered command item) reads as an option
 * when it begins with "-" and is not a number (jobspec_is_option()).  Its
 * first byte is the map author's when it comes from the item's own text
 * ("--in={{ x }}", "-{{ x }}", "{% if v %}-v{% endif %}") or from a
 * `{{ }}` that reads no name ("{{ '-v' }}"): such an argument is the
 * author's and stands.  Otherwise a `{{ }}` printed it — a node's value,
 * whole ("{{ x }}") or beginning the argument ("{{ x }}.txt") — and the
 * plan is refused unless every name that `{{ }}` reads is an input
 * parameter the map lists in the label's `options` (a list of up to
 * JOBSPEC_ARGV_MAX names; inputs, job_dir, node and session cannot be
 * listed), a name a loop binds counting as the names its `{% for %}`
 * iterates too:
 *	"node \"n1\": command[2] \"--checkpoint-action=exec=id\" begins
 *	 with \"-\" from the node's value {{ archive }}: a program would read
 *	 it as an option; only input parameters the tool map lists in
 *	 \"options\" for \"untar\" may do that"
 * `options: ["flags"]` lets {{ flags }} (and {{ flags|default('-v') }})
 * begin an argument with "-"; what such a value says is then the
 * program's business, as an option the map author chose to hand on.
 * The node's id ({{ node.id }}) and the session's name are values too;
 * edges hand on absolute paths, which begin with "/".  Where an argument
 * begins is found by rendering the item again with a mark around each
 * {{ }}'s output (jobspec_i.h); when that cannot tell (the value holds
 * nearly every control byte a mark could be), the argument is refused:
 *	"node \"n1\": command[2] \"-...\" begins with \"-\", and where
 *	 from could not be told: a program would read it as an option"
 * The runner's words are not held to this: they are the daemon owner's,
 * and what a node fills in them cannot begin with "-" (an image) or is an
 * absolute path (job_dir).
 *
 * ---- Checking an entry ----
 * jobspec_check_tool() validates one entry of the map (tools.c calls it
 * when it reads the map); the message names the label and the field:
 *	"\"relax\": command[2]: line 1, column 4: unexpected '}'"
 *	"\"relax\": outputs.energy: \"../e.json\" leaves the job folder"
 *
 * ---- The plan ----
 * jobspec_plan() makes the plan of a whole graph (the seed-000 document
 * parameters.json holds) or refuses it with the first reason found, in
 * this order, naming the node or edge:
 *	"node \"n2\": its label \"relax\" has no command in the tool map
 *	 (~/.config/flowfs/tools.json)"
 *	"node \"n2\": system_values.image ..." (Images, above)
 *	"edge \"e1\": node \"n1\" (relax) has no output
 *	 \"energy\" (it has: out_relax, relaxed_structure)"
 *	"node \"n2\": command[3]: 'structure_file' ..." (a template that does
 *	 not render)
 *	"node \"n2\": command[3] \"-x\" begins with \"-\" ..." (Options)
 *	"the graph has a cycle: n1 -> n2 -> n1" (a cycle too long for
 *	 the message is cut in its middle: "n1 -> n2 -> ... -> n1")
 *	"the graph has no nodes"
 * and, before those, a graph that is not one: "nodes[3] has no id or
 * label" (missing or empty), "two nodes are \"n1\"", "edge \"e1\": node
 * \"n9\" is not in the graph".
 * An edge hands its source's output (the absolute path of the declared
 * file, or the source's job folder for out_<label>) to its target's
 * input parameter: the target's command sees that path as the value.
 * Jobs come in an order where every job comes after the jobs it needs
 * (Kahn's algorithm; of the jobs ready at once, the one listed first, so
 * a graph listed in an order that works keeps it).  At most
 * JOBSPEC_NODES_MAX nodes; a command renders to at most
 * JOBSPEC_COMMAND_MAX bytes.
 *
 * ---- Job folders ----
 * A job's folder is <run_dir>/<name>: the node id with every byte
 * outside [A-Za-z0-9._-] (and a leading ".") made "_", and "-2", "-3"...
 * after a name an earlier job took, so a folder name is never more than
 * a name and goes into a batch script as it is.
 *
 * ---- The batch script ----
 * jobspec_script() is the job's batch script: bash, #SBATCH lines for
 * Slurm (job name "flowfs-<session>-<node>" made of the same bytes,
 * resources; a local run ignores them), then it goes to its folder,
 * records its start in `.flowfs-started`, runs the argv (each item
 * quoted for bash, the first always: a program, never an assignment
 * such as "X=1" or a keyword such as "if"), and writes its exit code and
 * end time to `.flowfs-exit` ("<code> <unix seconds>\n", written to a
 * temporary name and renamed, so a reader sees all of it or nothing).
 * Whoever starts it sends its stdout and stderr to `.flowfs-stdout` and
 * `.flowfs-stderr` in the folder (for sbatch: jobspec_sbatch_flags()).
 */
#ifndef FLOWFS_JOBSPEC_H
#define FLOWFS_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

#define JOBSPEC_ARGV_MAX 256
#define JOBSPEC_ITEM_MAX 4096
#define JOBSPEC_COMMAND_MAX (256 * 1024)
#define JOBSPEC_NODES_MAX 10000
#define JOBSPEC_IMAGES_MAX 256

/* The files a job's script writes into its folder. */
#define JOBSPEC_STARTED ".flowfs-started"
#define JOBSPEC_EXIT ".flowfs-exit"
#define JOBSPEC_STDOUT ".flowfs-stdout"
#define JOBSPEC_STDERR ".flowfs-stderr"
#define JOBSPEC_SCRIPT ".flowfs-job.sh"

struct jobspec_options {
	const char *session;	/* the session's name */
	const char *run_dir;	/* absolute; job folders go in it (above) */
	/* argv templates put before the command when the node has an image
	 * (each item sees only `image` and `job_dir`), e.g. {"apptainer",
	 * "exec", "docker://{{ image }}", NULL} (jobspec_runner_words()
	 * makes them of --container's text); NULL: the command runs
	 * directly, the image unused.  The words are the daemon owner's; a
	 * node fills only the image (checked above) and its job folder (an
	 * absolute path), each inside the one word that names it. */
	const char *const *container;
	const char *tools_path;	/* named in messages */
};

struct jobspec_output {
	char *name;		/* output parameter name */
	char *path;		/* absolute: the file, or the job folder */
};

struct jobspec_job {
	char *node_id, *label;
	char *job_dir;		/* <run_dir>/<node id made a folder name> */
	char *image;		/* "" when none */
	char *machine_type;
	char **argv;		/* the container runner's items, then the
				 * command's; NULL-terminated */
	size_t argc;
	unsigned cpus;		/* >= 1 */
	unsigned long memory_mib;	/* 0: not said */
	unsigned gpus;
	unsigned time_minutes;	/* 0: not said */
	char *partition;	/* NULL: not said */
	size_t *deps;		/* indices in plan->jobs of the jobs it needs */
	size_t ndeps;
	struct jobspec_output *outputs;	/* out_<label> first */
	size_t noutputs;
	/* input parameter -> value as the command sees it (edges applied) */
	json_t *inputs;
};

struct jobspec_plan {
	struct jobspec_job *jobs;	/* dependency order */
	size_t n;
};

/* Validate one tool map entry (an object); -EINVAL and err. */
int jobspec_check_tool(const char *label, const json_t *entry,
		       struct ferr *err);

/*
 * The plan of `graph` ({"nodes": [...], "edges": [...], ...}, the
 * document graph_render_parameters() gives) under `tools` (the tool map's
 * object, NULL for none; each entry a node uses is checked as
 * jobspec_check_tool() does, "<tools_path>: <why>").  0, -EINVAL with err
 * (above), -E2BIG with err past JOBSPEC_NODES_MAX or when a command
 * renders past JOBSPEC_COMMAND_MAX, -ENOMEM.  Free with
 * jobspec_plan_release().
 */
int jobspec_plan(const json_t *graph, const json_t *tools,
		 const struct jobspec_options *opt, struct jobspec_plan *out,
		 struct ferr *err);
void jobspec_plan_release(struct jobspec_plan *plan);

/* Index of the job of node `id`, or -1. */
long jobspec_find(const struct jobspec_plan *plan, const char *id);

/* The batch script of job `i` (above), appended to `out`. */
int jobspec_script(const struct jobspec_plan *plan, size_t i,
		   const struct jobspec_options *opt, struct sbuf *out);

/* sbatch's flags for job `i` beyond the script's: "--chdir=<job_dir>",
 * "--output=<job_dir>/.flowfs-stdout", "--error=<job_dir>/.flowfs-stderr",
 * as a NULL-terminated argv in *flags (free each item and the array). */
int jobspec_sbatch_flags(const struct jobspec_plan *plan, size_t i,
			 char ***flags);

/* `id` in bytes a folder or job name holds as they are: every byte
 * outside [A-Za-z0-9._-] (and a leading ".") made "_", cut to fit
 * `size` (with its NUL). */
void jobspec_safe_name(const char *id, char *out, size_t size);

/* `s` quoted for bash as one word ('...' with '\'' for a quote; bare
 * when it is made only of [A-Za-z0-9_./=:,@%+-] and not empty),
 * appended to `out`. */
int jobspec_shell_quote(struct sbuf *out, const char *s);

/* 0 when `ref` is an image reference (the grammar above), else -EINVAL
 * and *why (static text) says what breaks it: "it begins with \"-\"",
 * "its tag ...". */
int jobspec_image_check(const char *ref, const char **why);

/* Whether the argument `arg` reads as an option: it begins with "-" and
 * is not a number ("-" then [0-9]+ ["." [0-9]*] or "." [0-9]+, then an
 * optional [eE][+-]?[0-9]+, and nothing else).  "-1", "-0.5", "-2e-3" are
 * numbers; "-", "--", "-x", "-1x", "-inf", "- 1" read as options. */
bool jobspec_is_option(const char *arg);

/*
 * --container's text made the runner's words (jobspec_options.container):
 * split at blanks (spaces, tabs, newlines) outside the tags {{ }}, {% %}
 * and {# #}, so "podman run -v {{ job_dir }}:{{ job_dir }} {{ image }}"
 * is five words.  No shell reads them: a quote or a backslash outside a
 * tag is refused rather than taken as a character of a word.  Each word
 * must parse as a template and read no name but `image` and `job_dir`,
 * at most JOBSPEC_ARGV_MAX words of at most JOBSPEC_ITEM_MAX bytes.
 * *words is NULL-terminated (jobspec_runner_free() it).  0, -ENOMEM, or
 * -EINVAL with err: "word 3 \"{{ img }}\" reads \"img\": the runner
 * sees only image and job_dir", "it has no words".
 */
int jobspec_runner_words(const char *text, char ***words, struct ferr *err);
void jobspec_runner_free(char **words);

#endif
