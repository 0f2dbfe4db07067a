/* Agents' calls to the server (calls.h). */
#include "calls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"

struct call {
  struct boxd *bd;
  int fd;
  struct watch w;
  uid_t uid;
  unsigned long id; /* 0 until the request went to the server */
  struct buf in, out;
  size_t out_off;
  int answered; /* the answer is queued: the connection ends once it is written */
  struct call *next, *prev;
};

static int uid_calls(struct boxd *bd, uid_t uid) {
  int n = 0;
  for (struct call *k = bd->calls; k; k = k->next)
    if (k->uid == uid) n++;
  return n;
}

static void call_destroy(struct call *k) {
  struct boxd *bd = k->bd;
  close_fd(bd, &k->fd, 1);
  buf_free(&k->in);
  buf_free(&k->out);
  if (k->prev) k->prev->next = k->next;
  else bd->calls = k->next;
  if (k->next) k->next->prev = k->prev;
  bd->ncalls--;
  bury(bd, k);
  if (bd->calls_paused) {
    bd->calls_paused = 0;
    ep_set(bd, bd->calls_fd, &bd->calls_w, EPOLLIN, 0);
  }
}

/* Writes what is queued; the connection ends once the answer is out. 0 if still alive. */
static int call_flush(struct call *k) {
  while (k->out_off < k->out.len) {
    ssize_t n = send(k->fd, k->out.p + k->out_off, k->out.len - k->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        ep_set(k->bd, k->fd, &k->w, EPOLLOUT, 0);
        return 0;
      }
      call_destroy(k);
      return -1;
    }
    k->out_off += (size_t)n;
  }
  if (k->answered) {
    call_destroy(k);
    return -1;
  }
  return 0;
}

static void put_frame(struct buf *b, int kind, const char *p, size_t n) {
  unsigned char head[5];
  uint32_t len = (uint32_t)n + 1;
  head[0] = (unsigned char)(len >> 24), head[1] = (unsigned char)(len >> 16), head[2] = (unsigned char)(len >> 8);
  head[3] = (unsigned char)len, head[4] = (unsigned char)kind;
  buf_put(b, head, 5);
  if (n) buf_put(b, p, n);
}

/* Queues the answer to the agent: its stdout and stderr text, then {"exit":N}. */
static void call_answer(struct call *k, int code, const char *out, size_t nout, const char *err, size_t nerr) {
  char tail[32];
  int n = snprintf(tail, sizeof tail, "{\"exit\":%d}", code);
  if (nout) put_frame(&k->out, K_STDOUT, out, nout);
  if (nerr) put_frame(&k->out, K_STDERR, err, nerr);
  put_frame(&k->out, K_CONTROL, tail, (size_t)n);
  k->answered = 1;
  call_flush(k);
}

static void call_refuse(struct call *k, const char *message) {
  call_answer(k, CALL_EXIT_UNAVAILABLE, NULL, 0, message, strlen(message));
}

static void call_usage(struct call *k, const char *message) {
  call_answer(k, CALL_EXIT_USAGE, NULL, 0, message, strlen(message));
}

/* A whole request: passed to the server with the uid the kernel gave for the caller. */
static void call_request(struct call *k, const char *p, size_t n) {
  struct boxd *bd = k->bd;
  struct jv *x = json_parse(p, n);
  int is_obj = x && x->t == J_OBJ;
  json_free(x);
  if (!is_obj) {
    call_usage(k, "warren-secret: the request is not a JSON object\n");
    return;
  }
  struct conn *s = bd->calls_conn;
  if (!s || s->dead || s->state != C_CALLS) {
    call_refuse(k, "warren-secret: box.unavailable: the server is not connected to this box; try again\n");
    return;
  }
  k->id = ++bd->call_counter;
  struct buf j = {0};
  /* the request is strict JSON (json_parse checked it): it is embedded as it came */
  buf_printf(&j, "{\"type\":\"call\",\"id\":%lu,\"uid\":%u,\"request\":", k->id, (unsigned)k->uid);
  buf_put(&j, p, n);
  buf_puts(&j, "}");
  conn_send_json(s, &j);
  /* nothing more is read: only a hang-up (which drops the call) is watched */
  ep_set(bd, k->fd, &k->w, EPOLLRDHUP, 0);
}

static void call_readable(struct call *k) {
  char chunk[4096];
  for (;;) {
    ssize_t n = recv(k->fd, chunk, sizeof chunk, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      call_destroy(k);
      return;
    }
    if (n == 0) {
      call_destroy(k);
      return;
    }
    if (buf_put(&k->in, chunk, (size_t)n)) {
      call_destroy(k);
      return;
    }
    if (k->in.len < 5) continue;
    const unsigned char *h = (const unsigned char *)k->in.p;
    uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (len < 1 || len > CALL_MAX_REQUEST || h[4] != K_CONTROL) {
      call_usage(k, "warren-secret: a request is one control frame of at most 64 KiB\n");
      return;
    }
    if (k->in.len < 4 + (size_t)len) continue;
    call_request(k, k->in.p + 5, len - 1);
    return;
  }
}

static void call_on_event(struct call *k, uint32_t ev) {
  if (ev & EPOLLOUT) {
    if (call_flush(k)) return;
  }
  if (k->answered) return;
  if (k->id) {
    if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) call_destroy(k); /* the caller went away */
    return;
  }
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) call_readable(k);
}

static void calls_accept(struct boxd *bd) {
  for (;;) {
    int fd = accept4(bd->calls_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        logf_("calls accept: %s", strerror(errno));
        if (bd->calls) {
          /* listening again once a call ends */
          bd->calls_paused = 1;
          ep_set(bd, bd->calls_fd, &bd->calls_w, 0, 0);
        }
      }
      return;
    }
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
      close(fd);
      continue;
    }
    struct call *k = xcalloc(1, sizeof *k);
    k->bd = bd;
    k->fd = fd;
    k->uid = cred.uid;
    k->w = (struct watch){W_CALL, k};
    int over = bd->ncalls >= CALL_MAX_OPEN || uid_calls(bd, cred.uid) >= CALL_MAX_PER_UID;
    k->next = bd->calls;
    if (bd->calls) bd->calls->prev = k;
    bd->calls = k;
    bd->ncalls++;
    ep_set(bd, fd, &k->w, EPOLLIN | EPOLLRDHUP, 1);
    if (over) call_refuse(k, "warren-secret: busy: too many calls at once; try again\n");
  }
}

void calls_on_watch(struct boxd *bd, struct watch *w, uint32_t ev) {
  if (w->kind == W_CALLS_LISTEN) calls_accept(bd);
  else call_on_event(w->owner, ev);
}

int calls_listen(struct boxd *bd) {
  const char *path = bd->cfg.calls_socket;
  bd->calls_fd = -1;
  bd->calls_w = (struct watch){W_CALLS_LISTEN, NULL};
  if (!path) return 0;
  int fd = listen_unix(path, 0666, 128);
  if (fd < 0) return -1;
  bd->calls_fd = fd;
  ep_set(bd, fd, &bd->calls_w, EPOLLIN, 1);
  return 0;
}

void calls_attach(struct conn *c) {
  struct boxd *bd = c->bd;
  if (bd->calls_conn && bd->calls_conn != c) {
    struct conn *old = bd->calls_conn;
    calls_server_gone(bd);
    old->state = C_ENDED;
    conn_end(old);
  }
  c->state = C_CALLS;
  bd->calls_conn = c;
  struct buf j = {0};
  buf_puts(&j, "{\"type\":\"calls\"}");
  conn_send_json(c, &j);
}

void calls_server_gone(struct boxd *bd) {
  bd->calls_conn = NULL;
  for (struct call *k = bd->calls, *next; k; k = next) {
    next = k->next;
    if (k->id && !k->answered) call_refuse(k, "warren-secret: box.unavailable: the server went away; try again\n");
  }
}

int calls_reply(struct boxd *bd, const char *p, size_t n) {
  struct jv *x = json_parse(p, n);
  const struct jv *id = json_get(x, "id"), *code = json_get(x, "exit");
  const struct jv *out = json_get(x, "stdout"), *err = json_get(x, "stderr");
  int ok = x && json_is_str(json_get(x, "type"), "reply") && id && id->t == J_NUM && code && code->t == J_NUM &&
           code->n >= 0 && code->n <= 255 && (!out || out->t == J_STR) && (!err || err->t == J_STR);
  if (ok) {
    for (struct call *k = bd->calls; k; k = k->next) {
      if (k->id && (double)k->id == id->n && !k->answered) {
        call_answer(k, (int)code->n, out ? out->s : NULL, out ? out->len : 0, err ? err->s : NULL, err ? err->len : 0);
        break;
      }
    }
    /* a reply to a caller that went away is dropped */
  }
  json_free(x);
  return ok ? 0 : -1;
}
