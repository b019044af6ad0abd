/* lru: which slot of a small cache a new entry takes; see lru.h. */
#include "lib/lru.h"

static const struct lru_age *age_at(const struct lru_age *first, size_t i,
				    size_t stride)
{
	return (const struct lru_age *)((const char *)first + i * stride);
}

size_t lru_pick(const struct lru_age *first, size_t n, size_t stride)
{
	size_t pick = 0;

	for (size_t i = 0; i < n; i++) {
		const struct lru_age *a = age_at(first, i, stride);

		if (!a->valid)
			return i;
		if (a->used < age_at(first, pick, stride)->used)
			pick = i;
	}
	return pick;
}

void lru_touch(struct lru_age *age, uint64_t *clock)
{
	age->valid = true;
	age->used = ++*clock;
}
