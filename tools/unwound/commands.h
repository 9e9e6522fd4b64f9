/* SPDX-License-Identifier: MIT */
/* The commands main.c dispatches to, one a file (cmd_*.c): each takes its own argv (argv[0] the
 * command's name) and returns the exit status (CLI_EXIT_*). */
#ifndef UW_CLI_COMMANDS_H
#define UW_CLI_COMMANDS_H

int cmd_report(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
