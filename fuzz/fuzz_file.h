/* SPDX-License-Identifier: MIT */
/* The fuzz input as a file, for parsers that open a path: a memfd named by /proc/self/fd. */
#ifndef UW_FUZZ_FILE_H
#define UW_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* @return the descriptor (the caller closes it) with its path in path, or -1 */
static inline int fuzz_file(const uint8_t *data, size_t size, char path[64])
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, 64, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
