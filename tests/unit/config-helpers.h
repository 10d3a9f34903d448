/* What the tests of the configuration's entries share (test_server_config.c,
 * test_remote_config.c): a config parsed from text, its problems, and the problem at a
 * JSON path. One of each per test: Criterion runs each test in a process of its own. */
#pragma once

#include "config.h"

extern struct config C;
extern struct config_problems P;

/* Parses text into C and P (which done() must have freed before, or never held one). */
int parse(const char *text);
/* Frees C and P; for a suite's fini, and between parses. */
void done(void);
/* The problem at path, or NULL. */
const struct config_problem *problem_at(const char *path);
/* One entry "a" holding members (JSON members without braces), parsed: the problem at
 * mcpServers.a.KEY (mcpServers.a when key is "") holds words, and "a" was skipped. */
void expect_entry_refused(const char *members, const char *key, const char *words);
