/* SPDX-License-Identifier: MIT */
/* Hash map from uint64_t keys: linear probing, backward-shift deletion. A slot holds its key and
 * value side by side (one cache line read per probe, where three arrays took three); a free slot
 * holds MAP_FREE, and that key itself, when it is put, is kept beside the slots. */
#include "base/map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/hash.h"

/* (any value would do: a key equal to it is kept apart) */
#define MAP_FREE 0x8d2c5b1e7f3a9e61ull

void base_map_init(struct base_map *m)
{
	memset(m, 0, sizeof(*m));
}

static size_t map_find(const struct base_map *m, uint64_t key, bool *found)
{
	size_t mask = m->cap - 1, i = base_hash64(key) & mask;
	for (;;) {
		uint64_t k = m->ents[i].key;
		if (k == key) {
			*found = true;
			return i;
		}
		if (k == MAP_FREE) {
			*found = false;
			return i;
		}
		i = (i + 1) & mask;
	}
}

void *base_map_get(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	if (UW_UNLIKELY(key == MAP_FREE))
		return m->free_key_used ? m->free_key_val : NULL;
	if (!m->cap)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	return f ? m->ents[i].val : NULL;
}

bool base_map_has(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return false;
	if (UW_UNLIKELY(key == MAP_FREE))
		return m->free_key_used;
	if (!m->cap)
		return false;
	bool f;
	map_find(m, key, &f);
	return f;
}

static int map_resize(struct base_map *m, size_t cap)
{
	struct base_map_ent *ents = malloc(cap * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		ents[i].key = MAP_FREE;
	struct base_map n = *m;
	n.ents = ents;
	n.cap = cap;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->ents[i].key == MAP_FREE)
			continue;
		bool f;
		size_t j = map_find(&n, m->ents[i].key, &f);
		n.ents[j] = m->ents[i];
	}
	free(m->ents);
	*m = n;
	return 0;
}

int base_map_reserve(struct base_map *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 16;
	while (n * 4 > cap * 3) {
		if (cap > SIZE_MAX / 64)
			return -ENOMEM;
		cap *= 2;
	}
	return cap > m->cap ? map_resize(m, cap) : 0;
}

int base_map_put(struct base_map *m, uint64_t key, void *val)
{
	if (UW_UNLIKELY(key == MAP_FREE)) {
		m->len += !m->free_key_used;
		m->free_key_used = true;
		m->free_key_val = val;
		return 0;
	}
	/* (len counts the key kept apart too: a little early to grow, never late) */
	if ((m->len + 1) * 4 > m->cap * 3 && map_resize(m, m->cap ? m->cap * 2 : 16))
		return -ENOMEM;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f) {
		m->ents[i].key = key;
		m->len++;
	}
	m->ents[i].val = val;
	return 0;
}

void *base_map_del(struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	if (UW_UNLIKELY(key == MAP_FREE)) {
		if (!m->free_key_used)
			return NULL;
		m->free_key_used = false;
		m->len--;
		return m->free_key_val;
	}
	if (!m->cap)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f)
		return NULL;
	void *old = m->ents[i].val;
	size_t mask = m->cap - 1, j = i;
	m->ents[i].key = MAP_FREE;
	m->len--;
	for (;;) {
		j = (j + 1) & mask;
		if (m->ents[j].key == MAP_FREE)
			break;
		size_t home = base_hash64(m->ents[j].key) & mask;
		/* move j back to i if its home is not cyclically in (i, j] */
		bool in = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (in)
			continue;
		m->ents[i] = m->ents[j];
		m->ents[j].key = MAP_FREE;
		i = j;
	}
	return old;
}

bool base_map_next(const struct base_map *m, size_t *it, uint64_t *key, void **val)
{
	for (; *it < m->cap; (*it)++) {
		if (m->ents[*it].key != MAP_FREE) {
			if (key)
				*key = m->ents[*it].key;
			if (val)
				*val = m->ents[*it].val;
			(*it)++;
			return true;
		}
	}
	/* the key kept apart, after the slots */
	if (*it == m->cap && m->free_key_used) {
		if (key)
			*key = MAP_FREE;
		if (val)
			*val = m->free_key_val;
		(*it)++;
		return true;
	}
	return false;
}

void base_map_free(struct base_map *m)
{
	free(m->ents);
	memset(m, 0, sizeof(*m));
}
