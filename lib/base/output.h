/* SPDX-License-Identifier: MIT */
/* Output files, created the one way every output is. */
#ifndef UW_BASE_OUTPUT_H
#define UW_BASE_OUTPUT_H

#include <stdbool.h>

/* Output files are created the one way every output is: never through a symbolic link
 * (a link at the path is moved aside, not followed), mode less the umask. The file is written
 * without a name beside the path and put there only when published (the previous file kept as
 * PATH.old): a writer that fails or is killed first leaves the path as it was. A character
 * device or FIFO at the path (or a link to one), and the path of an open descriptor (/dev/stdout,
 * /dev/fd/N, /proc/self/fd/N, whatever file it is open on), are written as they are; "-" is
 * standard output. Each returns 0 or -errno (-UW_ENOTREG for a path that is neither). */
struct uw_output;
int base_output_open(const char *path, unsigned mode, struct uw_output **out);
/* The same for a recording (perf.data, as perf writes one): a directory at the path (perf
 * record --threads's, or any) is moved aside to PATH.old too, and a directory recording that
 * was PATH.old removed first (perf's rule; a PATH.old directory with anything else in it stays,
 * and publishing fails with -ENOTEMPTY). */
int base_output_open_recording(const char *path, unsigned mode, struct uw_output **out);
int base_output_fd(const struct uw_output *o);
/* Is it written where it is (standard output, a device, a FIFO, an open descriptor's path)? */
bool base_output_in_place(const struct uw_output *o);
/* The file at its path now (writing may go on: a recording readable if its writer dies). */
int base_output_publish(struct uw_output *o);
/* Published (if not yet) and closed; freed either way. */
int base_output_commit(struct uw_output *o);
/* Closed and freed; a file never published is gone. NULL is ignored. */
void base_output_discard(struct uw_output *o);
/* Opened and published at once: the descriptor (uw_output_create). @return fd or -errno. */
int base_create_output(const char *path, unsigned mode);

#endif
