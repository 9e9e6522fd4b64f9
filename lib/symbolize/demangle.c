/* SPDX-License-Identifier: MIT */
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <stdlib.h>

char *sym_demangle_dup(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* a suffix (name@plt, name@@VERSION from debug symbol tables) is kept after the base */
	const char *at = strchr(name, '@');
	char *tmp = NULL;
	const char *in = name;
	if (at) {
		tmp = strndup(name, (size_t)(at - name));
		if (!tmp)
			return NULL;
		in = tmp;
	}
	/* DMGL_AUTO tries Rust (legacy, with the hash dropped, and v0) before the Itanium ABI */
	char *d = cplus_demangle(in, DMGL_AUTO);
	free(tmp);
	if (!d || !at)
		return d;
	size_t dl = strlen(d), sl = strlen(at);
	char *full = malloc(dl + sl + 1);
	if (full) {
		memcpy(full, d, dl);
		memcpy(full + dl, at, sl + 1);
	}
	free(d);
	return full;
}

const char *sym_demangle(struct base_strings *strings, const char *name)
{
	char *d = sym_demangle_dup(name);
	if (!d)
		return name;
	const char *r = base_strings_intern(strings, d, strlen(d));
	free(d);
	return r ? r : name;
}
