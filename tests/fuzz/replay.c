/*
 * Replays a fuzz corpus through a target in an ordinary (non-libFuzzer)
 * build, so every input that ever found a bug keeps being checked by the
 * normal test run under ASan/UBSan.  Usage: replay_<t> DIR|FILE...
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;
	int ret = -1;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) < 0)
		goto out;
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	ret = 0;
out:
	if (ret < 0)
		fprintf(stderr, "replay: cannot read %s\n", path);
	free(buf);
	fclose(f);
	return ret;
}

static int replay_path(const char *path, int *count)
{
	struct stat st;
	struct dirent **names = NULL;
	int n, i, ret = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		char sub[4096];

		if (names[i]->d_name[0] != '.') {
			snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name);
			if (replay_path(sub, count) < 0)
				ret = -1;
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	int count = 0, ret = 0;

	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) < 0)
			ret = 1;
	if (!count) {
		fprintf(stderr, "replay: no corpus inputs found\n");
		return 1;
	}
	printf("replayed %d inputs\n", count);
	return ret;
}
