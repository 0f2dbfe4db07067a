/*
 * boxd in C: the daemon inside every box, speaking the protocol of src/boxd/protocol.ts
 * (see docs/boxes.md), in one thread with an epoll loop. It runs as box root with a few
 * capabilities, listens on one unix socket, and runs agents' commands through
 * boxd-spawn, each in a cgroup of its own so that a timeout or a cancel kills the whole
 * process tree.
 *
 * Arguments (see bwrapArgv in src/boxes/local/bwrap.ts):
 *   --socket PATH --spawn PATH --seccomp PATH --cgroup-version 1|2
 *   --cgroup NAME=DIR (repeat) --ready-fd N
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

#define PROTOCOL_VERSION 1
#define MAX_FRAME_BYTES (1024 * 1024)
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
#define READ_CHUNK (64 * 1024)
#define DRAIN_LIMIT (4 * 1024 * 1024)
#define MAX_FILE_RULES 128

/* ---- small things ----------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
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

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    logf_("out of memory");
    _exit(1);
  }
  return p;
}

static const char *signal_name(int sig) {
  static const char *names[] = {
      [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",     [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
      [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",   [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
      [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1",   [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
      [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",   [SIGTERM] = "SIGTERM", [SIGSTKFLT] = "SIGSTKFLT",
      [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",   [SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP",
      [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",   [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",
      [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
      [SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",     [SIGSYS] = "SIGSYS",
  };
  if (sig > 0 && sig < (int)(sizeof names / sizeof names[0]) && names[sig]) return names[sig];
  return NULL;
}

static const char *errno_code(int err) {
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

/* ---- configuration ---------------------------------------------------------------- */

struct cgroot {
  char *name, *dir;
};

static struct {
  const char *socket, *spawn_helper, *seccomp;
  int version;
  struct cgroot roots[MAX_CGROUPS];
  int nroots;
  int ready_fd;
} cfg = {.version = 1, .ready_fd = -1};

static void usage_die(const char *fmt, const char *arg) {
  dprintf(2, "boxd: ");
  dprintf(2, fmt, arg);
  dprintf(2, "\n");
  exit(1);
}

static void parse_args(int argc, char **argv) {
  for (int i = 1; i < argc; i += 2) {
    const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!value) usage_die("%s needs a value", key);
    if (!strcmp(key, "--socket")) cfg.socket = value;
    else if (!strcmp(key, "--spawn")) cfg.spawn_helper = value;
    else if (!strcmp(key, "--seccomp")) cfg.seccomp = value;
    else if (!strcmp(key, "--cgroup-version")) cfg.version = !strcmp(value, "2") ? 2 : 1;
    else if (!strcmp(key, "--cgroup")) {
      const char *eq = strchr(value, '=');
      if (!eq || eq == value) usage_die("--cgroup wants NAME=DIR, got %s", value);
      if (cfg.nroots == MAX_CGROUPS) usage_die("too many --cgroup options (%s)", value);
      cfg.roots[cfg.nroots].name = strndup(value, (size_t)(eq - value));
      cfg.roots[cfg.nroots].dir = strdup(eq + 1);
      cfg.nroots++;
    } else if (!strcmp(key, "--ready-fd")) cfg.ready_fd = atoi(value);
    else usage_die("unknown argument %s", key);
  }
  if (!cfg.socket || !cfg.spawn_helper || !cfg.seccomp) usage_die("%s", "--socket, --spawn and --seccomp are required");
}

/* ---- per-exec cgroups ------------------------------------------------------------- */

static int has_controller(const struct cgroot *root, const char *controller) {
  if (cfg.version == 2) return 1;
  size_t n = strlen(controller);
  for (const char *p = root->name; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && !memcmp(p, controller, n)) return 1;
    if (!c) break;
    p = c + 1;
  }
  return 0;
}

static int write_text(const char *path, const char *text) {
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

/* Reads a small file into buf (NUL-terminated); bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
    if (len == cap - 1) break;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

/* The pids in the exec's cgroup (union over hierarchies); count, pids in *out (malloc'd). */
static size_t cg_procs(const char *name, pid_t **out) {
  size_t n = 0, cap = 0;
  pid_t *pids = NULL;
  for (int r = 0; r < cfg.nroots; r++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/cgroup.procs", cfg.roots[r].dir, name);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
      if (v <= 0) continue;
      size_t i;
      for (i = 0; i < n; i++)
        if (pids[i] == (pid_t)v) break;
      if (i < n) continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        pid_t *p = realloc(pids, cap * sizeof *p);
        if (!p) break;
        pids = p;
      }
      pids[n++] = (pid_t)v;
    }
    fclose(f);
  }
  if (out) *out = pids;
  else free(pids);
  return n;
}

static void cg_remove_dirs(const char *name) {
  for (int r = 0; r < cfg.nroots; r++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cfg.roots[r].dir, name);
    rmdir(path);
  }
}

/* Removes the exec's cgroup if it is empty. */
static void cg_remove(const char *name) {
  if (cg_procs(name, NULL) > 0) return;
  cg_remove_dirs(name);
}

static int cg_limit(const char *name, int has_mem, long mem_mib, int has_pids, long pids, struct buf *err) {
  for (int r = 0; r < cfg.nroots; r++) {
    char path[4096], value[32];
    if (has_mem && has_controller(&cfg.roots[r], "memory")) {
      snprintf(path, sizeof path, "%s/%s/%s", cfg.roots[r].dir, name, cfg.version == 2 ? "memory.max" : "memory.limit_in_bytes");
      snprintf(value, sizeof value, "%lld", (long long)mem_mib * 1024 * 1024);
      if (write_text(path, value)) {
        buf_printf(err, "%s: write %s", strerror(errno), path);
        return -1;
      }
    }
    if (has_pids && has_controller(&cfg.roots[r], "pids")) {
      snprintf(path, sizeof path, "%s/%s/pids.max", cfg.roots[r].dir, name);
      snprintf(value, sizeof value, "%ld", pids);
      if (write_text(path, value)) {
        buf_printf(err, "%s: write %s", strerror(errno), path);
        return -1;
      }
    }
  }
  return 0;
}

struct usage {
  int has_cpu, has_peak;
  double cpu, peak;
};

static void cg_usage(const char *name, struct usage *u) {
  memset(u, 0, sizeof *u);
  for (int r = 0; r < cfg.nroots; r++) {
    const struct cgroot *root = &cfg.roots[r];
    char path[4096], text[4096];
    if (cfg.version == 1) {
      if (has_controller(root, "cpuacct")) {
        snprintf(path, sizeof path, "%s/%s/cpuacct.usage", root->dir, name);
        if (read_small(path, text, sizeof text) < 0) continue;
        u->cpu = strtod(text, NULL) / 1e9, u->has_cpu = 1;
      }
      if (has_controller(root, "memory")) {
        snprintf(path, sizeof path, "%s/%s/memory.max_usage_in_bytes", root->dir, name);
        if (read_small(path, text, sizeof text) < 0) continue;
        u->peak = strtod(text, NULL), u->has_peak = 1;
      }
    } else {
      snprintf(path, sizeof path, "%s/%s/cpu.stat", root->dir, name);
      if (read_small(path, text, sizeof text) < 0) continue;
      char *line = strstr(text, "usage_usec ");
      if (line && (line == text || line[-1] == '\n')) u->cpu = strtod(line + 11, NULL) / 1e6, u->has_cpu = 1;
      snprintf(path, sizeof path, "%s/%s/memory.peak", root->dir, name);
      if (read_small(path, text, sizeof text) < 0) continue;
      u->peak = strtod(text, NULL), u->has_peak = 1;
    }
  }
}

/* ---- objects in the loop ---------------------------------------------------------- */

enum wkind { W_LISTEN, W_SIGNAL, W_CONN, W_TARGET, W_OUT, W_ERR, W_IN, W_SPEC };

struct watch {
  enum wkind kind;
  void *owner;
};

struct helper {
  char name[64];
  pid_t pid;
  int in, out, err, spec; /* our ends of its pipes (-1 when closed) */
  int exited, code, sig;
  struct exec *exec; /* the exec that took it */
  struct helper *next;
};

enum cstate { C_OPEN, C_PING, C_EXEC, C_FORWARD_WAIT, C_FORWARD, C_ENDED };

struct conn {
  int fd;
  struct watch w;
  enum cstate state;
  struct buf in;   /* bytes not yet decoded */
  struct buf out;  /* bytes not yet written */
  size_t out_off;
  int ending;      /* shut the write side once out is flushed */
  int wr_shut;
  int rd_eof;
  int dead;        /* fd closed */
  int reading;     /* EPOLLIN wanted */
  int freed;
  struct exec *exec;
  /* forward */
  int target;
  struct watch tw;
  struct buf tout; /* bytes for the target */
  size_t tout_off;
  int t_ending, t_wr_shut, t_rd_eof;
  int port;
  struct conn *next, *prev;
};

struct exec {
  struct conn *conn;
  struct helper *h;
  char name[64];
  double begun;
  int generation;
  int exited, code, sig;
  int timed_out, cancelled, finished, answered;
  int open_pipes;
  double timeout_at, grace_at;
  int killing, kill_done;
  double kill_deadline, kill_next;
  struct watch wout, werr, win, wspec;
  struct buf stdin_q;
  size_t stdin_off;
  int stdin_eof;
  struct buf spec_q;
  size_t spec_off;
  int paused;
  int input_bad;
  int gone;
  struct exec *next, *prev;
};

static int ep;
static double started_at;
static unsigned long counter;
static struct helper *prepared;
static struct helper *helpers; /* every helper not yet reaped */
static struct exec *execs;
static int active_count;
static struct conn *conns;
static char **generations;
static size_t ngenerations, capgenerations;
static char **pending_removals;
static size_t npending, cappending;
static int want_prepare;
static int listen_fd;
static struct watch listen_w = {W_LISTEN, NULL}, signal_w = {W_SIGNAL, NULL};
static double listen_paused_until;

static void ep_set(int fd, struct watch *w, uint32_t events, int add) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  if (epoll_ctl(ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0 && add)
    logf_("epoll_ctl add fd %d: %s", fd, strerror(errno));
}

static void ep_del(int fd) { epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL); }

static void close_fd(int *fd, int watched) {
  if (*fd < 0) return;
  if (watched) ep_del(*fd);
  close(*fd);
  *fd = -1;
}

static void add_name(char ***list, size_t *n, size_t *cap, const char *name) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    char **p = realloc(*list, *cap * sizeof *p);
    if (!p) return;
    *list = p;
  }
  (*list)[(*n)++] = strdup(name);
}

static int is_generation(const char *name) {
  for (size_t i = 0; i < ngenerations; i++)
    if (!strcmp(generations[i], name)) return 1;
  return 0;
}

static void drop_generation(const char *name) {
  for (size_t i = 0; i < ngenerations; i++)
    if (!strcmp(generations[i], name)) {
      free(generations[i]);
      generations[i] = generations[--ngenerations];
      return;
    }
}

/* Commands not yet answered (the list holds exactly those). */
static int is_active(const char *name) {
  for (struct exec *e = execs; e; e = e->next)
    if (!strcmp(e->name, name)) return 1;
  return 0;
}

/* ---- connections: output ---------------------------------------------------------- */

static void conn_update(struct conn *c);
static void fwd_update(struct conn *c);
static void fwd_check_done(struct conn *c);
static void conn_maybe_free(struct conn *c);
static void exec_on_conn_gone(struct exec *e);

static void conn_destroy(struct conn *c) {
  if (c->dead) return;
  c->dead = 1;
  close_fd(&c->fd, 1);
  close_fd(&c->target, 1);
  buf_free(&c->in);
  buf_free(&c->out);
  buf_free(&c->tout);
  if (c->exec) exec_on_conn_gone(c->exec);
  conn_maybe_free(c);
}

/* Freed at the end of the loop's iteration: events of this batch may still name it. */
static void *graveyard[1024];
static size_t ngrave;
static void bury(void *p) {
  if (ngrave == sizeof graveyard / sizeof graveyard[0]) {
    for (size_t i = 0; i < ngrave; i++) free(graveyard[i]);
    ngrave = 0;
    logf_("graveyard overflow");
  }
  graveyard[ngrave++] = p;
}

static void conn_maybe_free(struct conn *c) {
  if (!c->dead || c->exec || c->freed) return;
  c->freed = 1;
  if (c->prev) c->prev->next = c->next;
  else conns = c->next;
  if (c->next) c->next->prev = c->prev;
  bury(c);
}

static size_t conn_pending(const struct conn *c) { return c->out.len - c->out_off; }

static void exec_resume_output(struct exec *e);

/* Writes what it can; destroys the connection on an error. 0 if still alive. */
static int conn_flush(struct conn *c) {
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
    if (c->exec && c->exec->paused) exec_resume_output(c->exec);
  }
  conn_update(c);
  if (c->state == C_FORWARD) {
    fwd_update(c);
    fwd_check_done(c);
    if (c->dead) return -1;
  }
  return 0;
}

static void conn_write(struct conn *c, const void *data, size_t n) {
  if (c->dead || c->ending) return;
  if (buf_put(&c->out, data, n)) {
    conn_destroy(c);
    return;
  }
}

static void conn_frame(struct conn *c, int kind, const void *payload, size_t n) {
  unsigned char head[5];
  uint32_t len = (uint32_t)n + 1;
  head[0] = (unsigned char)(len >> 24), head[1] = (unsigned char)(len >> 16), head[2] = (unsigned char)(len >> 8);
  head[3] = (unsigned char)len, head[4] = (unsigned char)kind;
  conn_write(c, head, 5);
  conn_write(c, payload, n);
}

static void conn_send_json(struct conn *c, struct buf *json) {
  conn_frame(c, K_CONTROL, json->p, json->len);
  buf_free(json);
  conn_flush(c);
}

static void conn_end(struct conn *c) {
  if (c->dead) return;
  c->ending = 1;
  conn_flush(c);
}

static void conn_fail(struct conn *c, const char *code, const char *message) {
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"error\",\"code\":\"%s\",\"message\":", code);
  json_put_string(&j, message, strlen(message));
  buf_puts(&j, "}");
  conn_send_json(c, &j);
  conn_end(c);
}

/* ---- helpers ---------------------------------------------------------------------- */

static void helper_close(struct helper *h) {
  close_fd(&h->in, 1);
  close_fd(&h->out, 1);
  close_fd(&h->err, 1);
  close_fd(&h->spec, 1);
}

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Starts a helper in a new exec cgroup; it waits on fd 3 for its command. */
static struct helper *spawn_helper(struct buf *err) {
  struct helper *h = xcalloc(1, sizeof *h);
  h->in = h->out = h->err = h->spec = -1;
  /* name: x<n>-<ms since the epoch in base 36> */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long ms = (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000ULL;
  char b36[24];
  int k = 0;
  do {
    b36[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[ms % 36];
    ms /= 36;
  } while (ms);
  int at = snprintf(h->name, sizeof h->name, "x%lu-", ++counter);
  while (k > 0 && at < (int)sizeof h->name - 1) h->name[at++] = b36[--k];
  h->name[at] = '\0';

  char dirs[MAX_CGROUPS][4096];
  for (int r = 0; r < cfg.nroots; r++) {
    snprintf(dirs[r], sizeof dirs[r], "%s/%s", cfg.roots[r].dir, h->name);
    if (mkdir(dirs[r], 0777) != 0) {
      buf_printf(err, "%s, mkdir '%s'", strerror(errno), dirs[r]);
      cg_remove(h->name);
      free(h);
      return NULL;
    }
  }
  int p_in[2] = {-1, -1}, p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_spec[2] = {-1, -1};
  if (pipe2(p_in, O_CLOEXEC) || pipe2(p_out, O_CLOEXEC) || pipe2(p_err, O_CLOEXEC) || pipe2(p_spec, O_CLOEXEC)) {
    buf_printf(err, "pipe: %s", strerror(errno));
    goto fail;
  }
  const char *argv[2 * MAX_CGROUPS + 4];
  int n = 0;
  argv[n++] = "boxd-spawn";
  for (int r = 0; r < cfg.nroots; r++) argv[n++] = "--cgroup", argv[n++] = dirs[r];
  argv[n++] = "--spec-fd";
  argv[n++] = "3";
  argv[n] = NULL;
  char *envp[] = {NULL};
  pid_t pid = fork();
  if (pid < 0) {
    buf_printf(err, "fork: %s", strerror(errno));
    goto fail;
  }
  if (pid == 0) {
    /* child: the pipe ends above 9 first, so no dup2 clobbers another */
    int src[4] = {p_in[0], p_out[1], p_err[1], p_spec[0]};
    for (int i = 0; i < 4; i++) src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
    for (int i = 0; i < 4; i++)
      if (src[i] < 0 || dup2(src[i], i) < 0) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(cfg.spawn_helper, (char *const *)argv, envp);
    _exit(126);
  }
  close(p_in[0]), close(p_out[1]), close(p_err[1]), close(p_spec[0]);
  h->in = p_in[1], h->out = p_out[0], h->err = p_err[0], h->spec = p_spec[1];
  set_nonblock(h->in), set_nonblock(h->out), set_nonblock(h->err), set_nonblock(h->spec);
  h->pid = pid;
  h->next = helpers;
  helpers = h;
  return h;
fail:
  for (int i = 0; i < 2; i++) {
    if (p_in[i] >= 0) close(p_in[i]);
    if (p_out[i] >= 0) close(p_out[i]);
    if (p_err[i] >= 0) close(p_err[i]);
    if (p_spec[i] >= 0) close(p_spec[i]);
  }
  cg_remove(h->name);
  free(h);
  return NULL;
}

static void prepare(void) {
  if (prepared) return;
  struct buf err = {0};
  prepared = spawn_helper(&err);
  if (!prepared) logf_("cannot prepare a helper: %s", err.p ? err.p : "?");
  buf_free(&err);
}

static struct helper *take_prepared(void) {
  struct helper *h = prepared;
  prepared = NULL;
  if (!h) return NULL;
  if (h->exited) {
    helper_close(h);
    cg_remove(h->name);
    return NULL;
  }
  return h;
}

static void unlink_helper(struct helper *h) {
  for (struct helper **p = &helpers; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      return;
    }
}

/* ---- ping ------------------------------------------------------------------------- */

static long status_kb(const char *text, const char *field) {
  const char *p = strstr(text, field);
  while (p && p != text && p[-1] != '\n') p = strstr(p + 1, field);
  if (!p) return 0;
  return strtol(p + strlen(field), NULL, 10);
}

/* The exec cgroups present: names in the first hierarchy starting with x. */
static size_t cg_names(char ***out) {
  *out = NULL;
  if (cfg.nroots == 0) return 0;
  DIR *d = opendir(cfg.roots[0].dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] != 'x') continue;
    if (de->d_type != DT_DIR) {
      if (de->d_type != DT_UNKNOWN) continue;
      struct stat st;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", cfg.roots[0].dir, de->d_name);
      if (stat(path, &st) || !S_ISDIR(st.st_mode)) continue;
    }
    add_name(out, &n, &cap, de->d_name);
  }
  closedir(d);
  return n;
}

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static void do_ping(struct conn *c) {
  char text[8192];
  long rss = 0, anon = 0, pss = 0;
  if (read_small("/proc/self/status", text, sizeof text) > 0) {
    rss = status_kb(text, "VmRSS:") * 1024;
    anon = status_kb(text, "RssAnon:") * 1024;
  }
  if (read_small("/proc/self/smaps_rollup", text, sizeof text) > 0) pss = status_kb(text, "Pss:") * 1024;
  long processes = 0, gen = 0;
  char **names;
  size_t n = cg_names(&names);
  for (size_t i = 0; i < n; i++) {
    if (prepared && !strcmp(names[i], prepared->name)) continue;
    long k = (long)cg_procs(names[i], NULL);
    processes += k;
    if (is_generation(names[i])) {
      gen += k;
      if (k == 0 && !is_active(names[i])) drop_generation(names[i]);
    }
  }
  free_names(names, n);
  struct buf j = {0};
  buf_printf(&j,
             "{\"type\":\"pong\",\"pid\":%d,\"rssBytes\":%ld,\"anonBytes\":%ld,\"pssBytes\":%ld,\"uptimeMs\":%lld,"
             "\"execs\":%d,\"processes\":%ld,\"generationProcesses\":%ld}",
             getpid(), rss, anon, pss, (long long)(now_ms() - started_at), active_count, processes, gen);
  conn_send_json(c, &j);
  conn_end(c);
}

/* ---- request validation (protocol.ts) --------------------------------------------- */

struct spec {
  char **argv;
  size_t *argvlen;
  size_t argc;
  char **envk, **envv;
  size_t *envklen, *envvlen;
  size_t nenv;
  const char *cwd;
  size_t cwdlen;
  long uid, gid;
  long groups[32];
  size_t ngroups;
  long timeout_ms;
  const char *agent_dir;
  size_t agent_dir_len;
  int generation;
  int has_mem, has_pids;
  long mem_mib, pids;
  /* files: the paths the command may read, and read and write (Landlock); absent = not restricted */
  int has_files;
  const struct jv *fs_read, *fs_write;
  long port_first, port_last; /* bindPorts; 0 = not restricted */
};

static void spec_free(struct spec *s) {
  free(s->argv), free(s->argvlen), free(s->envk), free(s->envv), free(s->envklen), free(s->envvlen);
  memset(s, 0, sizeof *s);
}

/* The error of a request: a message, and whether it is a TypeError (not a ProtocolError). */
struct perr {
  struct buf msg;
  int type_error;
};

static int perr_set(struct perr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr_set(struct perr *e, const char *fmt, ...) {
  char m[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  buf_puts(&e->msg, m);
  return -1;
}

static int is_int(const struct jv *x, double min, double max) {
  return x && x->t == J_NUM && x->n == x->n && x->n >= min && x->n <= max && x->n == (double)(long long)x->n;
}

static int v_int(const struct jv *x, const char *what, double min, double max, long *out, struct perr *e) {
  if (!is_int(x, min, max)) return perr_set(e, "%s must be an integer from %.0f to %.0f", what, min, max);
  *out = (long)x->n;
  return 0;
}

/* what is a prefix and a suffix (the suffix may hold any bytes, e.g. an env name). */
static int v_str(const struct jv *x, const char *what, const char *suffix, size_t suflen, struct perr *e) {
  if (!x || x->t != J_STR || memchr(x->s, 0, x->len)) {
    buf_puts(&e->msg, what);
    buf_put(&e->msg, suffix, suflen);
    buf_puts(&e->msg, " must be a string without NUL");
    return -1;
  }
  return 0;
}

static int v_abs(const struct jv *x, const char *what, struct perr *e) {
  if (v_str(x, what, "", 0, e)) return -1;
  int bad = x->len == 0 || x->s[0] != '/';
  for (size_t i = 0; !bad && i < x->len; i++) {
    /* a ".." component */
    if ((i == 0 || x->s[i - 1] == '/') && i + 1 < x->len && x->s[i] == '.' && x->s[i + 1] == '.' &&
        (i + 2 == x->len || x->s[i + 2] == '/'))
      bad = 1;
  }
  if (bad) return perr_set(e, "%s must be an absolute path without ..", what);
  return 0;
}

static int parse_exec_spec(const struct jv *x, struct spec *s, struct perr *e) {
  memset(s, 0, sizeof *s);
  if (!x || x->t != J_OBJ) return perr_set(e, "exec must be an object");
  const struct jv *argv = json_get(x, "argv");
  if (!argv || argv->t != J_ARR || argv->count == 0) return perr_set(e, "exec.argv must be a non-empty array");
  s->argc = argv->count;
  s->argv = xcalloc(s->argc, sizeof *s->argv);
  s->argvlen = xcalloc(s->argc, sizeof *s->argvlen);
  for (size_t i = 0; i < argv->count; i++) {
    char what[64];
    snprintf(what, sizeof what, "exec.argv[%zu]", i);
    if (v_str(argv->items[i], what, "", 0, e)) return -1;
    s->argv[i] = argv->items[i]->s, s->argvlen[i] = argv->items[i]->len;
  }
  const struct jv *env = json_get(x, "env");
  if (!env || env->t != J_OBJ) return perr_set(e, "exec.env must be an object");
  s->nenv = env->count;
  s->envk = xcalloc(s->nenv + 1, sizeof *s->envk);
  s->envv = xcalloc(s->nenv + 1, sizeof *s->envv);
  s->envklen = xcalloc(s->nenv + 1, sizeof *s->envklen);
  s->envvlen = xcalloc(s->nenv + 1, sizeof *s->envvlen);
  for (size_t i = 0; i < env->count; i++) {
    const char *k = env->keys[i];
    size_t kl = env->klens[i];
    if (kl == 0 || memchr(k, '=', kl) || memchr(k, 0, kl)) {
      buf_puts(&e->msg, "exec.env has a bad name ");
      json_put_string(&e->msg, k, kl);
      return -1;
    }
    if (v_str(env->items[i], "exec.env.", k, kl, e)) return -1;
    s->envk[i] = env->keys[i], s->envklen[i] = kl;
    s->envv[i] = env->items[i]->s, s->envvlen[i] = env->items[i]->len;
  }
  const struct jv *groups = json_get(x, "groups");
  if (groups && (groups->t != J_ARR || groups->count > 32))
    return perr_set(e, "exec.groups must be an array of at most 32 ids");
  const struct jv *cwd = json_get(x, "cwd");
  if (v_abs(cwd, "exec.cwd", e)) return -1;
  s->cwd = cwd->s, s->cwdlen = cwd->len;
  if (v_int(json_get(x, "uid"), "exec.uid", MIN_AGENT_ID, MAX_ID, &s->uid, e)) return -1;
  if (v_int(json_get(x, "gid"), "exec.gid", MIN_AGENT_ID, MAX_ID, &s->gid, e)) return -1;
  for (size_t i = 0; groups && i < groups->count; i++) {
    char what[64];
    snprintf(what, sizeof what, "exec.groups[%zu]", i);
    if (v_int(groups->items[i], what, MIN_AGENT_ID, MAX_ID, &s->groups[i], e)) return -1;
    s->ngroups = i + 1;
  }
  const struct jv *timeout = json_get(x, "timeoutMs");
  if (timeout && timeout->t == J_NULL) timeout = NULL; /* ?? 0 */
  if (!timeout) s->timeout_ms = 0;
  else if (v_int(timeout, "exec.timeoutMs", 0, 7.0 * 24 * 3600 * 1000, &s->timeout_ms, e)) return -1;
  const struct jv *agent = json_get(x, "agentDir");
  if (agent) {
    if (v_abs(agent, "exec.agentDir", e)) return -1;
    s->agent_dir = agent->s, s->agent_dir_len = agent->len;
  }
  const struct jv *files = json_get(x, "files");
  if (files) {
    if (files->t != J_OBJ) return perr_set(e, "exec.files must be an object");
    const char *names[2] = {"read", "write"};
    for (int k = 0; k < 2; k++) {
      const struct jv *list = json_get(files, names[k]);
      if (!list || list->t != J_ARR || list->count > MAX_FILE_RULES)
        return perr_set(e, "exec.files.%s must be an array of at most %d paths", names[k], MAX_FILE_RULES);
      for (size_t i = 0; i < list->count; i++) {
        char what[64];
        snprintf(what, sizeof what, "exec.files.%s[%zu]", names[k], i);
        if (v_abs(list->items[i], what, e)) return -1;
      }
      if (k == 0) s->fs_read = list;
      else s->fs_write = list;
    }
    s->has_files = 1;
  }
  const struct jv *ports = json_get(x, "bindPorts");
  if (ports) {
    if (ports->t != J_OBJ) return perr_set(e, "exec.bindPorts must be an object");
    if (v_int(json_get(ports, "first"), "exec.bindPorts.first", 1, 65535, &s->port_first, e)) return -1;
    if (v_int(json_get(ports, "last"), "exec.bindPorts.last", s->port_first, s->port_first + 999 > 65535 ? 65535 : s->port_first + 999, &s->port_last, e))
      return -1;
  }
  const struct jv *gen = json_get(x, "generation");
  if (gen) {
    if (gen->t != J_BOOL) return perr_set(e, "exec.generation must be a boolean");
    s->generation = gen->b;
  }
  const struct jv *limits = json_get(x, "limits");
  if (limits) {
    if (limits->t != J_OBJ) return perr_set(e, "exec.limits must be an object");
    const struct jv *m = json_get(limits, "memoryMib"), *p = json_get(limits, "pids");
    if (m) {
      if (v_int(m, "exec.limits.memoryMib", 4, 1 << 24, &s->mem_mib, e)) return -1;
      s->has_mem = 1;
    }
    if (p) {
      if (v_int(p, "exec.limits.pids", 1, 1 << 22, &s->pids, e)) return -1;
      s->has_pids = 1;
    }
  }
  return 0;
}

/* ---- exec ------------------------------------------------------------------------- */

static void exec_finish(struct exec *e);
static void exec_complete(struct exec *e);

static void exec_unlink_free(struct exec *e) {
  if (e->prev) e->prev->next = e->next;
  else execs = e->next;
  if (e->next) e->next->prev = e->prev;
  buf_free(&e->stdin_q);
  buf_free(&e->spec_q);
  e->gone = 1;
  bury(e);
}

static void pipes_interest(struct exec *e) {
  struct helper *h = e->h;
  uint32_t ev = e->paused ? 0 : EPOLLIN;
  if (h->out >= 0) ep_set(h->out, &e->wout, ev, 0);
  if (h->err >= 0) ep_set(h->err, &e->werr, ev, 0);
}

static void exec_resume_output(struct exec *e) {
  if (!e->paused) return;
  e->paused = 0;
  if (e->h) pipes_interest(e);
}

static void kill_start(struct exec *e) {
  if (e->killing) return;
  e->killing = 1;
  e->kill_deadline = now_ms() + 10000;
  e->kill_next = 0; /* at once, in the loop */
}

/* One round of SIGKILL to every pid in the exec's cgroup; done when it is empty. */
static void kill_round(struct exec *e) {
  pid_t *pids = NULL;
  size_t n = cg_procs(e->name, &pids);
  for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
  free(pids);
  if (n == 0 || now_ms() > e->kill_deadline) {
    e->kill_done = 1;
    e->kill_next = 0;
    if (e->finished && !e->answered) exec_complete(e);
    return;
  }
  e->kill_next = now_ms() + 1;
}

static void exec_cancel(struct exec *e) {
  if (e->finished || e->exited) return;
  e->cancelled = 1;
  kill_start(e);
}

static void close_stdin(struct exec *e) {
  if (e->h) close_fd(&e->h->in, 1);
  e->stdin_q.len = e->stdin_off = 0;
}

static void exec_on_conn_gone(struct exec *e) {
  if (!e->exited) exec_cancel(e);
  exec_resume_output(e); /* output is now dropped */
}

static void stdin_flush(struct exec *e) {
  struct helper *h = e->h;
  if (!h || h->in < 0) return;
  while (e->stdin_q.len > e->stdin_off) {
    ssize_t n = write(h->in, e->stdin_q.p + e->stdin_off, e->stdin_q.len - e->stdin_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      close_stdin(e); /* the command closed its stdin */
      return;
    }
    e->stdin_off += (size_t)n;
  }
  if (e->stdin_q.len == e->stdin_off) {
    e->stdin_q.len = e->stdin_off = 0;
    if (e->stdin_eof) {
      close_stdin(e);
      return;
    }
    ep_set(h->in, &e->win, 0, 0);
  } else
    ep_set(h->in, &e->win, EPOLLOUT, 0);
  if (e->conn && !e->conn->dead) conn_update(e->conn);
}

static void spec_flush(struct exec *e) {
  struct helper *h = e->h;
  if (!h || h->spec < 0) return;
  while (e->spec_q.len > e->spec_off) {
    ssize_t n = write(h->spec, e->spec_q.p + e->spec_off, e->spec_q.len - e->spec_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      e->spec_off = e->spec_q.len;
      break;
    }
    e->spec_off += (size_t)n;
  }
  if (e->spec_off >= e->spec_q.len) {
    close_fd(&h->spec, 1);
    buf_free(&e->spec_q);
  } else
    ep_set(h->spec, &e->wspec, EPOLLOUT, 0);
}

static void opt_put(struct buf *b, const char *s, size_t len) {
  wtf8_to_utf8(b, s, len);
  buf_put(b, "", 1);
}

static void opt_puts(struct buf *b, const char *s) { opt_put(b, s, strlen(s)); }

static void exec_start(struct conn *c, struct spec *s) {
  struct buf err = {0};
  struct helper *h = take_prepared();
  if (!h) h = spawn_helper(&err);
  if (!h) {
    char m[1200];
    snprintf(m, sizeof m, "cannot start the command: %s", err.p ? err.p : "?");
    buf_free(&err);
    conn_fail(c, "spawn_failed", m);
    return;
  }
  if (cg_limit(h->name, s->has_mem, s->mem_mib, s->has_pids, s->pids, &err)) {
    close_fd(&h->spec, 0); /* the helper exits unused; the sweep removes its cgroup */
    close_fd(&h->in, 0);
    close_fd(&h->out, 0);
    close_fd(&h->err, 0);
    char m[1200];
    snprintf(m, sizeof m, "cannot set the command's limits: %s", err.p ? err.p : "?");
    buf_free(&err);
    conn_fail(c, "spawn_failed", m);
    return;
  }
  struct exec *e = xcalloc(1, sizeof *e);
  e->conn = c;
  c->exec = e;
  e->h = h;
  h->exec = e;
  snprintf(e->name, sizeof e->name, "%s", h->name);
  e->begun = now_ms();
  e->generation = s->generation;
  e->wout = (struct watch){W_OUT, e};
  e->werr = (struct watch){W_ERR, e};
  e->win = (struct watch){W_IN, e};
  e->wspec = (struct watch){W_SPEC, e};
  e->next = execs;
  if (execs) execs->prev = e;
  execs = e;
  active_count++;
  if (s->generation && !is_generation(e->name)) add_name(&generations, &ngenerations, &capgenerations, e->name);

  /* the helper's options: it has joined its cgroups and waits for them */
  char num[32];
  struct buf *o = &e->spec_q;
  opt_puts(o, "--uid"), snprintf(num, sizeof num, "%ld", s->uid), opt_puts(o, num);
  opt_puts(o, "--gid"), snprintf(num, sizeof num, "%ld", s->gid), opt_puts(o, num);
  opt_puts(o, "--cwd"), opt_put(o, s->cwd, s->cwdlen);
  opt_puts(o, "--seccomp"), opt_puts(o, cfg.seccomp);
  if (s->ngroups) {
    struct buf g = {0};
    for (size_t i = 0; i < s->ngroups; i++) buf_printf(&g, "%s%ld", i ? "," : "", s->groups[i]);
    opt_puts(o, "--groups"), opt_puts(o, g.p);
    buf_free(&g);
  }
  if (s->agent_dir) opt_puts(o, "--agent-dir"), opt_put(o, s->agent_dir, s->agent_dir_len);
  if (s->port_first > 0) {
    char ports[32];
    snprintf(ports, sizeof ports, "%ld-%ld", s->port_first, s->port_last);
    opt_puts(o, "--bind-ports"), opt_puts(o, ports);
  }
  if (s->has_files) {
    opt_puts(o, "--files"), opt_puts(o, "restrict");
    for (size_t i = 0; i < s->fs_read->count; i++)
      opt_puts(o, "--read"), opt_put(o, s->fs_read->items[i]->s, s->fs_read->items[i]->len);
    for (size_t i = 0; i < s->fs_write->count; i++)
      opt_puts(o, "--write"), opt_put(o, s->fs_write->items[i]->s, s->fs_write->items[i]->len);
  }
  for (size_t i = 0; i < s->nenv; i++) {
    opt_puts(o, "--env");
    wtf8_to_utf8(o, s->envk[i], s->envklen[i]);
    buf_put(o, "=", 1);
    opt_put(o, s->envv[i], s->envvlen[i]);
  }
  opt_puts(o, "--");
  for (size_t i = 0; i < s->argc; i++) opt_put(o, s->argv[i], s->argvlen[i]);

  ep_set(h->spec, &e->wspec, 0, 1);
  ep_set(h->in, &e->win, 0, 1);
  ep_set(h->out, &e->wout, EPOLLIN, 1);
  ep_set(h->err, &e->werr, EPOLLIN, 1);
  e->open_pipes = 2;
  spec_flush(e);
  want_prepare = 1;

  if (s->timeout_ms > 0) e->timeout_at = now_ms() + (double)s->timeout_ms;
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"started\",\"pid\":%d}", h->pid);
  conn_send_json(c, &j);
}

static void exec_pipe_closed(struct exec *e, int which) {
  struct helper *h = e->h;
  if (which == K_STDOUT) close_fd(&h->out, 1);
  else close_fd(&h->err, 1);
  e->open_pipes--;
  if (e->open_pipes == 0) exec_finish(e);
}

static void exec_read_pipe(struct exec *e, int which) {
  struct helper *h = e->h;
  int fd = which == K_STDOUT ? h->out : h->err;
  if (fd < 0) return;
  static char chunk[READ_CHUNK];
  for (int rounds = 0; rounds < 4 && !e->paused; rounds++) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      exec_pipe_closed(e, which);
      return;
    }
    if (n == 0) {
      exec_pipe_closed(e, which);
      return;
    }
    struct conn *c = e->conn;
    if (!c || c->dead) continue;
    conn_frame(c, which, chunk, (size_t)n);
    conn_flush(c);
    if (!c->dead && conn_pending(c) > HIGH_WATER && !e->paused) {
      e->paused = 1;
      pipes_interest(e);
    }
  }
}

/* What the command wrote before it ended is already in the pipe: take it all (bounded,
   since processes left in the background may still be writing) before the pipe goes,
   whether or not its readiness was seen yet and whatever the back-pressure. */
static void exec_drain(struct exec *e, int which) {
  struct helper *h = e->h;
  static char chunk[READ_CHUNK];
  for (size_t taken = 0; taken < DRAIN_LIMIT;) {
    int fd = which == K_STDOUT ? h->out : h->err;
    if (fd < 0) return;
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    taken += (size_t)n;
    struct conn *c = e->conn;
    if (c && !c->dead) conn_frame(c, which, chunk, (size_t)n);
  }
}

static void exec_finish(struct exec *e) {
  if (e->finished || !e->exited) return;
  e->finished = 1;
  e->timeout_at = 0;
  e->grace_at = 0;
  exec_drain(e, K_STDOUT);
  exec_drain(e, K_STDERR);
  if (e->conn && !e->conn->dead) conn_flush(e->conn);
  close_fd(&e->h->out, 1);
  close_fd(&e->h->err, 1);
  if (e->killing && !e->kill_done) return; /* exec_complete when the kill is done */
  exec_complete(e);
}

static void exec_complete(struct exec *e) {
  e->answered = 1;
  struct usage u;
  cg_usage(e->name, &u);
  active_count--;
  struct conn *c = e->conn;
  if (c && !c->dead) {
    struct buf j = {0};
    char cpu[40], peak[40];
    if (u.has_cpu) js_number(u.cpu, cpu);
    else strcpy(cpu, "null");
    if (u.has_peak) js_number(u.peak, peak);
    else strcpy(peak, "null");
    buf_puts(&j, "{\"type\":\"exit\",\"exitCode\":");
    const char *sname = e->sig ? signal_name(e->sig) : NULL;
    if (e->sig) buf_puts(&j, "null");
    else buf_printf(&j, "%d", e->code);
    buf_puts(&j, ",\"signal\":");
    if (sname) buf_printf(&j, "\"%s\"", sname);
    else buf_puts(&j, "null");
    buf_printf(&j, ",\"timedOut\":%s,\"cancelled\":%s,\"durationMs\":%lld,\"usage\":{\"cpuSeconds\":%s,\"peakMemoryBytes\":%s}}",
               e->timed_out ? "true" : "false", e->cancelled ? "true" : "false",
               (long long)(now_ms() - e->begun + 0.5), cpu, peak);
    conn_send_json(c, &j);
    conn_end(c);
  }
  /* after the answer: removing a cgroup may wait for the kernel's cgroup lock */
  add_name(&pending_removals, &npending, &cappending, e->name);
  /* the helper is done with: its remaining fds go */
  struct helper *h = e->h;
  helper_close(h);
  h->exec = NULL;
  if (h->exited) free(h);
  e->h = NULL;
  if (c) {
    c->exec = NULL;
    conn_maybe_free(c);
  }
  exec_unlink_free(e);
}

static void exec_frame(struct exec *e, int kind, const char *payload, size_t len) {
  switch (kind) {
    case K_STDIN:
      if (e->h && e->h->in >= 0 && !e->stdin_eof) {
        buf_put(&e->stdin_q, payload, len);
        stdin_flush(e);
      }
      return;
    case K_CONTROL: {
      struct jv *x = json_parse(payload, len);
      const struct jv *type = x && x->t == J_OBJ ? json_get(x, "type") : NULL;
      int ok = 0;
      if (type && type->t == J_STR) {
        if (type->len == 9 && !memcmp(type->s, "stdin_eof", 9)) {
          ok = 1;
          if (e->h && e->h->in >= 0 && !e->stdin_eof) {
            e->stdin_eof = 1;
            stdin_flush(e);
          }
        } else if (type->len == 6 && !memcmp(type->s, "cancel", 6)) {
          ok = 1;
          exec_cancel(e);
        } else if (type->len == 6 && !memcmp(type->s, "resize", 6)) {
          ok = is_int(json_get(x, "cols"), 1, 1000) && is_int(json_get(x, "rows"), 1, 1000);
        }
      }
      json_free(x);
      if (!ok) exec_cancel(e);
      return;
    }
    default:
      exec_cancel(e);
      return;
  }
}

/* ---- forward ---------------------------------------------------------------------- */

static void fwd_update(struct conn *c) {
  if (c->dead) return;
  uint32_t ev = 0;
  if (c->state == C_FORWARD_WAIT) ev = EPOLLOUT;
  else {
    if (!c->t_rd_eof && conn_pending(c) <= HIGH_WATER) ev |= EPOLLIN | EPOLLRDHUP;
    if (c->tout.len > c->tout_off) ev |= EPOLLOUT;
  }
  ep_set(c->target, &c->tw, ev, 0);
}

static void fwd_check_done(struct conn *c) {
  if (c->dead) return;
  if (c->wr_shut && c->t_wr_shut && c->rd_eof && c->t_rd_eof) conn_destroy(c);
}

static void fwd_flush_target(struct conn *c) {
  while (!c->dead && c->tout.len > c->tout_off) {
    ssize_t n = send(c->target, c->tout.p + c->tout_off, c->tout.len - c->tout_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return;
    }
    c->tout_off += (size_t)n;
  }
  if (c->dead) return;
  if (c->tout.len == c->tout_off) {
    c->tout.len = c->tout_off = 0;
    if (c->t_ending && !c->t_wr_shut) {
      shutdown(c->target, SHUT_WR);
      c->t_wr_shut = 1;
    }
  }
  fwd_update(c);
  conn_update(c);
  fwd_check_done(c);
}

static void fwd_start(struct conn *c, int port) {
  c->port = port;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  char m[256];
  if (fd < 0) {
    snprintf(m, sizeof m, "127.0.0.1:%d: socket: %s", port, strerror(errno));
    conn_fail(c, "forward_refused", m);
    return;
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->target = fd;
  c->tw = (struct watch){W_TARGET, c};
  c->state = C_FORWARD_WAIT;
  ep_set(fd, &c->tw, EPOLLOUT, 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
    int err = errno;
    close_fd(&c->target, 1);
    const char *code = errno_code(err);
    if (code) snprintf(m, sizeof m, "127.0.0.1:%d: connect %s 127.0.0.1:%d", port, code, port);
    else snprintf(m, sizeof m, "127.0.0.1:%d: connect %s", port, strerror(err));
    c->state = C_ENDED;
    conn_fail(c, "forward_refused", m);
    return;
  }
  conn_update(c);
}

static void fwd_connected(struct conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c->target, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    char m[256];
    const char *code = errno_code(err);
    if (code) snprintf(m, sizeof m, "127.0.0.1:%d: connect %s 127.0.0.1:%d", c->port, code, c->port);
    else snprintf(m, sizeof m, "127.0.0.1:%d: connect %s", c->port, strerror(err));
    close_fd(&c->target, 1);
    c->state = C_ENDED;
    conn_fail(c, "forward_refused", m);
    return;
  }
  c->state = C_FORWARD;
  struct buf j = {0};
  buf_puts(&j, "{\"type\":\"forwarded\"}");
  conn_send_json(c, &j);
  if (c->dead) return;
  if (c->in.len) {
    buf_put(&c->tout, c->in.p, c->in.len);
    c->in.len = 0;
  }
  fwd_flush_target(c);
}

static void fwd_read_target(struct conn *c) {
  static char chunk[READ_CHUNK];
  for (int rounds = 0; rounds < 4 && !c->dead && conn_pending(c) <= HIGH_WATER; rounds++) {
    ssize_t n = recv(c->target, chunk, sizeof chunk, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      conn_destroy(c);
      return;
    }
    if (n == 0) {
      c->t_rd_eof = 1;
      c->ending = 1; /* target.pipe(sock): sock.end() */
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

/* ---- connections: input ----------------------------------------------------------- */

static void conn_update(struct conn *c) {
  if (c->dead) return;
  uint32_t ev = 0;
  int want_in = !c->rd_eof;
  if (c->state == C_FORWARD_WAIT) want_in = 0;
  if (c->state == C_FORWARD && c->tout.len - c->tout_off > HIGH_WATER) want_in = 0;
  if (c->state == C_EXEC && c->exec && c->exec->stdin_q.len - c->exec->stdin_off > STDIN_HIGH_WATER) want_in = 0;
  if (want_in) ev |= EPOLLIN | EPOLLRDHUP;
  if (conn_pending(c) > 0) ev |= EPOLLOUT;
  ep_set(c->fd, &c->w, ev, 0);
  c->reading = want_in;
}

/* Takes one complete frame from c->in; 1 if one was taken, 0 if none yet, -1 on a bad one. */
static int take_frame(struct conn *c, int *kind, char **payload, size_t *len, struct buf *err) {
  if (c->in.len < 4) return 0;
  const unsigned char *p = (const unsigned char *)c->in.p;
  uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
  if (n < 1 || n > MAX_FRAME_BYTES) {
    buf_printf(err, "bad frame length %u", n);
    return -1;
  }
  if (c->in.len < 4 + (size_t)n) return 0;
  if (p[4] < K_CONTROL || p[4] > K_DATA) {
    buf_printf(err, "unknown frame kind %u", p[4]);
    return -1;
  }
  *kind = p[4];
  *payload = c->in.p + 5;
  *len = n - 1;
  return 1;
}

static void consume(struct conn *c, size_t n) {
  memmove(c->in.p, c->in.p + n, c->in.len - n);
  c->in.len -= n;
}

static void conn_open(struct conn *c, const char *payload, size_t len) {
  struct jv *x = json_parse(payload, len);
  struct perr e = {{0}, 0};
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
  if (!(v && v->t == J_NUM && v->n == PROTOCOL_VERSION)) {
    struct buf s = {0};
    if (js_string_of(&s, v)) {
      buf_free(&s);
      e.type_error = 1;
      buf_puts(&e.msg, "Cannot convert object to primitive value");
      goto fail;
    }
    buf_puts(&e.msg, "protocol version ");
    buf_put(&e.msg, s.p ? s.p : "", s.len);
    buf_printf(&e.msg, " is not %d", PROTOCOL_VERSION);
    buf_free(&s);
    goto fail;
  }
  const struct jv *op = json_get(x, "op");
  const char *ops = op && op->t == J_STR && strlen(op->s) == op->len ? op->s : "";
  if (!strcmp(ops, "ping")) {
    json_free(x);
    c->state = C_PING;
    do_ping(c);
    return;
  }
  if (!strcmp(ops, "exec")) {
    struct spec s;
    if (parse_exec_spec(json_get(x, "exec"), &s, &e)) {
      spec_free(&s);
      goto fail;
    }
    c->state = C_EXEC;
    /* frames after the open one: checked before the exec starts */
    int kind;
    char *p;
    size_t n;
    struct buf ferr = {0};
    /* validate the whole rest: every complete frame must decode */
    size_t off = 0;
    for (;;) {
      struct conn view = {0};
      view.in.p = c->in.p + off;
      view.in.len = c->in.len - off;
      int r = take_frame(&view, &kind, &p, &n, &ferr);
      if (r < 0) {
        spec_free(&s);
        json_free(x);
        conn_fail(c, "invalid", ferr.p);
        buf_free(&ferr);
        buf_free(&e.msg);
        return;
      }
      if (r == 0) break;
      off += 5 + n;
    }
    exec_start(c, &s);
    spec_free(&s);
    json_free(x);
    buf_free(&e.msg);
    if (!c->exec) return;
    /* now the pending frames */
    struct exec *ex = c->exec;
    while (!c->dead && c->exec == ex) {
      int r = take_frame(c, &kind, &p, &n, &ferr);
      if (r <= 0) break;
      exec_frame(ex, kind, p, n);
      if (c->exec == ex) consume(c, 5 + n);
    }
    buf_free(&ferr);
    if (!c->dead) conn_update(c);
    return;
  }
  if (!strcmp(ops, "forward")) {
    long port;
    if (v_int(json_get(x, "port"), "port", 1, 65535, &port, &e)) goto fail;
    json_free(x);
    fwd_start(c, (int)port);
    return;
  }
  if (!strcmp(ops, "pty") || !strcmp(ops, "egress") || !strcmp(ops, "call")) {
    buf_printf(&e.msg, "op %s is reserved and not implemented yet", ops);
    goto fail;
  }
  buf_puts(&e.msg, "unknown op ");
  if (json_put_value(&e.msg, op)) {
    e.msg.len = 0;
  }
fail:
  if (!e.type_error && e.msg.p && strstr(e.msg.p, "reserved")) code = "unsupported";
  json_free(x);
  c->state = C_ENDED;
  conn_fail(c, code, e.msg.p ? e.msg.p : "");
  buf_free(&e.msg);
}

static void conn_process_input(struct conn *c) {
  int kind;
  char *p;
  size_t n;
  struct buf err = {0};
  if (c->state == C_OPEN) {
    int r = take_frame(c, &kind, &p, &n, &err);
    if (r < 0) {
      c->state = C_ENDED;
      conn_fail(c, "invalid", err.p);
    } else if (r == 1) {
      if (kind != K_CONTROL) {
        c->state = C_ENDED;
        conn_fail(c, "invalid", "the first frame must be a control frame");
      } else {
        /* the open frame is copied: conn_open may consume c->in */
        char *copy = malloc(n + 1);
        if (copy) {
          memcpy(copy, p, n);
          consume(c, 5 + n);
          conn_open(c, copy, n);
          free(copy);
        } else
          conn_destroy(c);
      }
    }
  } else if (c->state == C_EXEC && c->exec) {
    struct exec *e = c->exec;
    while (!c->dead && c->exec == e && !e->input_bad) {
      int r = take_frame(c, &kind, &p, &n, &err);
      if (r < 0) {
        e->input_bad = 1;
        exec_cancel(e);
        break;
      }
      if (r == 0) break;
      exec_frame(e, kind, p, n);
      if (!c->dead && c->exec == e) consume(c, 5 + n);
    }
    if (!c->dead && c->exec == e && e->input_bad) c->in.len = 0;
  } else if (c->state == C_FORWARD) {
    buf_put(&c->tout, c->in.p, c->in.len);
    c->in.len = 0;
    fwd_flush_target(c);
  } else {
    c->in.len = 0; /* after the answer: discarded */
  }
  buf_free(&err);
}

static void conn_readable(struct conn *c) {
  static char chunk[READ_CHUNK];
  for (int rounds = 0; rounds < 4 && !c->dead && c->reading; rounds++) {
    ssize_t n = recv(c->fd, chunk, sizeof chunk, 0);
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
    if (c->state == C_OPEN || c->state == C_EXEC || c->state == C_FORWARD) {
      if (c->state == C_EXEC && (!c->exec || c->exec->input_bad)) continue;
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
  if (c->dead) return;
  if (c->rd_eof) {
    switch (c->state) {
      case C_EXEC:
        /* a client that goes away cancels its command; a queued answer is still sent */
        if (c->exec && !c->exec->exited) exec_cancel(c->exec);
        if (!c->exec && c->wr_shut) conn_destroy(c);
        else conn_update(c);
        return;
      case C_FORWARD:
        c->t_ending = 1; /* sock.pipe(target): target.end() */
        fwd_flush_target(c);
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
}

static void accept_all(void) {
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        logf_("accept: %s", strerror(errno));
        listen_paused_until = now_ms() + 50;
        ep_set(listen_fd, &listen_w, 0, 0);
      }
      return;
    }
    struct conn *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->target = -1;
    c->w = (struct watch){W_CONN, c};
    c->state = C_OPEN;
    c->next = conns;
    if (conns) conns->prev = c;
    conns = c;
    c->reading = 1;
    ep_set(fd, &c->w, EPOLLIN | EPOLLRDHUP, 1);
  }
}

/* ---- children --------------------------------------------------------------------- */

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    struct helper *h;
    for (h = helpers; h; h = h->next)
      if (h->pid == pid) break;
    if (!h) continue;
    unlink_helper(h);
    h->exited = 1;
    if (WIFSIGNALED(status)) h->code = -1, h->sig = WTERMSIG(status);
    else h->code = WEXITSTATUS(status), h->sig = 0;
    if (h == prepared) {
      /* a ready helper that died unused is dropped, and its cgroup with it */
      prepared = NULL;
      helper_close(h);
      cg_remove(h->name);
      free(h);
      continue;
    }
    struct exec *e = h->exec;
    if (!e) {
      /* a helper let go unused (limits failed), or taken by an exec that completed */
      helper_close(h);
      free(h);
      continue;
    }
    e->exited = 1, e->code = h->code, e->sig = h->sig;
    close_stdin(e);
    /* output still open after the command ended belongs to processes it left running in
       the background: the answer does not wait for them */
    if (e->open_pipes > 0) e->grace_at = now_ms() + 100;
    else exec_finish(e);
  }
}

/* ---- the loop --------------------------------------------------------------------- */

static void sweep(void) {
  char **names;
  size_t n = cg_names(&names);
  for (size_t i = 0; i < n; i++)
    if (!is_active(names[i]) && !(prepared && !strcmp(prepared->name, names[i]))) cg_remove(names[i]);
  free_names(names, n);
}

static void on_signal(int sfd) {
  struct signalfd_siginfo si;
  while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGTERM) exit(0);
  }
  reap();
}

static int listen_socket(void) {
  unlink(cfg.socket);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(cfg.socket) >= sizeof a.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a.sun_path, cfg.socket);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 511) != 0) return -1;
  chmod(cfg.socket, 0600);
  return fd;
}

int main(int argc, char **argv) {
  umask(022);
  parse_args(argc, argv);
  started_at = now_ms();
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (sfd < 0 || ep < 0) {
    logf_("signalfd/epoll: %s", strerror(errno));
    return 1;
  }
  if (cfg.ready_fd >= 0) fcntl(cfg.ready_fd, F_SETFD, FD_CLOEXEC);
  listen_fd = listen_socket();
  if (listen_fd < 0) {
    logf_("listen on %s: %s", cfg.socket, strerror(errno));
    return 1;
  }
  ep_set(sfd, &signal_w, EPOLLIN, 1);
  ep_set(listen_fd, &listen_w, EPOLLIN, 1);
  /* the first ready helper starts before boxd says it is ready: its cgroup migration
     then overlaps the server's ping and first command */
  prepare();
  if (cfg.ready_fd >= 0) {
    if (write(cfg.ready_fd, "ready\n", 6) != 6) logf_("ready fd: %s", strerror(errno));
    close(cfg.ready_fd);
  }
  logf_("listening on %s", cfg.socket);
  double next_sweep = now_ms() + 10000;

  struct epoll_event evs[64];
  for (;;) {
    double now = now_ms(), next = next_sweep;
    if (listen_paused_until > 0 && listen_paused_until < next) next = listen_paused_until;
    for (struct exec *e = execs; e; e = e->next) {
      if (e->timeout_at > 0 && e->timeout_at < next) next = e->timeout_at;
      if (e->grace_at > 0 && e->grace_at < next) next = e->grace_at;
      if (e->killing && !e->kill_done && e->kill_next < next) next = e->kill_next;
    }
    int wait = want_prepare || npending ? 0 : next <= now ? 0 : (int)(next - now + 0.999);
    int n = epoll_wait(ep, evs, 64, wait);
    if (n < 0 && errno != EINTR) {
      logf_("epoll_wait: %s", strerror(errno));
      return 1;
    }
    for (int i = 0; i < n; i++) {
      struct watch *w = evs[i].data.ptr;
      uint32_t ev = evs[i].events;
      switch (w->kind) {
        case W_LISTEN:
          accept_all();
          break;
        case W_SIGNAL:
          on_signal(sfd);
          break;
        case W_CONN: {
          struct conn *c = w->owner;
          if (c->dead) break;
          if (ev & EPOLLOUT) conn_flush(c);
          if (c->dead) break;
          if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            if (!c->reading && (ev & (EPOLLHUP | EPOLLERR))) {
              /* gone while we were not reading */
              conn_destroy(c);
              break;
            }
            conn_readable(c);
          }
          break;
        }
        case W_TARGET: {
          struct conn *c = w->owner;
          if (c->dead) break;
          if (c->state == C_FORWARD_WAIT) {
            fwd_connected(c);
            break;
          }
          if (ev & EPOLLOUT) fwd_flush_target(c);
          if (!c->dead && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
            if ((ev & EPOLLERR) && !(ev & EPOLLIN)) conn_destroy(c);
            else fwd_read_target(c);
          }
          break;
        }
        case W_OUT:
        case W_ERR: {
          struct exec *e = w->owner;
          if (!e->gone && e->h) exec_read_pipe(e, w->kind == W_OUT ? K_STDOUT : K_STDERR);
          break;
        }
        case W_IN:
          if (!((struct exec *)w->owner)->gone) stdin_flush(w->owner);
          break;
        case W_SPEC:
          if (!((struct exec *)w->owner)->gone) spec_flush(w->owner);
          break;
      }
    }
    /* timers */
    now = now_ms();
    for (struct exec *e = execs, *next_e; e; e = next_e) {
      next_e = e->next;
      if (e->killing && !e->kill_done && e->kill_next <= now) {
        kill_round(e); /* may complete (and free) e */
        continue;
      }
      if (e->timeout_at > 0 && e->timeout_at <= now) {
        e->timeout_at = 0;
        e->timed_out = 1;
        kill_start(e);
      }
      if (e->grace_at > 0 && e->grace_at <= now) {
        e->grace_at = 0;
        exec_finish(e);
      }
    }
    if (listen_paused_until > 0 && listen_paused_until <= now) {
      listen_paused_until = 0;
      ep_set(listen_fd, &listen_w, EPOLLIN, 0);
    }
    if (now >= next_sweep) {
      next_sweep = now + 10000;
      sweep();
    }
    if (want_prepare) {
      want_prepare = 0;
      prepare();
    }
    for (size_t i = 0; i < ngrave; i++) free(graveyard[i]);
    ngrave = 0;
    if (npending) {
      for (size_t i = 0; i < npending; i++) {
        cg_remove(pending_removals[i]);
        free(pending_removals[i]);
      }
      npending = 0;
    }
  }
}
