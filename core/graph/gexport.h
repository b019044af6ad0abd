/*
 * gexport: a session's job graph for the engines its users run it on,
 * generated on read like parameters.json (issue 16) from the plan of
 * jobspec.h: an Argo Workflow and a Slurm submit script.
 *
 * Both are deterministic: the same plan gives the same bytes.  Both
 * append to `out`; on failure `out` is back at its length before the
 * call.  0, -EINVAL (with err), -ENOMEM.
 *
 * ---- Argo ----
 * output/workflow.argo.yaml (gexport_argo): an Argo Workflow
 * (argoproj.io/v1alpha1) for `argo submit` or `kubectl create -f`:
 * metadata.generateName "flowfs-<session>-" (the session's name made
 * a DNS-1123 label: lower case, [a-z0-9-], at most 40 bytes of it, so
 * Argo's 5-character suffix keeps the name within its 63), one DAG
 * template "graph" (the entrypoint) with one task per node in plan
 * order, and one container template per node of the same name.
 * A task's name is the node id in lower case with every run of bytes
 * outside [a-z0-9] made one "-" (none at either end), "n-" before it
 * when it would start with a digit ("n" for none), at most
 * GEXPORT_NAME_MAX bytes, and "-2", "-3"... after a name an earlier
 * task (or the DAG template "graph") took; the node id itself is the
 * template's annotation "flowfs/node-id".  A task's `dependencies`
 * are its upstream jobs' tasks; its arguments are the node's input
 * parameters (edges applied), each value a string: a string as it
 * is, anything else its JSON text (fjson_dump()); a parameter name
 * keeps only [A-Za-z0-9_-] (other bytes "_", "_2"... on a clash) as
 * Argo requires.  The container ("main"): the node's image, or
 * GEXPORT_ARGO_IMAGE when it has none (the tool then has to be in
 * that image: edit it), its argv as `command` (each "$" doubled, as
 * Kubernetes reads "$(NAME)" and "$$" in a command), workingDir the
 * job's folder, resources requests = limits: cpu, memory ("<n>Mi")
 * when the plan says, nvidia.com/gpu when gpus > 0; the template's
 * activeDeadlineSeconds is time_minutes * 60 when said.  Jobs share
 * one volume the workflow claims (volumeClaimTemplates "work",
 * ReadWriteMany, GEXPORT_ARGO_STORAGE), mounted at the plan's
 * run_dir, so an edge's path reaches the next task: make the plan
 * with run_dir "/work" and no container runner.  ReadWriteMany needs
 * a storage class that offers it (NFS, CephFS, a cloud file store);
 * with none, make it ReadWriteOnce, and the pods must then share one
 * node.
 *
 * YAML in block style with 2-space indentation, every string
 * double-quoted with JSON's escapes (and \uXXXX for what YAML may not
 * hold raw: DEL, C1 controls, U+2028/9, U+FEFF, U+FFFE/F), so no
 * value becomes a number, a boolean or markup; numbers plain, empty
 * lists "[]".
 *
 * Argo reads "{{" anywhere in a workflow as its own variable syntax
 * and has no escape for it, so a plan with "{{" in any text the
 * workflow would carry (an argv item, an input value, the image, a
 * folder, a node id) is refused: -EINVAL, naming the node and field.
 *
 * ---- Slurm ----
 * output/submit.slurm.sh (gexport_slurm): a standalone bash script
 * that, run on a login node without flowfs (`bash submit.slurm.sh`),
 * writes each job's batch script (jobspec_script()) into its folder
 * as JOBSPEC_SCRIPT (a quoted here-document, its delimiter a line the
 * script does not hold) and submits it with `sbatch --parsable`
 * (jobspec_sbatch_flags()), each after its upstream jobs
 * (`--dependency=afterok:<id>:<id> --kill-on-invalid-dep=yes`: a job
 * after one that failed is cancelled, not left pending for ever),
 * printing "<node id> <job id>" per job (the id without --parsable's
 * ";<cluster>").  It stops at the first sbatch that fails or prints
 * no job id, saying which node on stderr, exit status 1.  Make its
 * plan with run_dir a folder the cluster's nodes share: the script
 * makes the jobs' folders in it.
 */
#ifndef FLOWFS_GEXPORT_H
#define FLOWFS_GEXPORT_H

#include "lib/ferr.h"
#include "graph/jobspec.h"
#include "graph/plan.h"
#include "lib/sbuf.h"
#include "store/store.h"

/* with "-" and a count of up to 5 digits, within a DNS label's 63 */
#define GEXPORT_NAME_MAX 56
#define GEXPORT_ARGO_IMAGE "debian:12-slim"
#define GEXPORT_ARGO_STORAGE "10Gi"

/*
 * The file an export is of a session's graph, from the database (plan.h)
 * to the last byte: for a graph that cannot run, a file that says why (a
 * YAML comment for Argo: a document of nothing; a script that prints the
 * reason and exits 1), so that the file is there and a person reading it
 * learns why.  Argo's jobs share /work; the Slurm script's go in
 * "<work_dir>/<name>-<id>/export/" (graph_session_dir()).  -ENOENT when
 * the graph has no nodes (no file), else 0 or -ENOMEM.
 */
enum gexport_kind { GEXPORT_ARGO, GEXPORT_SLURM };

struct gexport_source {
	struct plan_source graph;	/* `whole` is not asked */
	const char *session_name;
	const char *work_dir;
	const char *tools_path;		/* named in messages */
};

int gexport_file(struct store *st, enum gexport_kind kind,
		 const struct gexport_source *src, struct sbuf *out);

int gexport_argo(const struct jobspec_plan *plan,
		 const struct jobspec_options *opt, struct sbuf *out,
		 struct ferr *err);
int gexport_slurm(const struct jobspec_plan *plan,
		  const struct jobspec_options *opt, struct sbuf *out,
		  struct ferr *err);

#endif
