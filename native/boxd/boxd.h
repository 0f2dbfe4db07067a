/*
 * boxd: the daemon inside every box, speaking the protocol of src/boxd/protocol.ts (see
 * docs/boxes.md), in one thread with an epoll loop. It runs as box root with a few
 * capabilities, listens on one unix socket, and runs agents' commands through
 * boxd-spawn, each in a cgroup of its own so that a timeout or a cancel kills the whole
 * process tree.
 *
 * The parts, each in its own file:
 *   main.c     arguments, the listening socket, the epoll loop and its timers, ping
 *   conn.c     one client connection: frames in and out, the open message, its dispatch
 *   exec.c     one command: the ready helper, its pipes, the lifecycle (exec.h has the
 *              state table), the exit answer
 *   forward.c  a connection forwarded to a TCP port in the box
 *   pty.c      a terminal: a pseudo-terminal whose shell runs as the agent (pty.h)
 *   calls.c    agents' calls to the server (warren-secret), on a socket of their own
 *   bridge.c   TCP ports in the box whose connections are carried to the server (bridge.h)
 *   cgroup.c   the per-command cgroups: make, limit, list, count, read usage, remove
 *   spec.c     the checks of an exec request, and the options it gives the helper
 *   json.c     the JSON reader and writer of the control messages
 *   util.c     logging, time, epoll and fd helpers, name lists, deferred frees
 *
 * Everything boxd keeps lives in one struct boxd, made in main() and reached through
 * the objects (each connection and command points back at it). There are no globals:
 * signals arrive through a signalfd, so no signal handler needs one.
 *
 * Arguments (see bwrapArgv in src/boxes/local/bwrap.ts):
 *   --socket PATH --spawn PATH --seccomp PATH --cgroup-version 1|2
 *   --cgroup NAME=DIR (repeat) --ready-fd N --orphan-after-s N [--calls-socket PATH]
 *   [--bridge NAME=PORT (repeat)]
 */
#ifndef BOXD_H
#define BOXD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "json.h"

#define PROTOCOL_VERSION 1
#define MAX_FRAME_BYTES (1024 * 1024)
/* Frame kinds (FrameKind in protocol.ts). */
#define K_CONTROL 1
#define K_STDIN 2
#define K_STDOUT 3
#define K_STDERR 4
#define K_DATA 5
#define MIN_AGENT_ID 1000
#define MAX_ID 2147483646.0
#define MAX_CGROUPS 8
/* Output waits for the client beyond this many bytes queued on its socket. */
#define HIGH_WATER (64 * 1024)
/* The socket is not read while this many bytes of stdin wait for the command: a memory
   guard, high enough that a cancel behind stdin the command does not read is still seen
   in practice. */
#define STDIN_HIGH_WATER (8 * 1024 * 1024)
#define READ_CHUNK (256 * 1024)
#define MAX_FILE_RULES 128
/* The most folders a fenced command keeps of its home. */
#define MAX_FENCE_KEEP 64
#define GRAVEYARD 1024

/* What an epoll event is about: every registered fd carries one of these. */
enum wkind { W_LISTEN, W_SIGNAL, W_CONN, W_TARGET, W_OUT, W_ERR, W_IN, W_SPEC, W_CALLS_LISTEN, W_CALL, W_BRIDGE_LISTEN, W_PTY, W_PTY_SPEC };

struct watch {
  enum wkind kind;
  void *owner; /* struct conn (W_CONN, W_TARGET), struct exec (W_OUT .. W_SPEC), struct call (W_CALL),
                 struct pty (W_PTY, W_PTY_SPEC) */
};

/* One cgroup hierarchy given to boxd: its controllers ("memory", "cpu,cpuacct"; any
   name on v2) and the folder in the box where commands' cgroups are made. */
struct cgroot {
  char *name, *dir;
};

#define MAX_BRIDGES 8
/* A bridge (bridge.h): its name, its port on the box's loopback, the listening socket. */
struct bridge {
  char *name;
  int port;
  int fd;
  struct watch w;
};

struct config {
  const char *socket, *spawn_helper, *seccomp;
  const char *calls_socket; /* agents' calls (calls.c); NULL = none */
  int version; /* cgroup version, 1 or 2 */
  struct cgroot roots[MAX_CGROUPS];
  int nroots;
  int ready_fd;
  int orphan_after_s; /* 0: never; else exit when no server contact for this long */
  struct bridge bridges[MAX_BRIDGES];
  int nbridges;
};

/* A list of names (cgroup names of commands). */
struct names {
  char **v;
  size_t n, cap;
};

struct helper;
struct exec;
struct conn;
struct call;
struct pending;
struct pty;

struct boxd {
  struct config cfg;
  int ep;                  /* the epoll instance */
  int listen_fd, signal_fd;
  struct watch listen_w, signal_w;
  double started_at;
  double listen_paused_until; /* accept is paused (out of fds) until then; 0 = not */
  double next_sweep;
  double next_watch;       /* the next check of the server's contact and the socket */
  double last_contact;     /* the last time a client connected (or one was still open) */
  unsigned long socket_ino; /* the socket boxd made: gone or replaced = its folder was removed */
  unsigned long counter;     /* numbers the helpers' cgroups */
  struct helper *prepared;   /* the ready helper, in its cgroup, waiting for a command */
  struct helper *walled;     /* a second one, its walls applied ahead (exec.h); or NULL */
  struct buf walls_next;     /* the walls the next walled helper applies ahead; empty: none */
  struct buf walls_last;     /* the last command's walls */
  struct helper *helpers;    /* every helper not yet reaped */
  int want_prepare;          /* prepare another helper at the end of this iteration */
  struct exec *execs;        /* commands not yet answered */
  int active_count;          /* how many */
  struct conn *conns;
  struct pty *ptys;         /* terminals not yet answered */
  struct names generations;  /* cgroups of commands that generations started */
  struct names removals;     /* cgroups to remove after this iteration's answers */
  /* freed at the end of the loop's iteration: events of this batch may still name them */
  void *graveyard[GRAVEYARD];
  size_t ngrave;
  /* scratch for one read at a time (one thread): its own mapping, touched only as reads
     need it and given back to the kernel when boxd is idle (release_idle_memory) */
  char *chunk;
  int memory_released; /* nothing was used since the last release */
  /* agents' calls (calls.c) */
  int calls_fd;
  struct watch calls_w;
  int calls_paused;        /* accept is paused (out of fds) until a call ends */
  struct call *calls;      /* callers' connections */
  int ncalls;
  unsigned long call_counter;
  struct conn *calls_conn; /* the server's standing `calls` connection, or NULL */
  /* bridges (bridge.c) */
  struct pending *pending;   /* accepted connections waiting for the server's claim */
  int npending;
  unsigned long bridge_counter;
  struct conn *bridges_conn; /* the server's standing `bridges` connection, or NULL */
};

/* ---- util.c ------------------------------------------------------------------------ */

double now_ms(void);
void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xcalloc(size_t n, size_t size);
/* Adds (add=1) or changes the events of fd, whose events will carry w. */
void ep_set(struct boxd *bd, int fd, struct watch *w, uint32_t events, int add);
/* Closes *fd (if open; removed from epoll first if watched) and sets it to -1. */
void close_fd(struct boxd *bd, int *fd, int watched);
int set_nonblock(int fd);
/* A listening unix stream socket at path (replacing what was there), with the given mode; -1 with errno. */
int listen_unix(const char *path, mode_t mode, int backlog);
/* Reads a small file into buf (NUL-terminated); bytes read or -1. */
ssize_t read_small(const char *path, char *buf, size_t cap);
int write_text(const char *path, const char *text);
void bury(struct boxd *bd, void *p);
void bury_flush(struct boxd *bd);
void names_add(struct names *l, const char *name);
int names_has(const struct names *l, const char *name);
void names_drop(struct names *l, const char *name);
void names_clear(struct names *l);
const char *signal_name(int sig);
const char *errno_code(int err);

/* ---- main.c ------------------------------------------------------------------------ */

/* Answers a ping on c: boxd's memory, uptime, commands and processes. */
void ping_answer(struct conn *c);

#endif
