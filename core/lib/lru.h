/*
 * lru: which slot of a small fixed-size cache a new entry takes.  Each
 * slot of the cache's array holds a struct lru_age at the same offset;
 * the cache keeps one clock (zero at first) for all its slots.  Nothing
 * of flowfs here.
 */
#ifndef FLOWFS_LRU_H
#define FLOWFS_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lru_age {
	bool valid;
	uint64_t used;
};

/*
 * The index of the slot to fill among `n` (n > 0) whose ages start at
 * `first` (the first slot's) and lie `stride` bytes apart (the size of a
 * slot): an empty slot, else the least recently used.
 */
size_t lru_pick(const struct lru_age *first, size_t n, size_t stride);

/* `age`'s slot holds an entry and was used now. */
void lru_touch(struct lru_age *age, uint64_t *clock);

#endif
