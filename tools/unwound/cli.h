/* SPDX-License-Identifier: MIT */
#ifndef UW_CLI_H
#define UW_CLI_H
#include <unwound/unwound.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2

int cmd_report(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_record(int argc, char **argv);
void cli_log(void *ctx, enum uw_log_level lvl, const char *msg);
extern int cli_verbose;
#endif
