/* A connection forwarded to 127.0.0.1:port in the box: see conn.h. */
#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

static void fwd_update(struct conn *c) {
  if (c->dead) return;
  uint32_t ev = 0;
  if (c->state == C_FORWARD_WAIT) ev = EPOLLOUT;
  else {
    if (!c->t.rd_eof && conn_pending(c) <= HIGH_WATER) ev |= EPOLLIN | EPOLLRDHUP;
    if (c->t.out.len > c->t.out_off) ev |= EPOLLOUT;
  }
  ep_set(c->bd, c->t.fd, &c->t.w, ev, 0);
}

/* Both directions shut both ways: the connection is done. */
static void fwd_check_done(struct conn *c) {
  if (c->dead) return;
  if (c->wr_shut && c->t.wr_shut && c->rd_eof && c->t.rd_eof) conn_destroy(c);
}

void fwd_after_flush(struct conn *c) {
  fwd_update(c);
  fwd_check_done(c);
}

static void fwd_flush_target(struct conn *c) {
  struct target *t = &c->t;
  while (!c->dead && t->out.len > t->out_off) {
    ssize_t n = send(t->fd, t->out.p + t->out_off, t->out.len - t->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return;
    }
    t->out_off += (size_t)n;
  }
  if (c->dead) return;
  if (t->out.len == t->out_off) {
    t->out.len = t->out_off = 0;
    if (t->ending && !t->wr_shut) {
      shutdown(t->fd, SHUT_WR);
      t->wr_shut = 1;
    }
  }
  fwd_update(c);
  conn_update(c);
  fwd_check_done(c);
}

static void refused(struct conn *c, int err) {
  char m[256];
  const char *code = errno_code(err);
  int port = c->t.port;
  if (code) snprintf(m, sizeof m, "127.0.0.1:%d: connect %s 127.0.0.1:%d", port, code, port);
  else snprintf(m, sizeof m, "127.0.0.1:%d: connect %s", port, strerror(err));
  close_fd(c->bd, &c->t.fd, 1);
  conn_fail(c, "forward_refused", m);
}

void fwd_start(struct conn *c, int port) {
  c->t.port = port;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    char m[256];
    snprintf(m, sizeof m, "127.0.0.1:%d: socket: %s", port, strerror(errno));
    conn_fail(c, "forward_refused", m);
    return;
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->t.fd = fd;
  c->t.w = (struct watch){W_TARGET, c};
  c->state = C_FORWARD_WAIT;
  ep_set(c->bd, fd, &c->t.w, EPOLLOUT, 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
    refused(c, errno);
    return;
  }
  conn_update(c);
}

static void fwd_begin(struct conn *c);

static void fwd_connected(struct conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c->t.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    refused(c, err);
    return;
  }
  fwd_begin(c);
}

void fwd_adopt(struct conn *c, int fd) {
  c->t.port = 0;
  c->t.fd = fd;
  c->t.w = (struct watch){W_TARGET, c};
  ep_set(c->bd, fd, &c->t.w, 0, 1);
  fwd_begin(c);
}

/* The target is connected: the answer, then the pipe. */
static void fwd_begin(struct conn *c) {
  c->state = C_FORWARD;
  struct buf j = {0};
  buf_puts(&j, "{\"type\":\"forwarded\"}");
  conn_send_json(c, &j);
  if (c->dead) return;
  /* what the client sent after its open frame is already the stream */
  if (c->in.len) {
    buf_put(&c->t.out, c->in.p, c->in.len);
    c->in.len = 0;
  }
  fwd_flush_target(c);
}

static void fwd_read_target(struct conn *c) {
  char *chunk = c->bd->chunk;
  for (int rounds = 0; rounds < 4 && !c->dead && conn_pending(c) <= HIGH_WATER; rounds++) {
    ssize_t n = recv(c->t.fd, chunk, READ_CHUNK, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return;
    }
    if (n == 0) {
      c->t.rd_eof = 1;
      c->ending = 1; /* the target ended: so does the client's side */
      conn_flush(c);
      break;
    }
    conn_write(c, chunk, (size_t)n);
    conn_flush(c);
  }
  if (c->dead) return;
  fwd_update(c);
  fwd_check_done(c);
}

void fwd_from_client(struct conn *c) {
  buf_put(&c->t.out, c->in.p, c->in.len);
  c->in.len = 0;
  fwd_flush_target(c);
}

void fwd_client_eof(struct conn *c) {
  c->t.ending = 1;
  fwd_flush_target(c);
}

void fwd_on_event(struct conn *c, uint32_t ev) {
  if (c->dead || c->t.fd < 0) return; /* closed earlier in this batch of events */
  if (c->state == C_FORWARD_WAIT) {
    fwd_connected(c);
    return;
  }
  if (ev & EPOLLOUT) fwd_flush_target(c);
  if (!c->dead && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
    if ((ev & EPOLLERR) && !(ev & EPOLLIN)) conn_destroy(c);
    else fwd_read_target(c);
  }
}
