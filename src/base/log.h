/*
 * log.h - the library's one line of output to an administrator.
 *
 * Owns: the message sink.  The core never prints: it calls ordfs_log, and
 * the program decides where lines go (the daemon: stderr in the
 * foreground, syslog once detached; tests: a capture).  Default: stderr.
 * Rules: one message is one line without a trailing newline; the sink may
 * be called from any thread and must be thread-safe.
 */
#ifndef ORDFS_LOG_H
#define ORDFS_LOG_H

#include <syslog.h> /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO */

typedef void (*ordfs_log_sink)(int prio, const char *msg);

/* Installs sink (NULL restores the stderr default). */
void ordfs_log_set_sink(ordfs_log_sink sink);
void ordfs_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
