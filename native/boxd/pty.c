/* A terminal: see pty.h. */
#include "pty.h"
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "conn.h"
#include "spec.h"

#define KILL_LIMIT_MS 10000
#define KILL_ROUND_MS 1
#define GRACE_MS 100
/* What the terminal printed before its shell ended is taken up to this much. */
#define DRAIN_LIMIT (4 * 1024 * 1024)

/* ---- the list, and the end ---------------------------------------------------------- */

static void unlink_pty(struct pty *p) {
  struct boxd *bd = p->bd;
  if (p->prev) p->prev->next = p->next;
  else if (bd->ptys == p) bd->ptys = p->next;
  if (p->next) p->next->prev = p->prev;
  p->next = p->prev = NULL;
}

/* What the terminal still holds (bounded): background jobs may still be writing. */
static void drain(struct pty *p) {
  char *chunk = p->bd->chunk;
  for (size_t taken = 0; p->master >= 0 && !p->eof && taken < DRAIN_LIMIT;) {
    ssize_t n = read(p->master, chunk, READ_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    taken += (size_t)n;
    if (p->conn && !p->conn->dead) conn_frame(p->conn, K_DATA, chunk, (size_t)n);
  }
}

/* The exit answer (exec's shape); the terminal is then freed at the end of the loop's
   iteration. */
static void answer(struct pty *p) {
  struct boxd *bd = p->bd;
  drain(p);
  close_fd(bd, &p->master, 1);
  close_fd(bd, &p->spec, 1);
  p->timer_at = 0;
  struct usage u;
  cg_usage(&bd->cfg, p->name, &u);
  unlink_pty(p);
  struct conn *c = p->conn;
  p->conn = NULL;
  if (c) c->pty = NULL;
  if (c && !c->dead) {
    struct buf j = {0};
    const char *sname = p->sig ? signal_name(p->sig) : NULL;
    buf_puts(&j, "{\"type\":\"exit\",\"exitCode\":");
    if (p->sig) buf_puts(&j, "null");
    else buf_printf(&j, "%d", p->code);
    buf_puts(&j, ",\"signal\":");
    if (sname) json_put_string(&j, sname, strlen(sname));
    else buf_puts(&j, "null");
    buf_printf(&j, ",\"timedOut\":false,\"cancelled\":%s,\"durationMs\":%lld,\"usage\":{\"cpuSeconds\":",
               p->cancelled ? "true" : "false", (long long)(now_ms() - p->begun + 0.5));
    if (u.has_cpu) json_put_decimal(&j, u.cpu_ns, 9);
    else buf_puts(&j, "null");
    buf_puts(&j, ",\"peakMemoryBytes\":");
    if (u.has_peak) json_put_decimal(&j, u.peak_bytes, 0);
    else buf_puts(&j, "null");
    buf_puts(&j, "}}");
    conn_send_json(c, &j);
    conn_end(c);
  }
  if (c) conn_maybe_free(c);
  names_add(&bd->removals, p->name);
  buf_free(&p->in_q);
  buf_free(&p->spec_q);
  bury(bd, p);
}

/* The answer is due once the shell is reaped, no kill is going on, and its output is read
   (no process holds the terminal) or the grace is over (or it was cancelled). */
static void maybe_answer(struct pty *p) {
  if (!p->exited || p->killing) return;
  if (p->eof || p->cancelled) answer(p);
  else if (p->timer_at == 0) p->timer_at = now_ms() + GRACE_MS;
}

void pty_cancel(struct pty *p) {
  if (p->killing || p->cancelled) return;
  p->cancelled = 1;
  p->killing = 1;
  p->kill_deadline = now_ms() + KILL_LIMIT_MS;
  p->timer_at = now_ms(); /* the first round at once, in the loop */
}

static void kill_round(struct pty *p) {
  const struct config *cfg = &p->bd->cfg;
  /* no fork replaces what is killed, and the tree stands still while it is signalled */
  cg_no_forks(cfg, p->name);
  int frozen = cg_freeze(cfg, p->name, 1);
  pid_t *pids = NULL;
  size_t n = cg_procs(cfg, p->name, &pids);
  for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
  free(pids);
  if (frozen) cg_freeze(cfg, p->name, 0);
  if (n == 0 && !p->exited && p->pid > 0) kill(p->pid, SIGKILL); /* not in its cgroup yet */
  if ((n == 0 && p->exited) || now_ms() > p->kill_deadline) {
    p->killing = 0;
    p->timer_at = 0;
    maybe_answer(p);
  } else
    p->timer_at = now_ms() + KILL_ROUND_MS;
}

void pty_reaped(struct boxd *bd, pid_t pid, int status) {
  for (struct pty *p = bd->ptys; p; p = p->next) {
    if (p->pid != pid || p->exited) continue;
    p->exited = 1;
    if (WIFSIGNALED(status)) p->code = -1, p->sig = WTERMSIG(status);
    else p->code = WEXITSTATUS(status), p->sig = 0;
    maybe_answer(p);
    return;
  }
}

int pty_is_active(const struct boxd *bd, const char *name) {
  for (const struct pty *p = bd->ptys; p; p = p->next)
    if (!strcmp(p->name, name)) return 1;
  return 0;
}

double pty_next_timer(const struct boxd *bd, double next) {
  for (const struct pty *p = bd->ptys; p; p = p->next)
    if (p->timer_at > 0 && p->timer_at < next) next = p->timer_at;
  return next;
}

void pty_run_timers(struct boxd *bd, double now) {
  for (struct pty *p = bd->ptys, *next; p; p = next) {
    next = p->next; /* p may be answered (and unlinked) below */
    if (p->timer_at <= 0 || p->timer_at > now) continue;
    if (p->killing) kill_round(p);
    else if (p->exited) answer(p);
    else p->timer_at = 0;
  }
}

/* ---- the master side ---------------------------------------------------------------- */

static void master_interest(struct pty *p) {
  if (p->master < 0) return;
  uint32_t ev = 0;
  if (!p->paused && !p->eof) ev |= EPOLLIN;
  if (p->in_q.len > p->in_off && !p->eof) ev |= EPOLLOUT;
  ep_set(p->bd, p->master, &p->wmaster, ev, 0);
}

size_t pty_input_queued(const struct pty *p) { return p->in_q.len - p->in_off; }

void pty_resume_output(struct pty *p) {
  if (!p->paused) return;
  p->paused = 0;
  master_interest(p);
}

static void input_flush(struct pty *p) {
  while (p->master >= 0 && !p->eof && p->in_q.len > p->in_off) {
    ssize_t n = write(p->master, p->in_q.p + p->in_off, p->in_q.len - p->in_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      p->in_off = p->in_q.len; /* no process holds the terminal: input goes nowhere */
      break;
    }
    p->in_off += (size_t)n;
  }
  if (p->in_off >= p->in_q.len) p->in_q.len = p->in_off = 0;
  master_interest(p);
  if (p->conn && !p->conn->dead) conn_update(p->conn);
}

static void read_master(struct pty *p) {
  char *chunk = p->bd->chunk;
  for (int rounds = 0; rounds < 4 && !p->paused && p->master >= 0 && !p->eof; rounds++) {
    ssize_t n = read(p->master, chunk, READ_CHUNK);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      /* EIO: every process let go of the terminal */
      p->eof = 1;
      master_interest(p);
      maybe_answer(p);
      return;
    }
    if (n == 0) {
      p->eof = 1;
      master_interest(p);
      maybe_answer(p);
      return;
    }
    struct conn *c = p->conn;
    if (!c || c->dead) continue; /* the client is gone: output is dropped */
    conn_frame(c, K_DATA, chunk, (size_t)n);
    conn_flush(c);
    if (!c->dead && conn_pending(c) > HIGH_WATER && !p->paused) {
      p->paused = 1;
      master_interest(p);
    }
  }
}

static void spec_flush(struct pty *p) {
  while (p->spec >= 0 && p->spec_q.len > p->spec_off) {
    ssize_t n = write(p->spec, p->spec_q.p + p->spec_off, p->spec_q.len - p->spec_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      p->spec_off = p->spec_q.len; /* the helper is gone: its exit says so */
      break;
    }
    p->spec_off += (size_t)n;
  }
  if (p->spec < 0) return;
  if (p->spec_off >= p->spec_q.len) {
    close_fd(p->bd, &p->spec, 1);
    buf_free(&p->spec_q);
  } else
    ep_set(p->bd, p->spec, &p->wspec, EPOLLOUT, 0);
}

void pty_on_watch(struct pty *p, enum wkind kind, uint32_t events) {
  if (kind == W_PTY_SPEC) {
    spec_flush(p);
    return;
  }
  if (p->master < 0) return;
  if (events & EPOLLOUT) input_flush(p);
  if (p->master >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) read_master(p);
}

void pty_conn_gone(struct pty *p) {
  p->conn = NULL;
  pty_cancel(p);
  pty_resume_output(p); /* output is now dropped */
}

/* ---- frames from the client ---------------------------------------------------------- */

static const struct {
  const char *name;
  int sig;
} signals[] = {
    {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGTERM", SIGTERM}, {"SIGHUP", SIGHUP},   {"SIGKILL", SIGKILL},
    {"SIGTSTP", SIGTSTP}, {"SIGCONT", SIGCONT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGWINCH", SIGWINCH},
};

static int set_size(int fd, long cols, long rows) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  return ioctl(fd, TIOCSWINSZ, &ws);
}

/* A signal to the terminal's foreground process group (the shell's own when it has none). */
static int send_signal(struct pty *p, const struct jv *name) {
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    if (!json_is_str(name, signals[i].name)) continue;
    if (p->exited || p->master < 0) return 1;
    pid_t group = tcgetpgrp(p->master);
    if (group > 0) kill(-group, signals[i].sig);
    else kill(p->pid, signals[i].sig);
    return 1;
  }
  return 0;
}

void pty_frame(struct pty *p, int kind, const char *payload, size_t len) {
  switch (kind) {
    case K_DATA:
      if (p->master >= 0 && !p->eof && !p->cancelled) {
        buf_put(&p->in_q, payload, len);
        input_flush(p);
      }
      return;
    case K_CONTROL: {
      struct jv *x = json_parse(payload, len);
      const struct jv *type = json_get(x, "type");
      int ok = 0;
      if (json_is_str(type, "resize")) {
        const struct jv *cols = json_get(x, "cols"), *rows = json_get(x, "rows");
        ok = spec_is_int(cols, 1, 1000) && spec_is_int(rows, 1, 1000);
        if (ok && p->master >= 0) set_size(p->master, (long)cols->n, (long)rows->n);
      } else if (json_is_str(type, "signal")) {
        ok = send_signal(p, json_get(x, "signal"));
      } else if (json_is_str(type, "cancel")) {
        ok = 1;
        pty_cancel(p);
      }
      json_free(x);
      if (!ok) pty_cancel(p);
      return;
    }
    default:
      pty_cancel(p);
      return;
  }
}

/* ---- the start ----------------------------------------------------------------------- */

static void pty_name(struct boxd *bd, char *out, size_t cap) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long ms = (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000ULL;
  snprintf(out, cap, "x%lu-t%llx", ++bd->counter, ms);
}

/* Forks the child that becomes the shell: a session of its own with the terminal as its
   controlling terminal and fds 0-2, the options' pipe on fd 3, then boxd-spawn. */
static pid_t spawn(struct boxd *bd, const char *name, int slave, int spec_rd, struct buf *err) {
  const struct config *cfg = &bd->cfg;
  char dirs[MAX_CGROUPS][4096];
  for (int r = 0; r < cfg->nroots; r++) cg_path(cfg, r, name, NULL, dirs[r], sizeof dirs[r]);
  const char *argv[2 * MAX_CGROUPS + 4];
  int n = 0;
  argv[n++] = "boxd-spawn";
  for (int r = 0; r < cfg->nroots; r++) argv[n++] = "--cgroup", argv[n++] = dirs[r];
  argv[n++] = "--spec-fd";
  argv[n++] = "3";
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    buf_printf(err, "fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) _exit(126);
    int src[4] = {slave, slave, slave, spec_rd};
    for (int i = 0; i < 4; i++) src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
    for (int i = 0; i < 4; i++)
      if (src[i] < 0 || dup2(src[i], i) < 0) _exit(126);
    helper_become(4, n, argv);
  }
  return pid;
}

static void failf(struct conn *c, const char *code, const char *what, const char *why) {
  char m[1200];
  snprintf(m, sizeof m, "cannot start the terminal: %s: %s", what, why);
  conn_fail(c, code, m);
}

void pty_open(struct conn *c, const struct jv *x) {
  struct boxd *bd = c->bd;
  struct spec s;
  struct perr e = {{0}};
  const struct jv *o = json_get(x, "pty");
  long cols = 0, rows = 0;
  int bad = 0;
  if (!o || o->t != J_OBJ) {
    buf_puts(&e.msg, "pty must be an object");
    bad = 1;
  } else
    bad = spec_parse(o, &s, &e);
  if (!bad && (json_get(o, "timeoutMs") || json_get(o, "agentDir") || json_get(o, "generation") ||
               json_get(o, "trace"))) {
    buf_puts(&e.msg, "a terminal takes no timeoutMs, agentDir or generation");
    bad = 1;
  }
  if (!bad) bad = spec_int(json_get(o, "cols"), "pty.cols", 1, 1000, &cols, &e) ||
                  spec_int(json_get(o, "rows"), "pty.rows", 1, 1000, &rows, &e);
  if (bad) {
    conn_fail(c, "invalid", e.msg.p ? e.msg.p : "");
    buf_free(&e.msg);
    return;
  }
  struct buf options = {0}, err = {0};
  if (spec_options(&s, bd->cfg.seccomp, &options)) {
    buf_free(&options);
    conn_fail(c, "internal", "out of memory");
    return;
  }
  char name[64];
  pty_name(bd, name, sizeof name);
  int master = -1, slave = -1, spec_pipe[2] = {-1, -1};
  if (cg_create(&bd->cfg, name, &err)) {
    failf(c, "spawn_failed", "cgroup", err.p ? err.p : "?");
    goto out;
  }
  if (cg_limit(&bd->cfg, name, s.has_mem, s.mem_mib, s.has_pids, s.pids, &err)) {
    failf(c, "spawn_failed", "limits", err.p ? err.p : "?");
    cg_remove(&bd->cfg, name);
    goto out;
  }
  master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char path[128];
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, path, sizeof path) != 0 ||
      (slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 || set_size(master, cols, rows) != 0 ||
      pipe2(spec_pipe, O_CLOEXEC) != 0) {
    failf(c, "spawn_failed", "the pseudo-terminal", strerror(errno));
    cg_remove(&bd->cfg, name);
    goto out;
  }
  pid_t pid = spawn(bd, name, slave, spec_pipe[0], &err);
  if (pid < 0) {
    failf(c, "spawn_failed", "the shell", err.p ? err.p : "?");
    cg_remove(&bd->cfg, name);
    goto out;
  }
  close(slave), slave = -1;
  close(spec_pipe[0]), spec_pipe[0] = -1;
  set_nonblock(master), set_nonblock(spec_pipe[1]);

  struct pty *p = xcalloc(1, sizeof *p);
  p->bd = bd;
  p->conn = c;
  c->pty = p;
  snprintf(p->name, sizeof p->name, "%s", name);
  p->pid = pid;
  p->master = master, master = -1;
  p->spec = spec_pipe[1], spec_pipe[1] = -1;
  p->wmaster = (struct watch){W_PTY, p};
  p->wspec = (struct watch){W_PTY_SPEC, p};
  p->spec_q = options, options = (struct buf){0};
  p->begun = now_ms();
  p->next = bd->ptys;
  if (bd->ptys) bd->ptys->prev = p;
  bd->ptys = p;
  ep_set(bd, p->master, &p->wmaster, EPOLLIN, 1);
  ep_set(bd, p->spec, &p->wspec, 0, 1);
  spec_flush(p);
  c->state = C_PTY;
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"started\",\"pid\":%d,\"cgroup\":\"%s\"}", pid, p->name);
  conn_send_json(c, &j);
out:
  if (master >= 0) close(master);
  if (slave >= 0) close(slave);
  if (spec_pipe[0] >= 0) close(spec_pipe[0]);
  if (spec_pipe[1] >= 0) close(spec_pipe[1]);
  buf_free(&options);
  buf_free(&err);
  buf_free(&e.msg);
}
