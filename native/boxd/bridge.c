/* Bridges: TCP ports in the box carried to the server (bridge.h). */
#include "bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"

/* An accepted connection waiting for the server's claim. */
struct pending {
  unsigned long id;
  int fd;
  uid_t uid;
  double at;
  struct pending *next;
};

const char *bridge_arg(struct config *cfg, const char *value) {
  const char *eq = strchr(value, '=');
  if (!eq || eq == value || eq - value > 32) return "--bridge wants NAME=PORT (a name of 1 to 32 characters)";
  for (const char *p = value; p < eq; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
      return "--bridge: a name is made of a-z, 0-9, - and _";
  char *end = NULL;
  long port = strtol(eq + 1, &end, 10);
  if (!end || *end || port < 1 || port >= BRIDGE_PORT_LIMIT)
    return "--bridge: the port must be from 1 to 19999 (below the agents' port blocks)";
  if (cfg->nbridges == MAX_BRIDGES) return "--bridge: too many bridges";
  for (int i = 0; i < cfg->nbridges; i++) {
    if (cfg->bridges[i].port == port) return "--bridge: two bridges on one port";
    if (strlen(cfg->bridges[i].name) == (size_t)(eq - value) && !strncmp(cfg->bridges[i].name, value, (size_t)(eq - value)))
      return "--bridge: two bridges of one name";
  }
  struct bridge *b = &cfg->bridges[cfg->nbridges++];
  b->name = strndup(value, (size_t)(eq - value));
  b->port = (int)port;
  b->fd = -1;
  return NULL;
}

int bridges_listen(struct boxd *bd, int *port) {
  for (int i = 0; i < bd->cfg.nbridges; i++) {
    struct bridge *b = &bd->cfg.bridges[i];
    *port = b->port;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 511) != 0) {
      int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    b->fd = fd;
    b->w = (struct watch){W_BRIDGE_LISTEN, b};
    ep_set(bd, fd, &b->w, EPOLLIN, 1);
  }
  return 0;
}

/* The uid owning the socket at local address `peer` connected to `self`, from the box's
   /proc/net/tcp (the reader's network namespace: the box's); -1 when none is found. */
static long peer_uid(const struct sockaddr_in *peer, const struct sockaddr_in *self) {
  FILE *f = fopen("/proc/net/tcp", "re");
  if (!f) return -1;
  char line[512];
  long uid = -1;
  /* the header */
  if (!fgets(line, sizeof line, f)) {
    fclose(f);
    return -1;
  }
  while (fgets(line, sizeof line, f)) {
    unsigned la, lp, ra, rp, st;
    unsigned long u;
    /* sl local rem st tx:rx tr:when retrnsmt uid */
    if (sscanf(line, " %*u: %8X:%4X %8X:%4X %2X %*X:%*X %*X:%*X %*X %lu", &la, &lp, &ra, &rp, &st, &u) != 6)
      continue;
    /* the kernel prints the address as the u32 in memory, in host order */
    if (la == peer->sin_addr.s_addr && lp == ntohs(peer->sin_port) && ra == self->sin_addr.s_addr &&
        rp == ntohs(self->sin_port)) {
      uid = (long)u;
      break;
    }
  }
  fclose(f);
  return uid;
}

static int pending_of(struct boxd *bd, uid_t uid) {
  int n = 0;
  for (struct pending *p = bd->pending; p; p = p->next)
    if (p->uid == uid) n++;
  return n;
}

static void offer(struct boxd *bd, struct bridge *b, int fd) {
  struct sockaddr_in peer, self;
  socklen_t pl = sizeof peer, sl = sizeof self;
  struct conn *s = bd->bridges_conn;
  if (!s || s->dead || s->state != C_BRIDGES || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 ||
      getsockname(fd, (struct sockaddr *)&self, &sl) != 0 || peer.sin_family != AF_INET) {
    close(fd);
    return;
  }
  long uid = peer_uid(&peer, &self);
  if (uid < MIN_AGENT_ID || bd->npending >= BRIDGE_MAX_PENDING ||
      pending_of(bd, (uid_t)uid) >= BRIDGE_MAX_PENDING_PER_UID) {
    /* not an agent's (box root's, or gone already), or too many waiting */
    close(fd);
    return;
  }
  struct pending *p = xcalloc(1, sizeof *p);
  p->id = ++bd->bridge_counter;
  p->fd = fd;
  p->uid = (uid_t)uid;
  p->at = now_ms();
  p->next = bd->pending;
  bd->pending = p;
  bd->npending++;
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"bridge\",\"id\":%lu,\"name\":", p->id);
  json_put_string(&j, b->name, strlen(b->name));
  buf_printf(&j, ",\"uid\":%u}", (unsigned)p->uid);
  conn_send_json(s, &j);
}

void bridges_on_watch(struct boxd *bd, struct watch *w) {
  struct bridge *b = w->owner;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(b->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) logf_("bridge %s accept: %s", b->name, strerror(errno));
      return;
    }
    offer(bd, b, fd);
  }
}

static void drop_pending(struct boxd *bd, struct pending **at) {
  struct pending *p = *at;
  *at = p->next;
  bd->npending--;
  if (p->fd >= 0) close(p->fd);
  free(p);
}

void bridges_attach(struct conn *c) {
  struct boxd *bd = c->bd;
  if (bd->bridges_conn && bd->bridges_conn != c) {
    struct conn *old = bd->bridges_conn;
    bridges_server_gone(bd);
    old->state = C_ENDED;
    conn_end(old);
  }
  c->state = C_BRIDGES;
  bd->bridges_conn = c;
  struct buf j = {0};
  buf_puts(&j, "{\"type\":\"bridges\"}");
  conn_send_json(c, &j);
}

void bridges_server_gone(struct boxd *bd) {
  bd->bridges_conn = NULL;
  while (bd->pending) drop_pending(bd, &bd->pending);
}

void bridge_claim(struct conn *c, unsigned long id) {
  struct boxd *bd = c->bd;
  for (struct pending **at = &bd->pending; *at; at = &(*at)->next) {
    struct pending *p = *at;
    if (p->id != id) continue;
    int fd = p->fd;
    p->fd = -1;
    drop_pending(bd, at);
    fwd_adopt(c, fd);
    return;
  }
  char m[96];
  snprintf(m, sizeof m, "no bridged connection %lu is waiting (it ended, or was not claimed in time)", id);
  conn_fail(c, "forward_refused", m);
}

void bridges_expire(struct boxd *bd, double now) {
  for (struct pending **at = &bd->pending; *at;) {
    if (now - (*at)->at > BRIDGE_CLAIM_MS) drop_pending(bd, at);
    else at = &(*at)->next;
  }
}
