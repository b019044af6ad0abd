/*
 * json_echo: stdin -> fjson_parse -> fjson_dump -> stdout, for the
 * differential test against Python's json module.
 *
 *	json_echo	one document; on a parse error the message goes to
 *			stderr and the exit status is 1
 *	json_echo -b	many documents, each framed as its length in decimal,
 *			a newline, and that many bytes; each answer is framed
 *			the same way behind a '+' (the dump) or a '!' (the
 *			error message)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"

/* Append the answer for one document; -1 on a parse error, -2 on ENOMEM. */
static int echo_one(const char *text, size_t len, struct sbuf *out,
		    struct ferr *err)
{
	json_t *doc = NULL;
	int ret;

	ret = fjson_parse(&doc, text, len, err);
	if (ret == -ENOMEM)
		return -2;
	if (ret < 0)
		return -1;
	ret = fjson_dump(out, doc) < 0 ? -2 : 0;
	json_decref(doc);
	return ret;
}

int main(int argc, char **argv)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	int batch = argc > 1 && !strcmp(argv[1], "-b");
	int status = 0, ret = 0;

	if (sbuf_read(&in, stdin) < 0) {
		fprintf(stderr, "json_echo: cannot read stdin\n");
		status = 2;
		goto out;
	}
	if (!batch) {
		ret = echo_one(in.buf, in.len, &out, &err);
		if (ret == -1) {
			fprintf(stderr, "%s\n",
				ferr_format(&err, msg, sizeof(msg)));
			status = 1;
			goto out;
		}
	} else {
		size_t pos = 0;

		while (pos < in.len) {
			char *end;
			unsigned long long n = strtoull(in.buf + pos, &end, 10);
			size_t mark;

			if (*end != '\n' || n > in.len - (size_t)(end + 1 - in.buf)) {
				fprintf(stderr, "json_echo: bad framing\n");
				status = 2;
				goto out;
			}
			pos = (size_t)(end + 1 - in.buf);
			ferr_clear(&err);
			/* placeholder header, rewritten once the length is known */
			if (sbuf_addstr(&out, "+00000000000000000000\n") < 0) {
				ret = -2;
				break;
			}
			mark = out.len;
			ret = echo_one(in.buf + pos, (size_t)n, &out, &err);
			if (ret == -1) {
				ferr_format(&err, msg, sizeof(msg));
				out.buf[mark - 22] = '!';
				ret = sbuf_addstr(&out, msg) < 0 ? -2 : 0;
			}
			if (ret == -2)
				break;
			snprintf(msg, sizeof(msg), "%020zu", out.len - mark);
			memcpy(out.buf + mark - 21, msg, 20);
			pos += (size_t)n;
		}
	}
	if (ret == -2) {
		fprintf(stderr, "json_echo: out of memory\n");
		status = 2;
		goto out;
	}
	if (fwrite(out.buf, 1, out.len, stdout) != out.len ||
	    fflush(stdout) != 0) {
		fprintf(stderr, "json_echo: cannot write stdout\n");
		status = 2;
	}
out:
	sbuf_release(&in);
	sbuf_release(&out);
	return status;
}
