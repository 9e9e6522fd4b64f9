/* SPDX-License-Identifier: MIT */
/* Hash map from uint64_t keys: linear probing, backward-shift deletion. */
#include "base/map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

void base_map_init(struct base_map *m)
{
	memset(m, 0, sizeof(*m));
}

static size_t map_find(const struct base_map *m, uint64_t key, bool *found)
{
	size_t mask = m->cap - 1, i = base_hash64(key) & mask;
	while (m->used[i]) {
		if (m->keys[i] == key) {
			*found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
	*found = false;
	return i;
}

void *base_map_get(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	return f ? m->vals[i] : NULL;
}

bool base_map_has(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return false;
	bool f;
	map_find(m, key, &f);
	return f;
}

static int map_grow(struct base_map *m)
{
	struct base_map n;
	n.cap = m->cap ? m->cap * 2 : 16;
	n.len = 0;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	n.used = calloc(n.cap, 1);
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		bool f;
		size_t j = map_find(&n, m->keys[i], &f);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
		n.len++;
	}
	base_map_free(m);
	*m = n;
	return 0;
}

int base_map_put(struct base_map *m, uint64_t key, void *val)
{
	if ((m->len + 1) * 4 > m->cap * 3 && map_grow(m))
		return -ENOMEM;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}

void *base_map_del(struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f)
		return NULL;
	void *old = m->vals[i];
	size_t mask = m->cap - 1, j = i;
	m->used[i] = 0;
	m->len--;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->used[j])
			break;
		size_t home = base_hash64(m->keys[j]) & mask;
		/* move j back to i if its home is not cyclically in (i, j] */
		bool in = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (in)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->used[i] = 1;
		m->used[j] = 0;
		i = j;
	}
	return old;
}

bool base_map_next(const struct base_map *m, size_t *it, uint64_t *key, void **val)
{
	for (; *it < m->cap; (*it)++) {
		if (m->used[*it]) {
			if (key)
				*key = m->keys[*it];
			if (val)
				*val = m->vals[*it];
			(*it)++;
			return true;
		}
	}
	return false;
}

void base_map_free(struct base_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}
