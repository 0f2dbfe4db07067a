/*
 * One client connection (conn.c), and the forwarded TCP connection it may become
 * (forward.c).
 *
 * A connection opens with one control frame (an Open message); its `op` sets the state:
 *   OPEN          waiting for the open frame
 *   PING          the pong is queued; the connection ends once it is written
 *   EXEC          it carries a command (c->exec until the exit answer; input after
 *                 that is discarded). An exec opened with "keep": true whose client
 *                 sent everything (stdin ended, no cancel) goes back to OPEN after its
 *                 answer (which then says "kept": true): the next operation reuses it
 *   FORWARD_WAIT  connecting to the port in the box
 *   FORWARD       a raw byte pipe both ways, half-close passed through
 *   PTY           it carries a terminal (c->pty until the exit answer; pty.h)
 *   CALLS         the server's standing channel for agents' calls (calls.h)
 *   BRIDGES       the server's standing channel for bridged connections (bridge.h)
 *   ENDED         an error was answered; input is discarded
 * Besides the state it tracks each direction of its socket (and of the target's):
 * `ending` (shut the write side once what is queued is written), `wr_shut`, `rd_eof`.
 * `dead` says the socket is closed; the struct is freed (buried) once no command points
 * at it.
 */
#ifndef BOXD_CONN_H
#define BOXD_CONN_H

#include "boxd.h"

enum cstate { C_OPEN, C_PING, C_EXEC, C_FORWARD_WAIT, C_FORWARD, C_CALLS, C_BRIDGES, C_PTY, C_ENDED };

/* The target of a forwarded connection: 127.0.0.1:port in the box. */
/* A forwarded (or bridged) stream reads one side while this much waits for the other. */
#define FWD_HIGH_WATER (1024 * 1024)

struct target {
  int fd; /* -1 when closed */
  struct watch w;
  struct buf out; /* bytes for the target */
  size_t out_off;
  int ending, wr_shut, rd_eof;
  int port;
  uint32_t events; /* the epoll events last set: unchanged ones are not set again */
};

struct conn {
  struct boxd *bd;
  int fd;
  struct watch w;
  enum cstate state;
  struct buf in;  /* bytes not yet decoded */
  struct buf out; /* bytes not yet written */
  size_t out_off;
  int ending, wr_shut, rd_eof;
  int dead;      /* fd closed */
  int reading;   /* EPOLLIN wanted */
  int freed;
  int input_bad; /* a command's client sent a bad frame: the rest of its input is dropped */
  int keep;      /* the exec's Open asked to keep the connection for another operation */
  uint32_t events; /* the epoll events last set on fd (conn_update) */
  struct exec *exec;
  struct pty *pty;
  struct target t;
  struct conn *next, *prev;
};

/* ---- conn.c ------------------------------------------------------------------------ */

void conn_accept_all(struct boxd *bd);
void conn_on_event(struct conn *c, uint32_t events);
/* Closes the connection (and its target); a command it carries is cancelled. */
void conn_destroy(struct conn *c);
/* Frees (buries) a dead connection no command points at any more. */
void conn_maybe_free(struct conn *c);
size_t conn_pending(const struct conn *c);
/* Writes what it can; destroys the connection on an error. 0 if still alive. */
int conn_flush(struct conn *c);
void conn_write(struct conn *c, const void *data, size_t n);
void conn_frame(struct conn *c, int kind, const void *payload, size_t n);
/* Sends a control frame (and frees json). */
void conn_send_json(struct conn *c, struct buf *json);
/* Shuts the write side once everything queued is written. */
void conn_end(struct conn *c);
/* Answers an error {code, message} and ends. */
void conn_fail(struct conn *c, const char *code, const char *message);
/* Sets the events wanted on the socket from the state. */
void conn_update(struct conn *c);

/* ---- forward.c --------------------------------------------------------------------- */

void fwd_start(struct conn *c, int port);
/* The connection becomes a pipe to fd, a socket already connected (a bridged one). */
void fwd_adopt(struct conn *c, int fd);
void fwd_on_event(struct conn *c, uint32_t events);
/* Client bytes for the target (after the forwarded answer). */
void fwd_from_client(struct conn *c);
/* The client shut its write side: so is the target's. */
void fwd_client_eof(struct conn *c);
/* After the client's socket took output: reading the target may go on. */
void fwd_after_flush(struct conn *c);

#endif
