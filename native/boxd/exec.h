/*
 * One command (an exec stream) and the helpers that run commands.
 *
 * A helper is boxd-spawn started ahead of time in a fresh cgroup (x<n>-<time>): it has
 * joined its cgroups and waits on its fd 3 for the command's options. boxd keeps one
 * ready (bd->prepared); a command takes it, and another is prepared at the end of the
 * loop's iteration. When a command's walls are the last command's too (an agent's commands
 * one after another), a second ready helper is made, given those walls (bd->walls_next:
 * uid, groups, seccomp, /agent, /workspace, Landlock rules, nothing of the command itself)
 * to apply while it waits (bd->walled); a command with exactly those walls takes it and
 * sends it only its cwd, environment and argv. Any other command takes the plain one, and
 * lets the walled one go; so does any command once the seccomp program's file changed since
 * the walls were sent (a broken or new filter reaches the very next command). Commands of
 * changing walls (agents taking turns) make no walled helper at all: nothing is forked in
 * vain. A fenced home is never walled ahead (spec_walls).
 *
 * The lifecycle of a command is one state, changed only by exec_event(), which looks the
 * (state, event) pair up in the table below and aborts on a pair that is not in it (a bug
 * in boxd: the box's server sees boxd gone rather than a command in a state nobody meant).
 *
 * States:
 *   RUNNING         the command runs; timer: its timeout (none when timeoutMs is 0)
 *   KILLING         a cancel or the timeout: SIGKILL to every pid in the command's cgroup,
 *                   round after round (timer: the next round, 1 ms on) until the cgroup is
 *                   empty or 10 s have passed; the command has not exited yet
 *   KILLING_EXITED  the same, after the command (the helper's pid) has exited
 *   KILLED          the rounds are done but the command's exit is not reaped yet
 *   DRAINING        the command has exited and no kill is going on: its stdout and stderr
 *                   are read until both close or a grace of 100 ms ends (timer), since
 *                   output still open then belongs to background processes, which do not
 *                   hold the answer
 *   ANSWERED        the rest of the output is read, the exit answer sent; the exec is
 *                   freed at the end of the loop's iteration and takes no more events
 *
 * Events:
 *   CANCEL       a cancel message, a bad frame from the client, or the client gone
 *   TIMEOUT      the RUNNING timer
 *   EXIT         the helper's pid is reaped (its status is the command's)
 *   KILL_DONE    a kill round found the cgroup empty, or the 10 s are over
 *   OUTPUT_DONE  in DRAINING: stdout and stderr both closed, or the grace ended
 *
 * Transitions (any pair not listed aborts):
 *   state           event        next state       what happens on the way
 *   RUNNING         CANCEL       KILLING          answer says cancelled
 *   RUNNING         TIMEOUT      KILLING          answer says timedOut
 *   RUNNING         EXIT         DRAINING         OUTPUT_DONE at once if both pipes closed
 *   KILLING         CANCEL       KILLING          (nothing: a kill is going on)
 *   KILLING         EXIT         KILLING_EXITED   the rounds go on
 *   KILLING         KILL_DONE    KILLED
 *   KILLING_EXITED  CANCEL       KILLING_EXITED   (nothing: the command has ended)
 *   KILLING_EXITED  KILL_DONE    DRAINING         as from RUNNING on EXIT
 *   KILLED          CANCEL       KILLED           (nothing)
 *   KILLED          EXIT         DRAINING         as from RUNNING on EXIT
 *   DRAINING        CANCEL       DRAINING         (nothing: the command has ended)
 *   DRAINING        OUTPUT_DONE  ANSWERED         the exit answer; the cgroup is removed
 *                                                 after this iteration if it is empty
 *
 * Besides its state a command has flow-control flags, which the lifecycle does not read:
 * `paused` (its output waits for the client's socket) and `stdin_eof` (the client ended
 * stdin).
 */
#ifndef BOXD_EXEC_H
#define BOXD_EXEC_H

#include "boxd.h"
#include "spec.h"

enum exec_state { X_RUNNING, X_KILLING, X_KILLING_EXITED, X_KILLED, X_DRAINING, X_ANSWERED };
enum exec_event { EV_CANCEL, EV_TIMEOUT, EV_EXIT, EV_KILL_DONE, EV_OUTPUT_DONE };
/* Why a kill started (what the answer's cancelled and timedOut say). */
enum exec_kill { KILL_NONE, KILL_CANCEL, KILL_TIMEOUT };

struct helper {
  struct boxd *bd;
  char name[64]; /* its cgroup */
  pid_t pid;
  int in, out, err, spec; /* our ends of its pipes (-1 when closed) */
  int trace;              /* where it writes its phase times when asked (fd 4 in it) */
  int exited, code, sig;  /* its wait status, once reaped */
  struct exec *exec;      /* the command that took it; NULL while ready or let go */
  struct buf walls;       /* the walls it applied ahead of its command (spec_walls); empty: none */
  struct buf filter;      /* with walls: the seccomp program as it was when they were sent */
  struct helper *next;    /* in bd->helpers until reaped */
};

struct exec {
  struct boxd *bd;
  enum exec_state state;
  enum exec_kill kill;
  struct conn *conn; /* the client's connection; NULL once answered */
  struct helper *h;  /* NULL once answered */
  char name[64];     /* its cgroup (the helper's) */
  double begun;
  int generation;
  int trace;        /* the answer carries the phase times */
  double t_request, t_limits, t_spec_sent, t_exit; /* CLOCK_MONOTONIC, µs */
  int code, sig;    /* the exit status, from EXIT on */
  int open_pipes;   /* stdout and stderr not yet at end of file */
  double timer_at;  /* the state's timer (see the table); 0 = none */
  double kill_deadline;
  struct watch wout, werr, win, wspec;
  struct buf stdin_q; /* stdin the command has not taken yet */
  size_t stdin_off;
  int stdin_eof;
  int eof_seen; /* the client's stdin_eof frame came: it sends nothing more for this command */
  struct buf spec_q; /* the helper's options not yet written */
  size_t spec_off;
  int paused;
  struct exec *next, *prev; /* in bd->execs until answered */
};

/* native/boxd-spawn.c, built into boxd too for a terminal's shell (pty.c), which a forked
   boxd becomes; a command's helper is the boxd-spawn program itself (exec.c). */
int boxd_spawn_main(int argc, char **argv);
/* In a child just forked, with its fds 0..keep-1 in place: closes every other fd, resets
   its signals and name, and runs the helper (never returns). */
void helper_become(int keep, int argc, const char **argv) __attribute__((noreturn));

/* Starts a ready helper if none is. */
void helper_prepare(struct boxd *bd);
/* Reaps exited children: helpers, and through them commands (EXIT). */
void helpers_reap(struct boxd *bd);

/* Starts the checked command s for connection c, and answers started (or an error). */
void exec_start(struct conn *c, const struct spec *s);
/* A frame from the client after the open one. */
void exec_frame(struct exec *e, int kind, const char *payload, size_t len);
/* Sends an event (see the table). */
void exec_event(struct exec *e, enum exec_event ev);
/* The client's connection is gone: the command is cancelled, its output dropped. */
void exec_conn_gone(struct exec *e);
/* The client's socket took the queued output: reading the command's output goes on. */
void exec_resume_output(struct exec *e);
/* Bytes of stdin queued for the command. */
size_t exec_stdin_queued(const struct exec *e);
/* An event on one of the command's pipes. */
void exec_on_watch(struct exec *e, enum wkind kind);
/* Whether the command of cgroup name is not answered yet. */
int exec_is_active(const struct boxd *bd, const char *name);
/* The earliest timer of any command, if before next. */
double exec_next_timer(const struct boxd *bd, double next);
/* Fires the commands' timers that are due. */
void exec_run_timers(struct boxd *bd, double now);

#endif
