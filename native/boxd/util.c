/* Small things every part of boxd uses: see boxd.h. */
#include "boxd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void logf_(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  dprintf(2, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ boxd: %s\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
          tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, msg);
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    logf_("out of memory");
    _exit(1);
  }
  return p;
}

void ep_set(struct boxd *bd, int fd, struct watch *w, uint32_t events, int add) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  if (epoll_ctl(bd->ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0 && add)
    logf_("epoll_ctl add fd %d: %s", fd, strerror(errno));
}

void close_fd(struct boxd *bd, int *fd, int watched) {
  if (*fd < 0) return;
  if (watched) epoll_ctl(bd->ep, EPOLL_CTL_DEL, *fd, NULL);
  close(*fd);
  *fd = -1;
}

int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

ssize_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  while (len < cap - 1) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t n = strlen(text);
  ssize_t w = write(fd, text, n);
  int err = errno;
  close(fd);
  if (w != (ssize_t)n) {
    errno = w < 0 ? err : EIO;
    return -1;
  }
  return 0;
}

void bury(struct boxd *bd, void *p) {
  if (bd->ngrave == GRAVEYARD) {
    /* cannot happen with 64 events per batch; freeing early is then the lesser harm */
    logf_("graveyard overflow");
    bury_flush(bd);
  }
  bd->graveyard[bd->ngrave++] = p;
}

void bury_flush(struct boxd *bd) {
  for (size_t i = 0; i < bd->ngrave; i++) free(bd->graveyard[i]);
  bd->ngrave = 0;
}

void names_add(struct names *l, const char *name) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **v = realloc(l->v, cap * sizeof *v);
    if (!v) return;
    l->v = v;
    l->cap = cap;
  }
  char *copy = strdup(name);
  if (copy) l->v[l->n++] = copy;
}

int names_has(const struct names *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], name)) return 1;
  return 0;
}

void names_drop(struct names *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], name)) {
      free(l->v[i]);
      l->v[i] = l->v[--l->n];
      return;
    }
}

void names_clear(struct names *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

const char *signal_name(int sig) {
  static const char *const names[] = {
      [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",       [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
      [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",     [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
      [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1",     [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
      [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",     [SIGTERM] = "SIGTERM", [SIGSTKFLT] = "SIGSTKFLT",
      [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",     [SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP",
      [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",     [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",
      [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
      [SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",       [SIGSYS] = "SIGSYS",
  };
  if (sig > 0 && sig < (int)(sizeof names / sizeof names[0]) && names[sig]) return names[sig];
  return NULL;
}

const char *errno_code(int err) {
  switch (err) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ECONNRESET: return "ECONNRESET";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    default: return NULL;
  }
}

int listen_unix(const char *path, mode_t mode, int backlog) {
  unlink(path);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, mode) != 0 || listen(fd, backlog) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}
