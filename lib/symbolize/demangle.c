/* SPDX-License-Identifier: MIT */
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <stdlib.h>

const char *sym_demangle(struct base_intern *strings, const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	/* a suffix (name@plt, name@@VERSION from debug symbol tables) is kept after the base */
	const char *at = strchr(name, '@');
	char *tmp = NULL;
	const char *in = name;
	if (at) {
		tmp = strndup(name, (size_t)(at - name));
		if (!tmp)
			return name;
		in = tmp;
	}
	/* DMGL_AUTO tries Rust (legacy, with the hash dropped, and v0) before the Itanium ABI */
	char *d = cplus_demangle(in, DMGL_AUTO);
	free(tmp);
	if (!d)
		return name;
	const char *r;
	if (at) {
		size_t dl = strlen(d), sl = strlen(at);
		char *full = malloc(dl + sl + 1);
		if (!full) {
			free(d);
			return name;
		}
		memcpy(full, d, dl);
		memcpy(full + dl, at, sl + 1);
		r = base_intern(strings, full, dl + sl);
		free(full);
	} else {
		r = base_intern(strings, d, strlen(d));
	}
	free(d);
	return r ? r : name;
}
