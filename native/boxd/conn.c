/* One client connection: see conn.h. */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bridge.h"
#include "calls.h"
#include "exec.h"
#include "pty.h"
#include "spec.h"

/* ---- output --------------------------------------------------------------------------- */

void conn_destroy(struct conn *c) {
  if (c->dead) return;
  c->dead = 1;
  close_fd(c->bd, &c->fd, 1);
  close_fd(c->bd, &c->t.fd, 1);
  buf_free(&c->in);
  buf_free(&c->out);
  buf_free(&c->t.out);
  if (c->exec) exec_conn_gone(c->exec);
  if (c->pty) pty_conn_gone(c->pty);
  if (c->bd->calls_conn == c) calls_server_gone(c->bd);
  if (c->bd->bridges_conn == c) bridges_server_gone(c->bd);
  conn_maybe_free(c);
}

void conn_maybe_free(struct conn *c) {
  if (!c->dead || c->exec || c->pty || c->freed) return;
  c->freed = 1;
  if (c->prev) c->prev->next = c->next;
  else c->bd->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  bury(c->bd, c);
}

size_t conn_pending(const struct conn *c) { return c->out.len - c->out_off; }

int conn_flush(struct conn *c) {
  while (!c->dead && conn_pending(c) > 0) {
    ssize_t n = send(c->fd, c->out.p + c->out_off, conn_pending(c), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return -1;
    }
    c->out_off += (size_t)n;
  }
  if (c->dead) return -1;
  if (conn_pending(c) == 0) {
    c->out.len = c->out_off = 0;
    if (c->ending && !c->wr_shut) {
      shutdown(c->fd, SHUT_WR);
      c->wr_shut = 1;
      if (c->rd_eof && c->state != C_FORWARD) {
        conn_destroy(c);
        return -1;
      }
    }
    if (c->exec) exec_resume_output(c->exec);
    if (c->pty) pty_resume_output(c->pty);
  }
  conn_update(c);
  if (c->state == C_FORWARD) {
    fwd_after_flush(c);
    if (c->dead) return -1;
  }
  return 0;
}

void conn_write(struct conn *c, const void *data, size_t n) {
  if (c->dead || c->ending) return;
  if (buf_put(&c->out, data, n)) conn_destroy(c);
}

void conn_frame(struct conn *c, int kind, const void *payload, size_t n) {
  unsigned char head[5];
  uint32_t len = (uint32_t)n + 1;
  head[0] = (unsigned char)(len >> 24), head[1] = (unsigned char)(len >> 16), head[2] = (unsigned char)(len >> 8);
  head[3] = (unsigned char)len, head[4] = (unsigned char)kind;
  conn_write(c, head, 5);
  conn_write(c, payload, n);
}

void conn_send_json(struct conn *c, struct buf *json) {
  if (json->p) conn_frame(c, K_CONTROL, json->p, json->len);
  else conn_destroy(c); /* out of memory: nothing sensible to say */
  buf_free(json);
  conn_flush(c);
}

void conn_end(struct conn *c) {
  if (c->dead) return;
  c->ending = 1;
  conn_flush(c);
}

void conn_fail(struct conn *c, const char *code, const char *message) {
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"error\",\"code\":\"%s\",\"message\":", code);
  json_put_string(&j, message, strlen(message));
  buf_puts(&j, "}");
  c->state = C_ENDED;
  conn_send_json(c, &j);
  conn_end(c);
}

void conn_update(struct conn *c) {
  if (c->dead) return;
  uint32_t ev = 0;
  int want_in = !c->rd_eof;
  if (c->state == C_FORWARD_WAIT) want_in = 0;
  if (c->state == C_FORWARD && c->t.out.len - c->t.out_off > FWD_HIGH_WATER) want_in = 0;
  if (c->state == C_EXEC && c->exec && exec_stdin_queued(c->exec) > STDIN_HIGH_WATER) want_in = 0;
  if (c->state == C_PTY && c->pty && pty_input_queued(c->pty) > PTY_INPUT_HIGH_WATER) want_in = 0;
  if (want_in) ev |= EPOLLIN | EPOLLRDHUP;
  if (conn_pending(c) > 0) ev |= EPOLLOUT;
  /* set after every read and write of a stream: an unchanged set costs no syscall */
  if (ev != c->events) ep_set(c->bd, c->fd, &c->w, ev, 0);
  c->events = ev;
  c->reading = want_in;
}

/* ---- input ------------------------------------------------------------------------------ */

/* Takes one complete frame from in[0..len); 1 if one was taken, 0 if none yet, -1 on a bad
   one (err says why). */
static int take_frame(const char *in, size_t len, int *kind, const char **payload, size_t *plen,
                      struct buf *err) {
  if (len < 4) return 0;
  const unsigned char *p = (const unsigned char *)in;
  uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
  if (n < 1 || n > MAX_FRAME_BYTES) {
    buf_printf(err, "bad frame length %u", n);
    return -1;
  }
  if (len < 4 + (size_t)n) return 0;
  if (p[4] < K_CONTROL || p[4] > K_DATA) {
    buf_printf(err, "unknown frame kind %u", p[4]);
    return -1;
  }
  *kind = p[4];
  *payload = in + 5;
  *plen = n - 1;
  return 1;
}

static void consume(struct conn *c, size_t n) {
  memmove(c->in.p, c->in.p + n, c->in.len - n);
  c->in.len -= n;
}

/* The frames of an exec's client while it runs; a bad one cancels the command. */
static void exec_input(struct conn *c) {
  struct exec *e = c->exec;
  struct buf err = {0};
  while (!c->dead && c->exec == e && !c->input_bad) {
    int kind;
    const char *p;
    size_t n;
    int r = take_frame(c->in.p, c->in.len, &kind, &p, &n, &err);
    if (r < 0) {
      c->input_bad = 1;
      exec_event(e, EV_CANCEL);
      break;
    }
    if (r == 0) break;
    exec_frame(e, kind, p, n);
    if (!c->dead && c->exec == e) consume(c, 5 + n);
  }
  if (!c->dead && c->input_bad) c->in.len = 0;
  buf_free(&err);
}

/* The frames of a terminal's client; a bad one cancels the terminal. */
static void pty_input(struct conn *c) {
  struct pty *p = c->pty;
  struct buf err = {0};
  while (!c->dead && c->pty == p && !c->input_bad) {
    int kind;
    const char *f;
    size_t n;
    int r = take_frame(c->in.p, c->in.len, &kind, &f, &n, &err);
    if (r < 0) {
      c->input_bad = 1;
      pty_cancel(p);
      break;
    }
    if (r == 0) break;
    pty_frame(p, kind, f, n);
    if (!c->dead && c->pty == p) consume(c, 5 + n);
  }
  if (!c->dead && (c->input_bad || c->pty != p)) c->in.len = 0;
  buf_free(&err);
}

/* The server's replies on its calls connection; a bad frame ends it. */
static void calls_input(struct conn *c) {
  struct buf err = {0};
  while (!c->dead && c->state == C_CALLS) {
    int kind;
    const char *p;
    size_t n;
    int r = take_frame(c->in.p, c->in.len, &kind, &p, &n, &err);
    if (r < 0) conn_fail(c, "invalid", err.p);
    if (r <= 0) break;
    if (kind != K_CONTROL || calls_reply(c->bd, p, n)) {
      conn_fail(c, "invalid", "a calls connection carries only reply messages");
      break;
    }
    consume(c, 5 + n);
  }
  if (c->state != C_CALLS && !c->dead) c->in.len = 0;
  buf_free(&err);
}

/* An exec request: checked, then every complete frame already received after it must
   decode, then the command starts and those frames go to it. */
static void open_exec(struct conn *c, const struct jv *x, struct perr *e) {
  struct spec s;
  if (spec_parse(json_get(x, "exec"), &s, e)) {
    conn_fail(c, "invalid", e->msg.p ? e->msg.p : "");
    return;
  }
  struct buf ferr = {0};
  for (size_t off = 0;;) {
    int kind;
    const char *p;
    size_t n;
    int r = take_frame(c->in.p + off, c->in.len - off, &kind, &p, &n, &ferr);
    if (r < 0) {
      conn_fail(c, "invalid", ferr.p);
      buf_free(&ferr);
      return;
    }
    if (r == 0) break;
    off += 5 + n;
  }
  c->state = C_EXEC;
  const struct jv *keep = json_get(x, "keep");
  c->keep = keep && keep->t == J_BOOL && keep->b;
  exec_start(c, &s);
  if (!c->exec) return;
  exec_input(c);
  if (!c->dead) conn_update(c);
}

/* The open frame: its op says what the connection carries. */
static void conn_open(struct conn *c, const char *payload, size_t len) {
  struct jv *x = json_parse(payload, len);
  struct perr e = {{0}};
  const char *code = "invalid";
  if (!x) {
    buf_puts(&e.msg, "control frame is not JSON");
    goto fail;
  }
  if (x->t != J_OBJ) {
    buf_puts(&e.msg, "control frame is not an object");
    goto fail;
  }
  const struct jv *v = json_get(x, "v");
  if (!v || v->t != J_NUM) {
    buf_printf(&e.msg, "protocol version must be the number %d", PROTOCOL_VERSION);
    goto fail;
  }
  if (v->n != PROTOCOL_VERSION) {
    buf_printf(&e.msg, "protocol version %.17g is not %d", v->n, PROTOCOL_VERSION);
    goto fail;
  }
  const struct jv *op = json_get(x, "op");
  if (json_is_str(op, "ping")) {
    c->state = C_PING;
    ping_answer(c);
  } else if (json_is_str(op, "exec")) {
    open_exec(c, x, &e);
  } else if (json_is_str(op, "forward")) {
    long port;
    if (spec_int(json_get(x, "port"), "port", 1, 65535, &port, &e)) goto fail;
    fwd_start(c, (int)port);
  } else if (json_is_str(op, "calls")) {
    calls_attach(c);
  } else if (json_is_str(op, "bridges")) {
    bridges_attach(c);
  } else if (json_is_str(op, "bridge")) {
    long id;
    if (spec_int(json_get(x, "id"), "id", 1, MAX_ID, &id, &e)) goto fail;
    bridge_claim(c, (unsigned long)id);
  } else if (json_is_str(op, "pty")) {
    pty_open(c, x);
    if (c->pty) pty_input(c);
    if (!c->dead) conn_update(c);
  } else if (op && op->t == J_STR) {
    buf_puts(&e.msg, "unknown op ");
    json_put_string(&e.msg, op->s, op->len);
    goto fail;
  } else {
    buf_puts(&e.msg, "op must be a string");
    goto fail;
  }
  json_free(x);
  buf_free(&e.msg);
  return;
fail:
  json_free(x);
  conn_fail(c, code, e.msg.p ? e.msg.p : "");
  buf_free(&e.msg);
}

static void conn_process_input(struct conn *c) {
  switch (c->state) {
    case C_OPEN: {
      struct buf err = {0};
      int kind;
      const char *p;
      size_t n;
      int r = take_frame(c->in.p, c->in.len, &kind, &p, &n, &err);
      if (r < 0) conn_fail(c, "invalid", err.p);
      else if (r == 1 && kind != K_CONTROL) conn_fail(c, "invalid", "the first frame must be a control frame");
      else if (r == 1) {
        /* the open frame is copied: what it starts takes the frames after it from c->in */
        char *copy = malloc(n + 1);
        if (copy) {
          memcpy(copy, p, n);
          consume(c, 5 + n);
          conn_open(c, copy, n);
          free(copy);
        } else
          conn_destroy(c);
      }
      buf_free(&err);
      return;
    }
    case C_EXEC:
      if (c->exec) exec_input(c);
      else c->in.len = 0; /* after the answer: discarded */
      return;
    case C_FORWARD:
      fwd_from_client(c);
      return;
    case C_CALLS:
      calls_input(c);
      return;
    case C_PTY:
      if (c->pty) pty_input(c);
      else c->in.len = 0; /* after the answer: discarded */
      return;
    default:
      c->in.len = 0; /* after the answer: discarded */
      return;
  }
}

static void conn_readable(struct conn *c) {
  char *chunk = c->bd->chunk;
  for (int rounds = 0; rounds < 4 && !c->dead && c->reading; rounds++) {
    ssize_t n = recv(c->fd, chunk, READ_CHUNK, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return;
    }
    if (n == 0) {
      c->rd_eof = 1;
      break;
    }
    if (c->state == C_OPEN || c->state == C_EXEC || c->state == C_FORWARD || c->state == C_CALLS ||
        c->state == C_PTY) {
      if (c->state == C_EXEC && (!c->exec || c->input_bad)) continue;
      if (c->state == C_PTY && (!c->pty || c->input_bad)) continue;
      if (buf_put(&c->in, chunk, (size_t)n)) {
        conn_destroy(c);
        return;
      }
      /* a frame cannot be longer than this: a decoder error comes first */
      conn_process_input(c);
      if (c->dead) return;
      conn_update(c);
    }
  }
  if (c->dead || !c->rd_eof) return;
  switch (c->state) {
    case C_EXEC:
      /* a client that goes away cancels its command; a queued answer is still sent */
      if (c->exec) exec_event(c->exec, EV_CANCEL);
      if (!c->exec && c->wr_shut) conn_destroy(c);
      else conn_update(c);
      return;
    case C_PTY:
      if (c->pty) pty_cancel(c->pty);
      if (!c->pty && c->wr_shut) conn_destroy(c);
      else conn_update(c);
      return;
    case C_FORWARD:
      fwd_client_eof(c);
      return;
    case C_FORWARD_WAIT:
      conn_update(c);
      return;
    case C_OPEN:
      conn_destroy(c);
      return;
    default:
      if (c->wr_shut || conn_pending(c) == 0) conn_destroy(c);
      else conn_update(c);
      return;
  }
}

void conn_on_event(struct conn *c, uint32_t ev) {
  if (c->dead) return;
  if (ev & EPOLLOUT) conn_flush(c);
  if (c->dead) return;
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (!c->reading && (ev & (EPOLLHUP | EPOLLERR))) {
      conn_destroy(c); /* gone while we were not reading */
      return;
    }
    conn_readable(c);
  }
}

void conn_accept_all(struct boxd *bd) {
  for (;;) {
    int fd = accept4(bd->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        logf_("accept: %s", strerror(errno));
        bd->listen_paused_until = now_ms() + 50;
        ep_set(bd, bd->listen_fd, &bd->listen_w, 0, 0);
      }
      return;
    }
    struct conn *c = xcalloc(1, sizeof *c);
    bd->last_contact = now_ms();
    c->bd = bd;
    c->fd = fd;
    c->t.fd = -1;
    c->w = (struct watch){W_CONN, c};
    c->state = C_OPEN;
    c->next = bd->conns;
    if (bd->conns) bd->conns->prev = c;
    bd->conns = c;
    c->reading = 1;
    c->events = EPOLLIN | EPOLLRDHUP;
    ep_set(bd, fd, &c->w, c->events, 1);
  }
}
