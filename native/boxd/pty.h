/*
 * A terminal (the `pty` op): a pseudo-terminal whose shell runs as the agent, within the
 * walls of any of its commands, on one client connection.
 *
 * boxd opens the pair (/dev/ptmx of the box's own devpts), forks, and the child makes a
 * session with the terminal's other end as its controlling terminal and as its fds 0, 1
 * and 2, then execs boxd-spawn with the terminal's options on fd 3: the helper joins a
 * cgroup of the terminal's own (x<n>-t<time>), drops to the agent (uid, no capabilities,
 * Landlock, seccomp) and execs the shell. boxd keeps the master side: what the shell
 * writes goes to the client as DATA frames, DATA frames from the client are its input.
 *
 * The client's control messages: resize {cols, rows} (TIOCSWINSZ; the kernel sends
 * SIGWINCH to the foreground job), signal {signal} (to the terminal's foreground process
 * group, as a key of the terminal would), cancel (the whole tree is killed). A bad frame
 * cancels, as the client going away does.
 *
 * Its life, one flag each: the shell runs; `killing` (a cancel: SIGKILL rounds over the
 * terminal's cgroup, 1 ms apart, until it is empty or 10 s passed); `exited` (the shell
 * was reaped); then the rest of its output is read until no process holds the terminal
 * (read gives EIO) or a grace of 100 ms ends, since output still open then belongs to
 * background jobs; then one exit answer, as exec's (exitCode, signal, cancelled, usage),
 * and the connection ends. The master is closed with the answer: jobs left behind see
 * the terminal hang up. A shell that exits leaves its nohup'd jobs in the cgroup, as a
 * command does; a cancel kills them.
 */
#ifndef BOXD_PTY_H
#define BOXD_PTY_H

#include "boxd.h"

struct jv;

/* The client's socket is not read while this much input waits for the terminal. */
#define PTY_INPUT_HIGH_WATER (1024 * 1024)

struct pty {
  struct boxd *bd;
  struct conn *conn; /* NULL once answered, or once the client is gone */
  char name[64];     /* its cgroup */
  pid_t pid;         /* the helper, then the shell (same process) */
  int master, spec;  /* -1 when closed */
  struct watch wmaster, wspec;
  struct buf in_q; /* input the terminal has not taken yet */
  size_t in_off;
  struct buf spec_q; /* the helper's options not yet written */
  size_t spec_off;
  int paused;      /* output waits for the client's socket */
  int eof;         /* no process holds the terminal any more */
  int exited, code, sig;
  int killing, cancelled;
  double begun, kill_deadline;
  double timer_at; /* the next kill round, or the end of the grace; 0 = none */
  struct pty *next, *prev;
};

/* The open message's pty object: checks it, starts the shell, answers started (or an
   error, and the connection ends). */
void pty_open(struct conn *c, const struct jv *x);
/* A frame from the client after the open one. */
void pty_frame(struct pty *p, int kind, const char *payload, size_t len);
/* Bytes of input queued for the terminal. */
size_t pty_input_queued(const struct pty *p);
/* The client's connection is gone: the terminal is cancelled, its output dropped. */
void pty_conn_gone(struct pty *p);
/* A cancel (a cancel message, a bad frame, the client's end of input). */
void pty_cancel(struct pty *p);
/* The client's socket took the queued output: reading the terminal goes on. */
void pty_resume_output(struct pty *p);
void pty_on_watch(struct pty *p, enum wkind kind, uint32_t events);
/* A reaped child that is no helper: the terminal's shell, if it is one. */
void pty_reaped(struct boxd *bd, pid_t pid, int status);
/* Whether cgroup name is a terminal's not yet answered. */
int pty_is_active(const struct boxd *bd, const char *name);
double pty_next_timer(const struct boxd *bd, double next);
void pty_run_timers(struct boxd *bd, double now);

#endif
