/* SPDX-License-Identifier: MIT */
/*
 * mmap, interposed (prof_maps.c says why): a file mapped executable by hand (no dlopen: the
 * loader's counts do not move) may replace code the tracker knows (MAP_FIXED over a library's
 * code), or land where a library was unmapped without dlclose. After such a call the mappings'
 * generation moves on, as after dlclose: a sample taken before it is unwound with the mappings
 * known until then, one taken after never with them. Anonymous and non-executable mappings
 * (malloc's, a JIT's, libunwound's own reads of files) leave it alone: no file's name is at
 * stake there, and they come often.
 *
 * The call is the system call itself, not glibc's mmap looked up with dlsym: dlsym may map
 * memory (a sanitizer's allocator, the loader's) and this may run before anything is set up.
 * The interposers' C names are prof_mmap and prof_mmap64; asm labels give them the symbols
 * mmap and mmap64 (one function on 64-bit glibc), which the program's references bind to.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "prof/iprof.h"

IPROF_NO_SANITIZE static void *map(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = syscall(SYS_mmap, addr, len, (long)prot, (long)flags, (long)fd, (long)off);
	if (r != -1 && (prot & PROT_EXEC) && !(flags & MAP_ANONYMOUS) && fd >= 0)
		atomic_fetch_add(&iprof_g.gen, 1);
	return (void *)r; /* (-1 with errno: MAP_FAILED) */
}

IPROF_NO_SANITIZE __attribute__((visibility("default"))) void *
prof_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap");
IPROF_NO_SANITIZE void *prof_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off);
}

IPROF_NO_SANITIZE __attribute__((visibility("default"))) void *
prof_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap64");
IPROF_NO_SANITIZE void *prof_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off);
}
