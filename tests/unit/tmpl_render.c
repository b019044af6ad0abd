/*
 * tmpl_render: renders templates with core/template, for the differential
 * test against Python Jinja2 (tests/integration/test_template_fidelity.py).
 *
 *	tmpl_render TEMPLATE_FILE CONTEXT_FILE
 *			print the output; on an error print the message on
 *			stderr and exit 1
 *	tmpl_render -b	many cases on stdin, each framed as two blocks (the
 *			template, then the context JSON), a block being its
 *			length in decimal, a newline and that many bytes; each
 *			answer is one block behind a '+' (the output), a '!'
 *			(a parse error message) or a '?' (a render error)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/template.h"

static int read_file(const char *path, struct sbuf *sb)
{
	FILE *f = fopen(path, "rb");
	int ret;

	if (!f)
		return -errno;
	ret = sbuf_read(sb, f);
	fclose(f);
	return ret;
}

/* '+', '!' or '?' and the output or message in `out`; -ENOMEM. */
static int render_one(const char *text, size_t len, const char *ctx,
		      size_t ctxlen, struct sbuf *out, char *kind)
{
	struct ferr err = FERR_INIT;
	struct tmpl *t = NULL;
	json_t *context = NULL;
	char msg[FERR_MESSAGE_MAX + 64];
	int ret;

	ret = fjson_parse(&context, ctx, ctxlen, &err);
	if (ret < 0) {
		*kind = '?';
		ret = sbuf_addf(out, "context: %s",
				ferr_format(&err, msg, sizeof(msg)));
		goto out;
	}
	ret = tmpl_parse(&t, text, len, &err);
	if (ret == -EINVAL) {
		*kind = '!';
		ret = sbuf_addstr(out, ferr_format(&err, msg, sizeof(msg)));
		goto out;
	}
	if (ret < 0)
		goto out;
	ret = tmpl_render(t, context, out, &err);
	if (ret == -EINVAL) {
		*kind = '?';
		ret = sbuf_addstr(out, ferr_format(&err, msg, sizeof(msg)));
		goto out;
	}
	*kind = '+';
out:
	tmpl_free(t);
	json_decref(context);
	return ret;
}

static int next_block(const struct sbuf *in, size_t *pos, const char **p,
		      size_t *n)
{
	char *end;
	unsigned long long len;

	if (*pos >= in->len)
		return -EINVAL;
	len = strtoull(in->buf + *pos, &end, 10);
	if (*end != '\n' || len > in->len - (size_t)(end + 1 - in->buf))
		return -EINVAL;
	*p = end + 1;
	*n = (size_t)len;
	*pos = (size_t)(end + 1 - in->buf) + (size_t)len;
	return 0;
}

int main(int argc, char **argv)
{
	struct sbuf in = SBUF_INIT, ctx = SBUF_INIT, out = SBUF_INIT,
		    one = SBUF_INIT;
	int status = 0;
	char kind;

	if (argc == 3) {
		if (read_file(argv[1], &in) < 0 || read_file(argv[2], &ctx) < 0) {
			fprintf(stderr, "tmpl_render: cannot read the files\n");
			status = 2;
			goto out;
		}
		if (render_one(in.buf, in.len, ctx.buf, ctx.len, &out, &kind) < 0) {
			fprintf(stderr, "tmpl_render: out of memory\n");
			status = 2;
			goto out;
		}
		if (kind != '+') {
			fprintf(stderr, "%s\n", out.buf);
			status = 1;
			goto out;
		}
	} else if (argc == 2 && !strcmp(argv[1], "-b")) {
		size_t pos = 0;

		if (sbuf_read(&in, stdin) < 0) {
			fprintf(stderr, "tmpl_render: cannot read stdin\n");
			status = 2;
			goto out;
		}
		while (pos < in.len) {
			const char *t, *c;
			size_t tn, cn;

			if (next_block(&in, &pos, &t, &tn) < 0 ||
			    next_block(&in, &pos, &c, &cn) < 0) {
				fprintf(stderr, "tmpl_render: bad framing\n");
				status = 2;
				goto out;
			}
			sbuf_reset(&one);
			if (render_one(t, tn, c, cn, &one, &kind) < 0 ||
			    sbuf_addf(&out, "%c%zu\n", kind, one.len) < 0 ||
			    sbuf_add(&out, one.buf, one.len) < 0) {
				fprintf(stderr, "tmpl_render: out of memory\n");
				status = 2;
				goto out;
			}
		}
	} else {
		fprintf(stderr, "usage: tmpl_render TEMPLATE CONTEXT | tmpl_render -b\n");
		status = 2;
		goto out;
	}
	if (fwrite(out.buf, 1, out.len, stdout) != out.len || fflush(stdout)) {
		fprintf(stderr, "tmpl_render: cannot write stdout\n");
		status = 2;
	}
out:
	sbuf_release(&in);
	sbuf_release(&ctx);
	sbuf_release(&out);
	sbuf_release(&one);
	return status;
}
